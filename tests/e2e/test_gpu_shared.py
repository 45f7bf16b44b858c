"""A shared process on CUDA (skipped without one): each arm's peak memory is its own (the other arms' resident
weights and optimizer state taken off), and its step agrees with a fresh process of the same config."""
import dataclasses

import pytest

from sysprof.profiler_core.base.config import RunConfig
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


def test_blocks_of_a_least_duration_give_each_arm_an_energy_figure(tmp_path):
    """The energy goal's blocks (1.5 s or more each): every arm of a shared process carries joules per step, tokens
    per joule and a resolution under 10%; without them the same arms' blocks are too short for the counter."""
    larger = dataclasses.replace(SMALL, batch=8)
    arms = [(SMALL, tmp_path / "a"), (larger, tmp_path / "b")]
    timed = run_shared(arms, tmp_path / "shared", min_block_s=1.5)
    assert [s["status"] for s in timed] == ["ok", "ok"]
    for summary in timed:
        energy = summary["energy"]
        assert energy["tokens_per_joule"] > 0 and energy["resolution_pct"] < 10, energy
    quick = run_shared([(SMALL, tmp_path / "c"), (larger, tmp_path / "d")], tmp_path / "shared_quick")
    assert all("missing" in summary["energy"] for summary in quick)
