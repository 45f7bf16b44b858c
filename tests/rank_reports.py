"""The two real per-rank nsys reports of tests/data/ranks, analysed as a session analyses them (no nsys here: the
reports are already exported to sqlite)."""
from __future__ import annotations

import lzma
from pathlib import Path

RANK_REPORTS = Path(__file__).resolve().parent / "data" / "ranks"


class SqliteBackend:
    """The nsys backend past `nsys export`: reads each rank's sqlite."""
    name, capture = "nsys", "nsys"

    def version(self):
        return None

    def launcher(self, pass_dir: Path, ranks: bool) -> list[str]:
        return []

    def place_rank_outputs(self, pass_dir: Path) -> None:
        pass

    def attribute(self, pass_dir: Path):
        from sysprof.profiler_core.base.errors import KernelReportError
        from sysprof.profiler_core.kernels.attribution import attribute_kernels

        if not (pass_dir / "profile.sqlite").is_file():
            raise KernelReportError(f"nsys wrote no profile.nsys-rep in {pass_dir}")
        return attribute_kernels(pass_dir / "profile.sqlite")


def unpack_rank_reports(pass_dir: Path) -> None:
    """Rank 0's report in the pass directory, rank 1's in ranks/01, as place_rank_outputs leaves them."""
    for rank in (0, 1):
        own = pass_dir / ("ranks/01" if rank else "")
        own.mkdir(parents=True, exist_ok=True)
        packed = RANK_REPORTS / f"profile-rank{rank}-local{rank}.sqlite.xz"
        (own / "profile.sqlite").write_bytes(lzma.decompress(packed.read_bytes()))
