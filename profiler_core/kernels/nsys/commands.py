"""nsys command lines, and turning a finished profile into sqlite + stats CSVs.

The argv builders are pure.  `postprocess_report` runs nsys and trusts files and
output text over exit codes: nsys exits 0 when the profile was never written
(missing libdw leaves only a `.qdstrm`), when a report is unknown or skipped.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sysprof.profiler_core.base.rundir import (
    NSYS_EXPORT_LOG,
    NSYS_OUTPUT,
    NSYS_REPORT,
    NSYS_SQLITE,
    NSYS_STATS_DIR,
    NSYS_STATS_LOG,
    QDSTRM_IMPORT_LOG,
)
from sysprof.profiler_core.kernels.nsys.locate import find_qdstrm_importer
from sysprof.profiler_core.kernels.nsys_stats.text import nsys_output_errors, nsys_output_skips

# The stats reports `sysprof analyze` reads back from a stats directory (kernels, NVTX ranges, kernels per range):
# the run's own tables come from the sqlite, so writing others only costs time.
STATS_REPORTS = ("cuda_gpu_kern_sum", "nvtx_sum", "nvtx_kern_sum")
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
    """`nsys profile` limited to the cudaProfilerStart/Stop window of the runner. No OS-runtime trace: no table reads
    it, and tracing every system call lengthens the capture and the report write (`extra` can add it back)."""
    return [
        str(nsys), "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite", "true",
        *(extra or []), "-o", str(output_prefix), *runner_argv,
    ]


def export_sqlite_argv(nsys: str | Path, report: str | Path, sqlite_path: str | Path) -> list[str]:
    return [str(nsys), "export", "--type", "sqlite", "--force-overwrite", "true",
            "--output", str(sqlite_path), str(report)]


def stats_argv(nsys: str | Path, sqlite_path: str | Path, report_names: list[str] | tuple[str, ...],
               out_prefix: str | Path) -> list[str]:
    """CSV files `<out_prefix>_<report>.csv` from the sqlite just exported (read as it is: exporting the report a
    second time would double the slowest step), overwriting old ones (else nsys skips them)."""
    return [str(nsys), "stats", "--report", ",".join(report_names), "--format", "csv",
            "--output", str(out_prefix), "--force-overwrite=true", str(sqlite_path)]


def importer_argv(importer: str | Path, qdstrm: str | Path) -> list[str]:
    return [str(importer), "--input-file", str(qdstrm)]


def postprocess_report(nsys: str | Path, run_dir: str | Path) -> ReportResult:
    """profile.nsys-rep (importing a leftover .qdstrm if needed) -> profile.sqlite + stats/*.csv, one after the other.
    (A session runs the stats beside its analysis instead: export_report, then a StatsJob.)"""
    result = export_report(nsys, run_dir)
    if not result.ok or result.sqlite_path is None:
        return result
    stats = StatsJob(nsys, result.sqlite_path, Path(run_dir))
    return ReportResult(True, result.report_path, result.sqlite_path, stats.stats_dir, warnings=stats.finish())


def export_report(nsys: str | Path, run_dir: str | Path) -> ReportResult:
    """profile.nsys-rep (importing a leftover .qdstrm if needed) -> profile.sqlite."""
    run_dir = Path(run_dir)
    report = run_dir / NSYS_REPORT
    if not report.is_file():
        imported = _import_qdstrm(nsys, run_dir)
        if imported.error:
            return imported
    sqlite_path = run_dir / NSYS_SQLITE
    export_error = _run_nsys(export_sqlite_argv(nsys, report, sqlite_path), run_dir / NSYS_EXPORT_LOG)
    if export_error or not sqlite_path.is_file():
        return ReportResult(False, report, error=f"nsys export failed: {export_error or 'no sqlite written'}")
    return ReportResult(True, report, sqlite_path)


class StatsJob:
    """`nsys stats` writing stats/*.csv from the exported sqlite, in the background: the CSVs are for the user's own
    tools and `sysprof analyze`; the run's tables do not wait for them."""

    def __init__(self, nsys: str | Path, sqlite_path: Path, run_dir: Path):
        self.stats_dir = run_dir / NSYS_STATS_DIR
        self.stats_dir.mkdir(exist_ok=True)
        self.job = NsysJob(stats_argv(nsys, sqlite_path, STATS_REPORTS, self.stats_dir / NSYS_OUTPUT),
                           run_dir / NSYS_STATS_LOG)

    def finish(self) -> list[str]:
        """Wait for it; the reports it skipped and its error, as warnings."""
        error = self.job.finish()
        log = self.job.log_path
        warnings = nsys_output_skips(log.read_text(errors="replace")) if log.is_file() else []
        return [*warnings, *([f"nsys stats: {error}"] if error else [])]



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


class NsysJob:
    """One nsys step started now; its output goes to log_path as it comes (no pipe to fill while nobody reads)."""

    def __init__(self, argv: list[str], log_path: Path):
        self.argv, self.log_path = argv, log_path
        self.started, self.seconds = time.monotonic(), 0.0
        self.proc: subprocess.Popen | None = None
        self.start_error: str | None = None
        env = {**os.environ, "LC_ALL": "C"}  # C locale: no thousands separators in numbers
        with log_path.open("w") as log:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            try:
                self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
            except OSError as error:
                self.start_error = f"could not run {Path(argv[0]).name}: {error}"

    def finish(self, timeout: float = NSYS_TIMEOUT_S) -> str | None:
        """Wait for it: the first error line of its output, or None. (Its own time is in `seconds` after.)"""
        if self.proc is None:
            return self.start_error
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return f"{Path(self.argv[0]).name} {self.argv[1]} took more than {timeout:.0f} s and was stopped"
        finally:
            self.seconds = time.monotonic() - self.started
        errors = nsys_output_errors(self.log_path.read_text(errors="replace"))
        if errors:
            return errors[0]
        if code != 0:
            return f"exit code {code}: {_last_line(self.log_path) or 'no output'}"
        return None


def _run_nsys(argv: list[str], log_path: Path) -> str | None:
    """Run one nsys step, keep its output in log_path; the first error line, or None."""
    return NsysJob(argv, log_path).finish()


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()] \
        if path.is_file() else []
    return lines[-1] if lines else ""
