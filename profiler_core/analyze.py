"""`sysprof analyze PATH`: kernel tables or memory analysis from whatever the user has at hand."""
from __future__ import annotations

import lzma
import pickle
import sqlite3
import subprocess
import zlib
from pathlib import Path

from sysprof.profiler_core import rundir
from sysprof.profiler_core.errors import DAMAGED_DATA, AnalyzeError, SysprofError
from sysprof.profiler_core.kernels.nsys.commands import export_sqlite_argv
from sysprof.profiler_core.kernels.nsys.locate import find_nsys
from sysprof.profiler_core.kernels.summary import analyze_attribution, analyze_sqlite, analyze_stats_dir
from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace
from sysprof.profiler_core.memory import analyze_snapshot

SNAPSHOT_SUFFIXES = (".pickle", ".pkl", ".xz", ".gz")




DAMAGED = (*DAMAGED_DATA, sqlite3.DatabaseError, pickle.UnpicklingError, lzma.LZMAError, zlib.error)


def analyze_path(path: Path, nsys: str | None = None, prefix: str | None = None,
                 phase_names: dict[str, str] | None = None) -> dict:
    """prefix: which `nsys stats` set of a directory holding several (`--prefix`); phase_names: each phase's NVTX
    range where a profile's are not names the tool knows (`--phase`)."""
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or directory")
    if prefix is not None and (not path.is_dir() or (path / rundir.MANIFEST).is_file()):
        raise AnalyzeError(f"--prefix names a set of nsys stats CSVs in a directory; {path} is not such a directory")
    try:
        return _dispatch(path, nsys, prefix, phase_names)  # the readers raise a SysprofError with their one-line reason where they can
    except SysprofError:
        raise
    except DAMAGED as exc:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise AnalyzeError(f"{path} could not be read; is it damaged, or not what its name says? "
                           f"({type(exc).__name__}: {detail:.120})") from None


def _dispatch(path: Path, nsys: str | None, prefix: str | None, phase_names: dict[str, str] | None) -> dict:
    if path.is_dir():
        return _analyze_dir(path, prefix, phase_names)
    if path.suffix == ".sqlite":
        return analyze_sqlite(path, phase_names)
    if path.suffix == ".nsys-rep":
        return analyze_sqlite(_export_sqlite(path, nsys), phase_names)
    if path.suffix == ".json":
        return analyze_attribution(attribute_torch_trace(path), str(path), "torch")
    if path.name.endswith(SNAPSHOT_SUFFIXES):
        return analyze_snapshot(path)
    raise AnalyzeError(f"{path}: expected a run directory, .sqlite, .nsys-rep, stats directory, "
                       "torch trace .json or memory snapshot .pickle")


def _analyze_dir(path: Path, prefix: str | None, phase_names: dict[str, str] | None) -> dict:
    """A run directory: its saved analyses (kernels, memory); a directory of CSVs: nsys's own stats."""
    if (path / rundir.MANIFEST).is_file():
        saved = {kind: rundir.read_json(path / sub / rundir.ANALYSIS)
                 for kind, sub in (("kernels", rundir.KERNELS_DIR), ("memory", rundir.MEMORY_DIR))}
        found = {kind: analysis for kind, analysis in saved.items() if analysis}
        if not found:
            raise AnalyzeError(f"{path}: this run has no kernel or memory analysis; run it with "
                               "--profiler nsys|torch or --memory")
        return found["kernels"] | {"memory": found["memory"]} if len(found) == 2 else next(iter(found.values()))
    return analyze_stats_dir(path, prefix, phase_names)


def _export_sqlite(report: Path, nsys: str | None) -> Path:
    found = find_nsys(nsys)
    if found is None:
        raise AnalyzeError(f"{report}: reading a .nsys-rep needs nsys (not found); "
                           "export it with `nsys export --type sqlite` elsewhere and analyze the .sqlite")
    sqlite_path = report.with_suffix(".sqlite")
    result = subprocess.run(export_sqlite_argv(found, report, sqlite_path), capture_output=True, text=True)
    if not sqlite_path.is_file():
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise AnalyzeError(f"nsys export failed: {detail[-1] if detail else f'exit code {result.returncode}'}")
    return sqlite_path

