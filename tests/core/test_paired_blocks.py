"""Verdicts between arms of the same shared processes: blocks paired inside each process. A process that stalls
slows both arms and is cancelled; same-config pairs get a verdict at most at the test's rate; a clear gain is called
with two processes; and compare uses the paired test only where both sides shared processes."""
import math

import numpy as np
import pytest

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.analysis.verdicts import FASTER, WITHIN_NOISE, paired_verdict


def _record(start: float, rates: list[float]) -> dict:
    return {"status": "ok", "ran": {"start": start, "end": start + 60}, "tokens_per_s": float(np.median(rates)),
            "phases": {"step": 1000 / float(np.median(rates))},
            "shared_process": {"measured_in_blocks": list(range(len(rates))), "block_tokens_per_s": rates}}


def _group(records: list[dict]) -> dict:
    rates = [r["tokens_per_s"] for r in records]
    return {"status": "ok", "phases": {"step": {"median_ms": 1000 / float(np.median(rates)), "n": 20}},
            "tokens_per_s": float(np.median(rates)),
            "repeats": {"processes": [{**r, "phases": {"step": r["phases"]["step"]}} for r in records]}}


def test_a_process_that_stalled_both_arms_leaves_a_clear_gain_a_gain():
    """The reported CPU case: a baseline near 7–10k tokens/s and batch 8 near 26–28k, with one process far off on
    each side (a stalled process on a busy 2-core host). Unpaired, Mann–Whitney cannot call it (p = 0.34); as arms
    of the same processes the stall is in both arms' blocks and the ratio stays near 3."""
    starts, slow = [0.0, 100.0, 200.0, 300.0], [1.0, 0.06, 1.0, 1.0]  # process 2 ran at 6% speed, both arms
    base = [_record(s, [f * r for r in (8000, 8300, 7900, 8100)]) for s, f in zip(starts, slow)]
    batch8 = [_record(s, [f * r for r in (26000, 27000, 26500, 27900)]) for s, f in zip(starts, slow)]
    row = {r["phase"]: r for r in compare_summaries(_group(base), _group(batch8))}["tokens/s"]
    assert row["verdict"] == FASTER and row["test"].startswith("paired blocks")
    assert 3.1 < row["ratio_b_over_a"] < 3.6 and row["ci_low"] > 3.0 and row["p_value"] < 1e-6
    assert "16 blocks paired in 4 shared processes" in row["reason"]


def _design(rng: np.random.Generator, gain: float, processes: int, blocks: int = 4) -> tuple[list, list]:
    """Two arms in `processes` shared processes: each process's own speed (±15%), a process-level wobble of the
    ratio (1%), and block noise (3%), as measured arms of a launch-bound step move."""
    a, b = [], []
    for p in range(processes):
        speed = 10_000 * math.exp(rng.normal(0, 0.15))
        wobble = math.exp(rng.normal(0, 0.01))
        a.append(_record(p * 100.0, list(speed * np.exp(rng.normal(0, 0.03, blocks)))))
        b.append(_record(p * 100.0, list(gain * wobble * speed * np.exp(rng.normal(0, 0.03, blocks)))))
    return a, b


@pytest.mark.parametrize("processes", [2, 3, 4])
def test_same_config_pairs_get_a_verdict_at_most_at_the_tests_rate(processes):
    rng = np.random.default_rng(20261128 + processes)
    called = sum(paired_verdict(*_design(rng, 1.0, processes), min_effect=0.02)["verdict"] != WITHIN_NOISE
                 for _ in range(400))
    assert called <= 0.05 * 400  # α = 0.05 before the effect gate, which only removes verdicts


def test_with_the_advisors_four_processes_a_ten_percent_gain_is_called_and_five_mostly():
    """Four processes, the advisor's default, cost four start-ups when every candidate is an arm of them. With two,
    a process effect the pretest cannot rule out leaves one degree of freedom (t 12.7): honest, and weak."""
    rng = np.random.default_rng(7)
    ten = [paired_verdict(*_design(rng, 1.10, 4), min_effect=0.02) for _ in range(200)]
    five = [paired_verdict(*_design(rng, 1.05, 4), min_effect=0.02) for _ in range(200)]
    assert sum(f["verdict"] == FASTER for f in ten) >= 0.95 * 200
    assert sum(f["verdict"] == FASTER for f in five) >= 0.7 * 200
    assert np.median([f["detectable_effect"] for f in ten]) < 0.05


def test_sides_that_never_shared_a_process_keep_the_verdict_on_processes():
    base = [_record(s, [8000.0] * 4) for s in (0.0, 100.0)]
    other = [_record(s, [9000.0] * 4) for s in (50.0, 150.0)]
    assert paired_verdict(base, other, 0.02) is None
    row = {r["phase"]: r for r in compare_summaries(_group(base), _group(other))}["tokens/s"]
    assert not row["test"].startswith("paired")
