"""The findings about a traced loop, read from the steps of real traced runs (tests/data/trace/)."""
from __future__ import annotations

import json
from pathlib import Path

from sysprof.profiler_core.analysis.loop_findings import _on_the_period, _period, _where_the_time_went, loop_findings

STRAY_SPIKE = Path(__file__).resolve().parents[1] / "data" / "trace" / "stray-spike-cpu" / "steps.jsonl"


def stray_spike_steps() -> list[dict]:
    return [json.loads(line) for line in STRAY_SPIKE.read_text().splitlines()]


def test_a_lone_spike_beside_the_evaluations_is_left_out_of_the_period_and_the_eval_phase_is_named():
    """Steps 5, 10 and 15 evaluate (an 'eval' phase only they have); step 2, slow on a busy host, is a spike too and
    comes first. The finding lists the recurring ones and puts their extra time in the phase they share."""
    found = {finding["kind"]: finding["text"] for finding in loop_findings(stray_spike_steps())}
    spikes = found["periodic spikes"]
    assert spikes.startswith("every 5 steps a step takes ") and "(steps 5, 10, 15; 3 in all)" in spikes
    assert "the extra time in the eval phase" in spikes


def test_a_phase_the_first_spiked_step_lacks_still_counts_where_the_time_went():
    steps = stray_spike_steps()
    assert "eval" not in steps[2]["phases_ms"]
    assert _where_the_time_went(steps, [2, 5, 10, 15], {2, 5, 10, 15}) == "the extra time in the eval phase"


def test_two_events_of_one_period_at_different_offsets_are_both_kept_and_a_lone_spike_is_not():
    assert _period([2, 5, 7, 10, 12, 15, 17]) == 5  # the neighbours' gaps alternate 3 and 2
    assert _period([3, 5, 8, 10, 13]) == 5 and _period([3, 8, 10, 15]) == 5
    assert _on_the_period([2, 5, 8, 10, 13, 15, 18], 5) == [5, 8, 10, 13, 15, 18]
    assert _on_the_period([2, 5, 10, 15], 5) == [5, 10, 15]
    assert _period([2, 9, 30]) is None  # no distance pairs two of them
