"""Run, pass and study directories: every file and folder name they hold, one maker of timestamped
directories, and JSON(L) readers and writers that never leave half a file (on a full disk they fall back on the
reserve disk_space.py keeps). Readable without torch or a GPU.

    runs/<timestamp>-<slug>/manifest.json        config, environment, the command that reproduces the run
                            steps.jsonl          one line per step, appended and flushed as it finishes
                            summary.json         status and statistics, written last
                            stderr.log           the runner's stderr
                            telemetry.jsonl      NVML samples (SM clock, throttling) during the measured steps
                            profiled/            the profiled pass (a run directory of its own): profile.nsys-rep,
                                                 profile.sqlite, stats/*.csv or torch_trace.json, and with
                                                 --nvtx-modules modules.json (module path → class, category)
                            kernels/             analysis.json, phase_kernels.csv, attention_kernels.csv
                                                 (naive attention)
                            memory/              the memory pass: memory_snapshot.pickle, analysis.json
                                                 (and modules.json with --nvtx-modules)
                            exports/             tables the app exported
                            repeats/NN/          with --repeats N: processes 2..N, each a run directory (clean
                                                 pass); summary.json then holds statistics over all N
    runs/<timestamp>-sweep-<name>/sweep.json     a sweep's or study's plan; cells/<NNN>-<slug>/ one run each
    runs/<timestamp>-attention/study.json        the attention study's plan; cells.jsonl one result per cell
"""
from __future__ import annotations

import errno
import json
import os
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from sysprof.profiler_core.base import shapes
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.disk_space import is_disk_full, release_space
from sysprof.profiler_core.base.errors import RunDirError
from sysprof.profiler_core.base.events import SCHEMA_VERSION
from sysprof.profiler_core.base.records import RunSummary, StepRecord
from sysprof.profiler_core.base.shapes import shape_problem

MANIFEST, STEPS, SUMMARY, STDERR = "manifest.json", "steps.jsonl", "summary.json", "stderr.log"
# Passes after the clean one run in sub-directories, each a run directory of its own.
PROFILED_DIR, MEMORY_DIR, KERNELS_DIR, EXPORTS_DIR = "profiled", "memory", "kernels", "exports"
TORCH_TRACE, MEMORY_SNAPSHOT = "torch_trace.json", "memory_snapshot.pickle"
ANALYSIS, PHASE_KERNELS, ATTENTION_KERNELS = "analysis.json", "phase_kernels.csv", "attention_kernels.csv"
REPEATS_DIR = "repeats"  # processes 2..N of a run with --repeats N (session/repeats)
FIRST_PROCESS_SUMMARY = "first_process_summary.json"  # the first's own, once the group's took summary.json
EVENTS = "events.jsonl"  # a rank other than 0 (--nproc): its events, which rank 0's stdout does not carry
RANKS_DIR = "ranks"  # a run's other ranks, one folder each (rank_dir)
SESSION_EVENTS = "session_events.jsonl"  # every event the run's or study's driver emitted (session/live)
APP_RECORD = "app.json"  # a run the app started: that it did, and the app's CPU while the steps were measured
LIVE = "live.json"  # pid and heartbeat of the process running in this directory, while it runs (session/live)
TELEMETRY = "telemetry.jsonl"  # NVML samples the session took during the clean pass's measured steps
MODULES = "modules.json"  # the hooked modules of a pass run with --nvtx-modules: path → class, category, parameters
# What nsys leaves in the profiled pass's directory.
NSYS_OUTPUT = "profile"  # nsys -o and nsys stats -o base name
NSYS_REPORT, NSYS_SQLITE, NSYS_STATS_DIR = "profile.nsys-rep", "profile.sqlite", "stats"
NSYS_EXPORT_LOG, NSYS_STATS_LOG, QDSTRM_IMPORT_LOG = "nsys_export.log", "nsys_stats.log", "qdstrm_import.log"
# Sweeps and studies.
SWEEP_PLAN, SWEEP_CELLS_DIR = "sweep.json", "cells"
ATTENTION_PLAN, ATTENTION_CELLS, PRECISION_LAB = "study.json", "cells.jsonl", "precision_lab.json"
ADVICE_PLAN = "advice.json"  # `sysprof advise`: its candidates, the ones skipped and why, the estimate
CEILING = "ceiling.json"  # `sysprof advise`: the answer's matmuls timed alone (runner/ceiling.py)
CEILING_STDERR = "ceiling-stderr.log"  # beside it: why the ceiling could not be measured
STUDIES_STDERR = "studies-stderr.log"  # under the runs root: a study's directory does not exist before it starts
INSPECT_STDERR = "inspect-stderr.log"  # under the runs root: the traceback of a model that failed to inspect


def runs_root(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("SYSPROF_RUNS") or "runs")


def slug(cfg: RunConfig) -> str:
    parts = [cfg.model_name, f"ctx{cfg.ctx}", f"b{cfg.batch}", cfg.mode, cfg.dtype, cfg.attention]
    if cfg.compile:
        parts.append("compiled" if cfg.compile_mode == "default" else f"compiled-{cfg.compile_mode}")
    if cfg.distributed:
        parts.append(f"{cfg.parallel}{cfg.nproc}" + (f"x{cfg.nnodes}nodes" if cfg.nnodes > 1 else ""))
    if cfg.optimizer_impl != "default":
        parts.append(f"opt-{cfg.optimizer_impl}")
    if cfg.repeats > 1:
        parts.append(f"x{cfg.repeats}")
    return "-".join(parts).replace("/", "_")


