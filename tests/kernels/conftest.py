"""The real nsys sqlite exports the kernel tests read, unpacked from their .xz once per session."""
from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
H200_SQLITE_XZ = TESTS.parents[1] / "shared" / "fixtures" / "h200_small_fp32" / "report.sqlite.xz"
FOREIGN_SQLITE_XZ = TESTS / "data" / "foreign_nvtx" / "foreign.sqlite.xz"


def unpacked(source: Path, target: Path) -> Path:
    if not source.is_file():
        pytest.skip(f"{source} is missing")
    with lzma.open(source) as compressed, open(target, "wb") as out:
        shutil.copyfileobj(compressed, out)
    return target


@pytest.fixture(scope="session")
def h200_sqlite(tmp_path_factory) -> Path:
    """small, fp32, on the H200: the export every attribution test starts from."""
    return unpacked(H200_SQLITE_XZ, tmp_path_factory.mktemp("nsys") / "report.sqlite")


@pytest.fixture(scope="session")
def foreign_sqlite(tmp_path_factory) -> Path:
    """A user's own loop with its own range names (tests/data/foreign_nvtx/make_report.py, H100)."""
    return unpacked(FOREIGN_SQLITE_XZ, tmp_path_factory.mktemp("foreign") / "foreign.sqlite")
