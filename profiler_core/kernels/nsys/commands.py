"""nsys command lines, and turning a finished profile into sqlite + stats CSVs.

The argv builders are pure.  `postprocess_report` runs nsys and trusts files and
output text over exit codes: nsys exits 0 when the profile was never written
(missing libdw leaves only a `.qdstrm`), when a report is unknown or skipped.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from profiler_core.kernels.nsys.locate import find_qdstrm_importer
from profiler_core.kernels.nsys_stats.text import nsys_output_errors, nsys_output_skips
from profiler_core.rundir import (
    NSYS_EXPORT_LOG,
    NSYS_OUTPUT,
    NSYS_REPORT,
    NSYS_SQLITE,
    NSYS_STATS_DIR,
    NSYS_STATS_LOG,
    QDSTRM_IMPORT_LOG,
)

STATS_REPORTS = (
    "cuda_gpu_kern_sum", "nvtx_sum", "nvtx_kern_sum", "nvtx_gpu_proj_sum", "cuda_api_sum",
    "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "osrt_sum",
)
NSYS_TIMEOUT_S = 1800
LIBDW_HINT = ("nsys needs libdw.so.1 to import the capture: install elfutils' libdw "
              "(apt-get install libdw1 / dnf install elfutils-libs) or put its folder on LD_LIBRARY_PATH")


@dataclass
class ReportResult:
    """What postprocess_report produced; `error` is a one-line reason when not ok."""

    ok: bool
    report_path: Path | None = None
    sqlite_path: Path | None = None
    stats_dir: Path | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


def profile_argv(nsys: str | Path, output_prefix: str | Path, runner_argv: list[str],
                 extra: list[str] | None = None) -> list[str]:
    """`nsys profile` limited to the cudaProfilerStart/Stop window of the runner."""
    return [
        str(nsys), "profile", "--trace=cuda,nvtx,osrt", "--sample=none", "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite", "true",
        *(extra or []), "-o", str(output_prefix), *runner_argv,
    ]


def export_sqlite_argv(nsys: str | Path, report: str | Path, sqlite_path: str | Path) -> list[str]:
    return [str(nsys), "export", "--type", "sqlite", "--force-overwrite", "true",
            "--output", str(sqlite_path), str(report)]


def stats_argv(nsys: str | Path, report: str | Path, report_names: list[str] | tuple[str, ...],
               out_prefix: str | Path) -> list[str]:
    """CSV files `<out_prefix>_<report>.csv`, overwriting old ones (else nsys skips them)."""
    return [str(nsys), "stats", "--report", ",".join(report_names), "--format", "csv",
            "--output", str(out_prefix), "--force-export=true", "--force-overwrite=true", str(report)]


def importer_argv(importer: str | Path, qdstrm: str | Path) -> list[str]:
    return [str(importer), "--input-file", str(qdstrm)]


def postprocess_report(nsys: str | Path, run_dir: str | Path) -> ReportResult:
    """profile.nsys-rep (importing a leftover .qdstrm if needed) -> profile.sqlite + stats/*.csv."""
    run_dir = Path(run_dir)
    report = run_dir / NSYS_REPORT
    if not report.is_file():
        imported = _import_qdstrm(nsys, run_dir)
        if imported.error:
            return imported
    sqlite_path, stats_dir = run_dir / NSYS_SQLITE, run_dir / NSYS_STATS_DIR
    export_error = _run_nsys(export_sqlite_argv(nsys, report, sqlite_path), run_dir / NSYS_EXPORT_LOG)
    if export_error or not sqlite_path.is_file():
        return ReportResult(False, report, error=f"nsys export failed: {export_error or 'no sqlite written'}")
    stats_dir.mkdir(exist_ok=True)
    stats_log = run_dir / NSYS_STATS_LOG
    # Stats read the .nsys-rep with --force-export=true, so they never see a stale sqlite.
    stats_error = _run_nsys(stats_argv(nsys, report, STATS_REPORTS, stats_dir / NSYS_OUTPUT), stats_log)
    warnings = nsys_output_skips(stats_log.read_text(errors="replace")) if stats_log.is_file() else []
    if stats_error:
        warnings.append(f"nsys stats: {stats_error}")
    return ReportResult(True, report, sqlite_path, stats_dir, warnings=warnings)


def _import_qdstrm(nsys: str | Path, run_dir: Path) -> ReportResult:
    leftovers = sorted(run_dir.glob("*.qdstrm"))
    if not leftovers:
        return ReportResult(False, error=f"nsys wrote no {NSYS_REPORT} in {run_dir} (see the runner's stderr.log)")
    importer = find_qdstrm_importer(nsys)
    if importer is None:
        return ReportResult(False, error=f"only {leftovers[0].name} was written and QdstrmImporter was not "
                                         f"found next to {nsys}; {LIBDW_HINT}")
    log = run_dir / QDSTRM_IMPORT_LOG
    error = _run_nsys(importer_argv(importer, leftovers[0]), log)
    produced = leftovers[0].with_suffix(".nsys-rep")
    if produced.is_file() and produced != run_dir / NSYS_REPORT:
        produced.rename(run_dir / NSYS_REPORT)
    if error or not (run_dir / NSYS_REPORT).is_file():
        detail = error or _last_line(log) or "no report written"
        return ReportResult(False, error=f"QdstrmImporter failed on {leftovers[0].name}: {detail}; {LIBDW_HINT}")
    return ReportResult(True, run_dir / NSYS_REPORT)


def _run_nsys(argv: list[str], log_path: Path) -> str | None:
    """Run one nsys step, keep its output in log_path; the first error line, or None."""
    env = {**os.environ, "LC_ALL": "C"}  # C locale: no thousands separators in numbers
    try:
        result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=NSYS_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"could not run {Path(argv[0]).name}: {error}"
    output = result.stdout + result.stderr
    log_path.write_text(f"$ {' '.join(argv)}\n{output}")
    errors = nsys_output_errors(output)
    if errors:
        return errors[0]
    if result.returncode != 0:
        return f"exit code {result.returncode}: {_last_line(log_path) or 'no output'}"
    return None


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()] \
        if path.is_file() else []
    return lines[-1] if lines else ""