def typed_command() -> str:
    """This process's command as a user would type it again (`sysprof study attention --ctxs …`), for the plan
    of a study or sweep: what a report prints to reproduce it. The app starts its studies with `--events` and its
    own `--runs-dir`; those two are left out (a user's own --runs-dir, without --events, stays)."""
    words = sys.argv[1:]
    if "--events" in words:
        words = [word for word in words if word != "--events"]
        if "--runs-dir" in words[:-1]:
            at = words.index("--runs-dir")
            words = words[:at] + words[at + 2:]
    return shlex.join(["sysprof", *words])


def new_timestamped_dir(root: Path, name: str) -> Path:
    """Create root/<timestamp>-<name>; a second one in the same second gets a numeric suffix."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for attempt in range(1000):
            path = root / (f"{stamp}-{name}" + (f"-{attempt}" if attempt else ""))
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise RunDirError(f"cannot create a directory under {root}: {exc.strerror or exc}") from None
    raise RunDirError(f"too many directories named {stamp}-{name} under {root}")


def rank_dir(run_dir: Path, rank: int, local_rank: int | None = None) -> Path:
    """Where a rank writes its steps and summary: each node's first rank is the run directory itself (rank 0 on
    one node, so everything that reads a run reads rank 0); the others are ranks/01, ranks/02, … by global rank."""
    first_on_node = (rank if local_rank is None else local_rank) == 0
    return run_dir if first_on_node else run_dir / RANKS_DIR / f"{rank:02d}"


def new_run_dir(root: Path, cfg: RunConfig) -> Path:
    return new_timestamped_dir(root, slug(cfg))


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write via a temporary file and rename, so a reader never sees half a document. On a full disk the run's
    reserve is given up and the write tried once more: a run that filled the disk still gets its summary."""
    try:
        _write_json(path, payload)
    except OSError as exc:
        if not is_disk_full(exc) or not release_space(path.parent):
            raise
        _write_json(path, payload)


def _write_json(path: Path, payload: Mapping[str, Any]) -> None:
    write_whole(path, json.dumps(payload, indent=1, default=str) + "\n")


def write_whole(path: Path, text: str) -> None:
    """The whole text or none of it (a temporary file, then a rename): a full disk leaves no cut or empty file in
    path's place, and a file already there stays as it was."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
    except OSError:
        tmp.unlink(missing_ok=True)  # half a temporary file only takes space
        raise
    tmp.replace(path)


def append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    """One whole line or none: a write cut short (a full disk) is taken back, so the lines before stay readable
    and a later line does not join a torn one."""
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    with path.open("ab", buffering=0) as handle:
        start = handle.seek(0, os.SEEK_END)
        try:
            written = 0
            while written < len(data):
                count = handle.write(data[written:])
                if not count:  # nothing went in and no error said why: as good as a full disk
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
                written += count
        except OSError:
            handle.truncate(start)
            raise


def read_json(path: Path) -> dict | None:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise RunDirError(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(document, dict):
        raise RunDirError(f"{path} is not readable JSON: a {type(document).__name__}, not an object")
    problem = shape_problem(document, shape) if (shape := _shape_of(path)) else None
    if problem:
        raise RunDirError(f"{path} is damaged: {problem}")
    if path.name == MANIFEST and newer_schema(document):
        raise RunDirError(f"{path} was written by a newer sysprof (schema {document['schema']}; this one reads "
                          f"{SCHEMA_VERSION} and before): upgrade sysprof to read it")
    return document


def newer_schema(manifest: Mapping[str, Any]) -> bool:
    schema = manifest.get("schema")
    return isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA_VERSION


def _shape_of(path: Path) -> Mapping[str, shapes.Kinds] | None:
    """The shape a run's document of this name must have (an analysis's by its folder)."""
    shapes_by_name: dict[str, Mapping[str, shapes.Kinds]] = (
        {KERNELS_DIR: shapes.KERNELS, MEMORY_DIR: shapes.MEMORY} if path.name == ANALYSIS
        else {MANIFEST: shapes.MANIFEST, SUMMARY: shapes.SUMMARY, SWEEP_PLAN: shapes.SWEEP_PLAN,
              ATTENTION_PLAN: shapes.ATTENTION_PLAN, ADVICE_PLAN: shapes.ADVICE})
    return shapes_by_name.get(path.parent.name if path.name == ANALYSIS else path.name)


def read_jsonl(path: Path) -> list[dict]:
    """Every complete line; a torn last line (a killed runner) is dropped, not fatal."""
    return jsonl_records(path)[0]


def jsonl_records(path: Path) -> tuple[list[dict], int]:
    """Every complete line, and how many lines before the last were no record: damage to say, where a torn last
    line is only a writer that was killed."""
    if not path.exists():
        return [], 0
    records, damaged = [], 0
    lines = path.read_text(errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            record = None
        if isinstance(record, dict):  # a line torn into something that parses (a number) is no record either
            records.append(record)
        elif line.strip() and number < len(lines):
            damaged += 1
    return records, damaged


def read_summary(run_dir: Path) -> RunSummary | None:
    """A run directory's summary.json (None before the run wrote it); trusted to be what the runner wrote."""
    return cast("RunSummary | None", read_json(run_dir / SUMMARY))


def read_steps(run_dir: Path) -> list[StepRecord]:
    """A run directory's steps.jsonl, one StepRecord per complete line."""
    return cast("list[StepRecord]", read_jsonl(run_dir / STEPS))


def list_runs(root: Path) -> list[Path]:
    """Run directories under root, newest first."""
    if not root.is_dir():
        return []
    runs = [p for p in root.iterdir() if (p / MANIFEST).is_file()]
    return sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True)
