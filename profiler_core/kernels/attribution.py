"""Phase attribution of GPU kernels from an nsys sqlite export.

PyTorch launches backward kernels from its autograd worker thread, not from the
thread that pushed the `backward` NVTX range, so matching kernels to ranges on the
same thread (what nsys's nvtx_kern_sum does) gives backward almost nothing.
Instead each kernel is joined to the CUDA API call that launched it
(correlationId, same process, any thread) and takes the label of the *main
thread's* range that contains that call's start time.  The main thread is the one
that pushed the `step N` ranges.

Interval lookup is a sorted `searchsorted` (intervals.py), so a million kernels
cost well under a second.  Ranges of one kind (phases, steps, attention parts)
are assumed not to nest within each other, which holds for the runner's ranges.
Module ranges (--nvtx-modules) are looked up on the launching thread instead
(module_attribution.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sysprof.models.phases import ATTENTION_PARTS, ATTENTION_RANGE, ATTRIBUTED_PHASES, OTHER, PHASE_OF_RANGE, STEP_RANGE
from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels.classify import classify_kernel
from sysprof.profiler_core.kernels.intervals import NO_RANGE, containing_range
from sysprof.profiler_core.kernels.module_attribution import label_modules
from sysprof.profiler_core.kernels.nsys.sqlite_tables import (
    load_kernels,
    load_launch_calls,
    load_nvtx_ranges,
    load_strings,
    load_thread_names,
    open_nsys_sqlite,
)
from sysprof.profiler_core.kernels.phase_names import drop_unbalanced, rename_phase_ranges


@dataclass(frozen=True)
class KernelAttribution:
    """Every kernel with its launch call and labels, plus what was learned on the way.

    `kernels` columns: start, end, duration, name_id, short_id, correlation_id,
    api_start and api_end (-1 if no launch call found), launch_api (the call's
    name, "" if unknown), launch_tid, class, phase, step (-1 if none),
    in_attention (bool), attention_part ("" if none), module ("" if none),
    module_category, sub_range ("" if none).
    `main_ranges`: the main thread's ranges with columns start, end, name.
    `module_ranges`: how many module ranges the profile held (0: run without --nvtx-modules).
    """

    kernels: pd.DataFrame
    main_ranges: pd.DataFrame
    names: pd.Series
    short_names: pd.Series
    thread_names: dict[int, str] = field(default_factory=dict)
    main_tid: int | None = None
    notes: list[str] = field(default_factory=list)
    module_ranges: int = 0


def attribute_kernels(sqlite_path: str | Path, phase_names: Mapping[str, str] | None = None) -> KernelAttribution:
    """Label every kernel of an nsys sqlite export with phase, step and attention part.
    phase_names: the range name of each phase, where the profile's are not ones phase_names.py knows."""
    conn = open_nsys_sqlite(sqlite_path)
    try:
        kernels = _kernels_with_launch_calls(conn)
        ranges = load_nvtx_ranges(conn)
        ids = np.union1d(kernels["name_id"].unique(), kernels["short_id"].unique())
        strings = load_strings(conn, np.union1d(ids, kernels["api_name_id"].unique()))
        thread_names = load_thread_names(conn)
    except sqlite3.DatabaseError as error:  # truncated copy, disk image malformed, ...
        raise KernelReportError(f"{sqlite_path}: unreadable nsys sqlite ({error})") from None
    finally:
        conn.close()
    notes = _launch_notes(kernels)
    ranges["own_name"] = ranges["name"]  # the profile's own names, for notes that point into it
    ranges["name"], naming_notes = rename_phase_ranges(ranges["name"], phase_names)
    ranges, unbalanced_notes = drop_unbalanced(ranges, kernels)
    notes += naming_notes + unbalanced_notes
    main_tid = find_main_thread(ranges)
    main_ranges = ranges[ranges["global_tid"] == main_tid] if main_tid is not None else ranges.iloc[:0]
    notes += [note for note in _range_notes(ranges, main_tid) if not naming_notes or "found" not in note]
    names = strings.reindex(kernels["name_id"].unique()).fillna("<unknown kernel>")
    short_names = strings.reindex(kernels["short_id"].unique()).fillna("<unknown kernel>")
    kernels["class"] = _classes(kernels["name_id"], names)
    kernels["launch_api"] = _launch_api_names(kernels.pop("api_name_id"), strings)
    _label_kernels(kernels, main_ranges)
    module_ranges = label_modules(kernels, ranges)
    return KernelAttribution(kernels, main_ranges.reset_index(drop=True), names, short_names,
                             thread_names, main_tid, notes, module_ranges)


