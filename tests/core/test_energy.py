"""Energy per step: the runner's joules (NVML's counter read around each step) summed into a run's section, a
group's per-process tokens per joule, and compare's tokens/J row. The GPU path itself is in tests/e2e/test_gpu.py."""
import pytest

from sysprof.profiler_core.compare import ENERGY_ROW, compare_summaries
from sysprof.profiler_core.energy import energy_line, energy_section, group_energy
from sysprof.profiler_core.metrics import aggregate_processes


def steps(joules, wall_ms=100.0, clock=1980):
    return [{"kind": "measured", "wall_ms": wall_ms, "energy_j": j, "sm_clock_mhz": clock} for j in joules]


def test_joules_are_summed_over_the_steps_not_a_median_of_coarse_readings():
    """The counter moves in updates of its own: one step reads 0 J, the next twice its share; their sum is exact."""
    section = energy_section([{"kind": "warmup", "wall_ms": 900.0, "energy_j": 500.0}, *steps([0.0, 80.0, 40.0])],
                             tokens_per_step=1000, power_limit_w=700.0)
    assert section["joules_per_step"] == pytest.approx(40.0)  # the warm-up step is not counted
    assert section["tokens_per_joule"] == pytest.approx(3000 / 120)
    assert section["watts"] == pytest.approx(120 / 0.3)
    assert section["power_limit_w"] == 700.0 and section["sm_clock_mhz"] == 1980 and "whole GPU" in section["scope"]
    assert "40 J/step" in energy_line({"energy": section}) and "700 W cap" in energy_line({"energy": section})


def test_a_run_without_readings_has_no_energy_section():
    assert energy_section([{"kind": "measured", "wall_ms": 10.0}], 100, None) is None  # a CPU run
    assert energy_section(steps([0.0, 0.0]), 100, 300.0) is None  # a counter that never moved: no figure
    assert energy_line({"energy": None}) is None and group_energy([{"status": "ok"}]) is None


def run_summary(tokens_per_s, tokens_per_joule, median_ms=100.0):
    phase = {"median_ms": median_ms, "mean_ms": median_ms, "std_ms": 1.0, "min_ms": median_ms, "max_ms": median_ms,
             "cv": 0.01, "n": 10}
    return {"status": "ok", "phases": {"step": phase}, "tokens_per_s": tokens_per_s,
            "energy": {"joules_per_step": 1.0, "tokens_per_joule": tokens_per_joule, "watts": 300.0,
                       "power_limit_w": 700.0, "sm_clock_mhz": 1980, "steps": 10}}


def group(pairs):
    processes = [run_summary(rate, per_joule) for rate, per_joule in pairs]
    return {"status": "ok", **aggregate_processes(processes)}


def test_a_group_carries_each_process_and_compare_judges_tokens_per_joule():
    a = group([(1000, 50.0), (1010, 51.0), (995, 49.5), (1005, 50.5)])
    b = group([(1500, 70.0), (1490, 71.0), (1510, 69.5), (1505, 70.5)])
    assert a["energy"]["per_process_tokens_per_joule"] == [50.0, 51.0, 49.5, 50.5]
    assert a["energy"]["tokens_per_joule"] == pytest.approx(50.25)
    row = {r["phase"]: r for r in compare_summaries(a, b)}[ENERGY_ROW]
    assert row["ratio_b_over_a"] == pytest.approx(70.25 / 50.25, rel=1e-3)
    assert row["verdict_text"].endswith("more per joule") and row["n_a"] == row["n_b"] == 4


def test_no_tokens_per_joule_row_unless_every_process_of_both_sides_read_energy():
    a = group([(1000, 50.0), (1010, 51.0)])
    b = {"status": "ok", **aggregate_processes([run_summary(1500, 70.0), {**run_summary(1490, 0.0), "energy": None}])}
    assert ENERGY_ROW not in {r["phase"] for r in compare_summaries(a, b)}
