"""Phase attribution from a torch.profiler Chrome trace: the fallback when nsys is not installed.

Same rule as for nsys: a kernel belongs to the main-thread range that contains the start of the CUDA API
call that launched it, joined on the trace's `correlation` id from any thread. The runner turns its NVTX
ranges into record_function ranges (`user_annotation` events) while torch.profiler records.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels.attribution import KernelAttribution, _classes, _label_kernels, find_main_thread
from sysprof.profiler_core.kernels.intervals import NO_RANGE
from sysprof.profiler_core.kernels.module_attribution import label_modules

LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
US_TO_NS = 1000


def load_trace_events(path: str | Path) -> list[dict]:
    try:
        with open(path, "rb") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        raise KernelReportError(f"{path}: not a readable torch.profiler trace ({error})") from None
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        raise KernelReportError(f"{path}: no traceEvents list (not a Chrome trace)")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


def _frame(events: list[dict], categories: tuple[str, ...]) -> pd.DataFrame:
    rows = [(e.get("name", ""), e.get("ts", 0.0), e.get("dur", 0.0), e.get("tid"),
             (e.get("args") or {}).get("correlation"))
            for e in events if e.get("cat") in categories]
    frame = pd.DataFrame(rows, columns=["name", "ts", "dur", "tid", "correlation_id"])
    frame["start"] = (frame["ts"].astype(float) * US_TO_NS).round().astype(np.int64)
    frame["end"] = frame["start"] + (frame["dur"].astype(float) * US_TO_NS).round().astype(np.int64)
    return frame


def _kernels(events: list[dict]) -> tuple[pd.DataFrame, pd.Series]:
    kernels = _frame(events, ("kernel",))
    launches = _frame(events, LAUNCH_CATEGORIES).dropna(subset=["correlation_id"])
    launches = launches.drop_duplicates("correlation_id")[["correlation_id", "start", "end", "tid", "name"]]
    launches = launches.rename(columns={"start": "api_start", "end": "api_end", "tid": "launch_tid",
                                        "name": "launch_api"})
    kernels = kernels.merge(launches, on="correlation_id", how="left", sort=False)
    for column in ("api_start", "api_end"):
        kernels[column] = kernels[column].fillna(NO_RANGE).astype(np.int64)
    kernels["launch_api"] = pd.Categorical(kernels["launch_api"].fillna("").astype(str))
    kernels["launch_tid"] = pd.to_numeric(kernels["launch_tid"], errors="coerce").fillna(NO_RANGE).astype(np.int64)
    kernels["duration"] = kernels["end"] - kernels["start"]
    codes, unique_names = pd.factorize(kernels["name"])
    kernels["name_id"] = kernels["short_id"] = codes
    names = pd.Series(list(unique_names), index=range(len(unique_names)), dtype=object)
    return kernels.drop(columns=["name", "ts", "dur", "tid"]), names


def _ranges(events: list[dict]) -> pd.DataFrame:
    ranges = _frame(events, ("user_annotation",))
    ranges["global_tid"] = pd.to_numeric(ranges["tid"], errors="coerce").fillna(NO_RANGE).astype(np.int64)
    return ranges[["start", "end", "name", "global_tid"]]


def attribute_torch_trace(path: str | Path) -> KernelAttribution:
    events = load_trace_events(path)
    kernels, names = _kernels(events)
    if kernels.empty:
        raise KernelReportError(f"{path}: the trace has no GPU kernels (was CUDA activity recorded?)")
    ranges = _ranges(events)
    main_tid = find_main_thread(ranges)
    main_ranges = ranges[ranges["global_tid"] == main_tid] if main_tid is not None else ranges.iloc[:0]
    kernels["class"] = _classes(kernels["name_id"], names)
    _label_kernels(kernels, main_ranges)
    module_ranges = label_modules(kernels, ranges)
    notes = [] if main_tid is not None else ["no 'step N' ranges in the trace: every kernel is 'other'"]
    return KernelAttribution(kernels, main_ranges.reset_index(drop=True), names, names, {}, main_tid, notes,
                             module_ranges)
