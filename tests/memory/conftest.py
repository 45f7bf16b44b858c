"""Session fixtures for the memory-snapshot tests in this folder (pytest hands them to the tests by name).

The real snapshot lives in ../shared/fixtures (xz-compressed); it is decompressed once per session into
tmp so the tests also exercise the plain-pickle path. Tests skip when ../shared is not beside the checkout.
"""
from __future__ import annotations

import lzma
from pathlib import Path

import pytest

SNAPSHOT_XZ = Path("h200_small_fp32") / "memory_snapshot.pickle.xz"  # under ../shared/fixtures


@pytest.fixture(scope="session")
def snapshot_xz_path(shared_fixtures) -> Path:
    path = shared_fixtures / SNAPSHOT_XZ
    if not path.is_file():
        pytest.skip(f"../shared/fixtures/{SNAPSHOT_XZ.as_posix()} is not beside this checkout")
    return path


@pytest.fixture(scope="session")
def snapshot_path(snapshot_xz_path, tmp_path_factory) -> Path:
    plain = tmp_path_factory.mktemp("memory") / "memory_snapshot.pickle"
    plain.write_bytes(lzma.decompress(snapshot_xz_path.read_bytes()))
    return plain


@pytest.fixture(scope="session")
def snapshot(snapshot_path) -> dict:
    from sysprof.profiler_core.memory import load_snapshot

    return load_snapshot(snapshot_path)


@pytest.fixture(scope="session")
def analysis(snapshot) -> dict:
    from sysprof.profiler_core.memory import analyze_snapshot

    return analyze_snapshot(snapshot, top_n=20)
