"""Session fixtures for the memory-snapshot tests (imported by the test_memory_* modules).

The real snapshot lives in ../shared/fixtures (xz-compressed); it is decompressed once per session into
tmp so the tests also exercise the plain-pickle path. Tests skip when ../shared is not beside the checkout.
"""
from __future__ import annotations

import lzma
from pathlib import Path

import pytest

SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
FIXTURE_XZ = SHARED_FIXTURES / "h200_small_fp32" / "memory_snapshot.pickle.xz"

# CS336 "small", batch 4, ctx 256, fp32 (../shared/fixtures/README.md)
SMALL = dict(params=128_625_408, d_model=768, d_ff=3072, layers=12, heads=12, vocab=10_000, ctx=256, batch=4)


@pytest.fixture(scope="session")
def snapshot_xz_path() -> Path:
    if not FIXTURE_XZ.is_file():
        pytest.skip("../shared/fixtures/h200_small_fp32/memory_snapshot.pickle.xz is not beside this checkout")
    return FIXTURE_XZ


@pytest.fixture(scope="session")
def snapshot_path(snapshot_xz_path, tmp_path_factory) -> Path:
    plain = tmp_path_factory.mktemp("memory") / "memory_snapshot.pickle"
    plain.write_bytes(lzma.decompress(snapshot_xz_path.read_bytes()))
    return plain


@pytest.fixture(scope="session")
def snapshot(snapshot_path) -> dict:
    from profiler_core.memory import load_snapshot

    return load_snapshot(snapshot_path)


@pytest.fixture(scope="session")
def analysis(snapshot) -> dict:
    from profiler_core.memory import analyze_snapshot

    return analyze_snapshot(snapshot, top_n=20)