def find_main_thread(ranges: pd.DataFrame) -> int | None:
    """The thread that pushed the `step N` ranges (else the most phase ranges)."""
    for wanted in (ranges["name"].str.match(STEP_RANGE), ranges["name"].isin(PHASE_OF_RANGE)):
        if wanted.any():
            return int(ranges.loc[wanted, "global_tid"].mode().iloc[0])
    return None


def _kernels_with_launch_calls(conn) -> pd.DataFrame:
    kernels = load_kernels(conn)
    calls = load_launch_calls(conn).drop_duplicates(["global_pid", "correlation_id"])
    kernels = kernels.merge(calls, on=["global_pid", "correlation_id"], how="left", sort=False)
    for column in ("api_start", "api_end", "api_name_id"):
        kernels[column] = kernels[column].fillna(NO_RANGE).astype(np.int64)
    kernels["launch_tid"] = kernels["global_tid"].fillna(NO_RANGE).astype(np.int64)
    kernels["duration"] = kernels["end"] - kernels["start"]
    return kernels.drop(columns=["global_tid"])


def _label_kernels(kernels: pd.DataFrame, main_ranges: pd.DataFrame) -> None:
    times = kernels["api_start"].to_numpy()
    phase_ranges = main_ranges[main_ranges["name"].isin(PHASE_OF_RANGE)]
    phases = _labels(times, phase_ranges, phase_ranges["name"].map(PHASE_OF_RANGE), OTHER)
    kernels["phase"] = pd.Categorical(phases, categories=ATTRIBUTED_PHASES)
    step_ranges = main_ranges[main_ranges["name"].str.match(STEP_RANGE)]
    step_numbers = step_ranges["name"].str.extract(STEP_RANGE)[0].astype(int)
    kernels["step"] = _labels(times, step_ranges, step_numbers, NO_RANGE).astype(np.int64)
    outer = main_ranges[main_ranges["name"] == ATTENTION_RANGE]
    kernels["in_attention"] = _labels(times, outer, pd.Series(True, index=outer.index), False).astype(bool)
    parts = main_ranges[main_ranges["name"].isin(ATTENTION_PARTS)]
    kernels["attention_part"] = pd.Categorical(_labels(times, parts, parts["name"], ""),
                                               categories=("",) + ATTENTION_PARTS)


def _labels(times: np.ndarray, ranges: pd.DataFrame, labels: pd.Series, default) -> np.ndarray:
    index = containing_range(times, ranges["start"].to_numpy(), ranges["end"].to_numpy())
    # Kernels with no launch call carry api_start = -1, before every range.
    choices = np.append(labels.to_numpy(dtype=object), default)
    return choices[np.where(index == NO_RANGE, len(labels), index)]


def _launch_api_names(api_name_ids: pd.Series, strings: pd.Series) -> pd.Categorical:
    """The launching call's name per kernel (cudaLaunchKernel_v7000, cuLaunchKernel, ...), "" where unknown."""
    codes, unique_ids = pd.factorize(api_name_ids)
    names = strings.reindex(unique_ids).fillna("").to_numpy(dtype=object)
    return pd.Categorical(names[codes]) if len(codes) else pd.Categorical([])


def _classes(name_ids: pd.Series, names: pd.Series) -> pd.Categorical:
    codes, unique_ids = pd.factorize(name_ids)
    class_of_unique = np.array([classify_kernel(names[i]) for i in unique_ids], dtype=object)
    return pd.Categorical(class_of_unique[codes]) if len(codes) else pd.Categorical([])


def _launch_notes(kernels: pd.DataFrame) -> list[str]:
    unmatched = kernels["api_start"] == NO_RANGE
    if not unmatched.any():
        return []
    lost_ms = kernels.loc[unmatched, "duration"].sum() / 1e6
    return [f"{int(unmatched.sum())} kernels ({lost_ms:.3f} ms) have no matching CUDA API call "
            "(CUDA graph or capture edge); counted as 'other'"]


def _range_notes(ranges: pd.DataFrame, main_tid: int | None) -> list[str]:
    if ranges.empty:
        return ["no NVTX ranges in this export: every kernel is attributed to 'other'"]
    if main_tid is None:
        return ["no 'step N' or phase NVTX ranges found: every kernel is attributed to 'other'"]
    if not ranges["name"].str.match(STEP_RANGE).any():
        return ["no 'step N' ranges: main thread taken as the thread with the most phase ranges"]
    return []
