"""Energy per step: the runner's joules (NVML's counter read around each step) summed into a run's section, a
group's per-process tokens per joule, and compare's tokens/J row. The GPU path itself is in tests/e2e/test_gpu.py."""
import pytest

from sysprof.profiler_core.analysis.compare import ENERGY_ROW, compare_summaries
from sysprof.profiler_core.analysis.energy import COUNTER_STEP_S, energy_line, energy_section, group_energy
from sysprof.profiler_core.analysis.metrics import aggregate_processes


def test_joules_over_the_stretches_give_joules_per_step_tokens_per_joule_and_mean_power():
    section = energy_section(120.0, [1.5, 1.5], steps=30, tokens_per_step=1000, power_limit_w=700.0,
                             clocks_mhz=[1980, 1965])
    assert section["joules_per_step"] == pytest.approx(4.0)
    assert section["tokens_per_joule"] == pytest.approx(30_000 / 120)
    assert section["watts"] == pytest.approx(40.0)
    assert section["resolution_pct"] == pytest.approx(100 * COUNTER_STEP_S / 1.5, abs=0.1)
    assert section["power_limit_w"] == 700.0 and section["sm_clock_mhz"] == 1972.5 and "whole GPU" in section["scope"]
    line = energy_line({"energy": section})
    assert "4 J/step" in line and "700 W cap" in line and "±6.7%" in line


def test_stretches_shorter_than_the_counter_can_resolve_give_a_reason_not_a_figure():
    """A shared process's blocks of three 60 ms steps: the counter moves about every 0.1 s, so their joules would be
    its coarseness. The section says why there is no figure, and nothing reads one from it."""
    section = energy_section(90.0, [2.0, 0.18], steps=20, tokens_per_step=1000, power_limit_w=700.0, clocks_mhz=[])
    assert section["missing"].startswith("the steps ran 0.18 s at a stretch") and "tokens_per_joule" not in section
    assert energy_line({"energy": section}).startswith("energy N/A (the steps ran 0.18 s")
    assert group_energy([{"energy": section}]) is None


def test_a_run_without_readings_has_no_energy_section():
    assert energy_section(0.0, [], steps=10, tokens_per_step=100, power_limit_w=None, clocks_mhz=[]) is None
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


def test_a_group_has_a_figure_only_where_every_process_has_one():
    """A median over the processes that read the counter would speak for the group while compare, which needs every
    process's, shows no row: neither has a figure then."""
    figures = [run_summary(1000, 50.0), run_summary(1010, 51.0)]
    assert group_energy(figures)["tokens_per_joule"] == pytest.approx(50.5)
    assert group_energy([*figures, {**run_summary(990, 0.0), "energy": None}]) is None
