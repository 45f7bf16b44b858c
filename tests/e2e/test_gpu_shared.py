"""A shared process on CUDA (skipped without one): each arm's peak memory is its own (the other arms' resident
weights and optimizer state taken off), and its step agrees with a fresh process of the same config."""
import dataclasses

import pytest

from sysprof.profiler_core.config import RunConfig
from sysprof.profiler_core.session.arms import run_shared
from sysprof.profiler_core.session.passes import Session

pytestmark = pytest.mark.gpu

SMALL = RunConfig(model="small", ctx=256, batch=4, warmup=3, steps=12, device="cuda", dtype="bf16")


def test_each_arms_peak_is_its_own_and_matches_a_fresh_process(tmp_path):
    larger = dataclasses.replace(SMALL, batch=8)
    shared = run_shared([(SMALL, tmp_path / "a"), (larger, tmp_path / "b")], tmp_path / "shared")
    fresh = Session(larger, tmp_path / "fresh", lambda event: None).run()
    assert [s["status"] for s in shared] == ["ok", "ok"] and fresh["status"] == "ok"
    shared_peak, fresh_peak = max(shared[1]["peak_memory_bytes"].values()), max(fresh["peak_memory_bytes"].values())
    assert abs(shared_peak - fresh_peak) / fresh_peak < 0.1, (shared_peak, fresh_peak)
    assert max(shared[0]["peak_memory_bytes"].values()) < shared_peak  # batch 4's own, below batch 8's
