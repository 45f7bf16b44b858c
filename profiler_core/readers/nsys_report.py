"""A .nsys-rep: exported to sqlite beside it with nsys (which must be found), then read as an export."""
from __future__ import annotations

import subprocess
from pathlib import Path

from sysprof.profiler_core.base.errors import AnalyzeError
from sysprof.profiler_core.kernels.nsys.commands import export_sqlite_argv
from sysprof.profiler_core.kernels.nsys.locate import find_nsys
from sysprof.profiler_core.readers.base import ReadOptions
from sysprof.profiler_core.readers.nsys_sqlite import NsysSqliteReader


class NsysReportReader:
    name, what = "nsys-rep", ".nsys-rep"

    def claims(self, path: Path) -> bool:
        return path.is_file() and path.suffix == ".nsys-rep"

    def read(self, path: Path, options: ReadOptions) -> dict:
        return NsysSqliteReader().read(export_sqlite(path, options.nsys), options)


def export_sqlite(report: Path, nsys: str | None) -> Path:
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
