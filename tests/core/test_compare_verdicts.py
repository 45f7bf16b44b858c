"""compare's two-gate verdict on per-process medians (significance and minimum effect), the one-process fallback,
tokens/s, and `sysprof compare`'s errors and output on copies of the saved runs."""
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sysprof.profiler_core.analysis.compare import compare_summaries, config_differences
from sysprof.profiler_core.analysis.metrics import aggregate_processes, build_summary
from sysprof.profiler_core.analysis.verdicts import verdict
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.cli.main import main

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
SHARED_HOST_MEDIANS = [36.2, 39.2, 50.4, 38.3, 36.6, 40.3]  # one config, six fresh processes on a shared host


def draws(seed: int, median: float, sigma: float, n: int = 6) -> list[float]:
    """Test input: n per-process medians drawn around `median` with a lognormal spread `sigma` (seeded)."""
    return list(median * np.exp(np.random.default_rng(seed).normal(0.0, sigma, n)))


def test_same_distribution_is_within_noise():
    verdicts = [verdict(draws(2 * i, 40.0, 0.05), draws(2 * i + 1, 40.0, 0.05))["verdict"] for i in range(30)]
    assert verdicts.count("within noise") >= 29  # the target: at most 1 of 30 same-config pairs
    for picked in itertools.combinations(range(6), 3):  # the shared host's own processes, split every way
        a = [SHARED_HOST_MEDIANS[i] for i in picked]
        b = [SHARED_HOST_MEDIANS[i] for i in range(6) if i not in picked]
        assert verdict(a, b)["verdict"] == "within noise"


def test_a_25_percent_change_is_found_with_its_sign_and_interval():
    a, b = draws(7, 40.0, 0.01), draws(8, 30.0, 0.01)
    faster = verdict(a, b)
    assert faster["verdict"] == "faster" and faster["test"] == "Mann-Whitney U" and faster["p_value"] < 0.01
    assert faster["ci_low"] < 0.75 < faster["ci_high"] and faster["ci_high"] - faster["ci_low"] < 0.05
    assert faster["reason"].startswith("p=0.002") and "effect 2" in faster["reason"]
    slower = verdict(b, a)
    assert slower["verdict"] == "slower" and slower["ci_low"] < 1 / 0.75 < slower["ci_high"]
    assert verdict(a, b) == faster  # fixed bootstrap seed: the same runs give the same interval


def test_welch_on_logs_with_three_processes_per_side():
    result = verdict([10.0, 10.1, 10.2], [10.3, 10.4, 10.35])
    assert result["test"] == "Welch t (log)" and result["verdict"] == "slower" and result["p_value"] < 0.05
    assert verdict(SHARED_HOST_MEDIANS[:3], SHARED_HOST_MEDIANS[3:])["reason"] == "not significant, p=0.52"


def test_an_effect_below_the_between_process_spread_is_within_noise():
    steady, spread = [100.0, 100.1, 99.9, 100.05, 99.95, 100.0], [80.0, 85.0, 95.0, 96.0, 97.0, 99.5]
    result = verdict(steady, spread)
    assert result["p_value"] < 0.05  # every B process is below every A one, yet B's own processes vary by 7%
    assert result["verdict"] == "within noise" and result["reason"] == "effect 4.5% < 7.2% (between-process spread)"
    assert result["min_effect"] == pytest.approx(0.0718, abs=1e-4)
    small = verdict(steady, [v * 0.99 for v in steady])
    assert small["verdict"] == "within noise" and small["reason"] == "effect 1.0% < 2.0% (--min-effect)"
    assert verdict(steady, [v * 0.99 for v in steady], min_effect=0.005)["verdict"] == "faster"


def test_identical_processes_are_not_significant():
    assert verdict([10.0, 10.0], [10.0, 10.0])["reason"] == "not significant, no spread"


def process_summary(step_ms: float, batch: int = 2) -> dict:
    """Test input: one process's summary, by metrics.build_summary, from made-up measured steps around step_ms."""
    steps = [{"kind": "measured", "index": i, "wall_ms": step_ms * f,
              "phases_ms": {"forward": step_ms * f * 0.3, "backward": step_ms * f * 0.6,
                            "optimizer": step_ms * f * 0.1}}
             for i, f in enumerate((0.99, 1.0, 1.01, 1.0, 1.005))]
    cfg = RunConfig(model="tiny", ctx=32, batch=batch, device="cpu")
    return dict(build_summary(cfg, {"device_type": "cpu"}, steps, "ok", "test-process"))


def group_summary(step_medians: list[float], batch: int = 2) -> dict:
    """Test input: a group summary of processes with these step medians (what a run with --repeats writes)."""
    processes = [process_summary(ms, batch) for ms in step_medians]
    return {**processes[0], **aggregate_processes(processes)}


def test_groups_compare_phases_and_throughput_with_the_right_sign():
    slow, fast = group_summary(draws(1, 30.0, 0.01)), group_summary(draws(2, 24.0, 0.01))
    rows = {row["phase"]: row for row in compare_summaries(slow, fast)}
    assert list(rows) == ["forward", "backward", "forward+backward", "optimizer", "step", "tokens/s"]
    assert rows["step"]["verdict"] == "faster" and rows["step"]["ratio_b_over_a"] < 1 and rows["step"]["n_a"] == 6
    assert rows["forward+backward"]["verdict"] == "faster" and rows["forward+backward"]["n_b"] == 6
    # as reports word it: B does 1/ratio times the work per second
    assert rows["step"]["verdict_text"] == f"{1 / rows['step']['ratio_b_over_a'] - 1:.0%} faster"
    rate = rows["tokens/s"]
    assert rate["verdict"] == "faster" and rate["ratio_b_over_a"] > 1  # higher tokens/s is the faster side
    assert rate["speedup_a_over_b"] == rate["ratio_b_over_a"] and rate["a_median_ms"] is None
    assert rate["ci_low"] < 30 / 24 < rate["ci_high"]
    backwards = {row["phase"]: row["verdict"] for row in compare_summaries(fast, slow)}
    assert backwards["step"] == backwards["tokens/s"] == "slower"
    assert compare_summaries(fast, slow)[-1]["verdict_text"].endswith("% slower")


def test_one_process_against_a_group_is_tested_against_the_groups_spread():
    rows = compare_summaries(group_summary(draws(1, 30.0, 0.01)), process_summary(24.0))
    step = next(row for row in rows if row["phase"] == "step")
    assert (step["n_a"], step["n_b"], step["verdict"], step["test"]) == (6, 1, "faster", "t prediction (log)")
    assert step["reason"].startswith("1 process in B: p=") and step["ci_low"] < 0.8 < step["ci_high"] < 1
    rate = next(row for row in rows if row["phase"] == "tokens/s")
    assert rate["verdict"] == "faster" and rate["ratio_b_over_a"] > 1  # higher tokens/s is the faster side
    backwards = next(row for row in compare_summaries(process_summary(24.0), group_summary(draws(1, 30.0, 0.01)))
                     if row["phase"] == "step")
    assert backwards["verdict"] == "slower" and backwards["reason"].startswith("1 process in A: p=")


def test_a_lone_process_inside_a_noisy_groups_spread_is_within_noise():
    """The shared host's six processes of one config as the group, and a seventh at 45 ms: 11% off their median, but a
    process of that config can land there (one did at 50.4)."""
    rows = compare_summaries(group_summary(SHARED_HOST_MEDIANS), process_summary(45.0))
    step = next(row for row in rows if row["phase"] == "step")
    assert step["verdict"] == "within noise" and "inside the group's spread" in step["reason"]


def test_one_process_per_side_never_says_faster():
    """Same-config pairs of single processes from the shared host's six: the steps' 2σ would call most of them, but no
    verdict may claim a direction without run-to-run noise."""
    for a, b in itertools.combinations(SHARED_HOST_MEDIANS, 2):
        [row] = [r for r in compare_summaries(process_summary(a), process_summary(b)) if r["phase"] == "step"]
        assert row["verdict"] in ("noise unknown", "within noise") and row["n_a"] == row["n_b"] == 1


def test_config_differences_leave_out_the_extra_passes():
    a = RunConfig(model="tiny", ctx=32).to_dict()
    assert config_differences(a, {**a, "ctx": 64, "dtype": "bf16"}) == {"ctx": (32, 64), "dtype": ("fp32", "bf16")}
    assert config_differences(a, {**a, "profiler": "nsys", "memory": True, "repeats": 5}) == {}


# The CLI, on copies of the saved runs (a directory compared with itself is an error, so A and B are two copies).
@pytest.fixture
def copies(tmp_path):
    for name, source in (("a", "tiny-ctx32"), ("b", "tiny-ctx32"), ("c", "tiny-ctx64")):
        shutil.copytree(RUNS / source, tmp_path / name)
    return tmp_path


def test_cli_compares_two_runs_of_one_config(copies, capsys):
    assert main(["compare", str(copies / "a"), str(copies / "b"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["min_effect"] == 0.02 and document["config_differences"] == {}
    assert [row["phase"] for row in document["phases"]] == ["forward", "backward", "optimizer", "step", "tokens/s"]
    for row in document["phases"]:
        assert (row["n_a"], row["n_b"], row["verdict"], row["ratio_b_over_a"]) == (1, 1, "within noise", 1.0)
        assert row["reason"].startswith("1 process per side: run-to-run noise unknown; use --repeats 5")
        assert {"ci_low", "ci_high", "p_value", "test", "min_effect"} <= set(row)


def test_cli_refuses_a_run_compared_with_itself(copies, capsys):
    for other in (copies / "a", copies / "a" / ".." / "a"):
        assert main(["compare", str(copies / "a"), str(other)]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and "is both A and B; compare two different runs" in error


def test_cli_names_the_config_fields_that_differ_and_compares_them_with_force(copies, capsys):
    assert main(["compare", str(copies / "a"), str(copies / "c")]) == 2
    error = capsys.readouterr().err
    assert error == "sysprof: error: the runs measure different steps: ctx 32 ≠ 64; add --force to compare anyway\n"
    assert main(["compare", str(copies / "a"), str(copies / "c"), "--force"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "note: the runs measure different steps (ctx 32 ≠ 64); compared as asked (--force)" in lines
    assert [line.split()[0] for line in lines[-5:]] == ["forward", "backward", "optimizer", "step", "tokens/s"]
    assert main(["compare", str(copies / "a"), str(copies / "c"), "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config_differences"] == {"ctx": [32, 64]}


@pytest.mark.parametrize("value", ["0", "1", "-0.1", "1.5", "abc", "nan"])
def test_cli_rejects_a_min_effect_outside_0_to_1(copies, capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", str(copies / "a"), str(copies / "b"), "--min-effect", value])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--min-effect: must be a fraction between 0 and 1" in error


def test_cli_prints_ratio_interval_processes_and_reason_per_line(copies, capsys):
    # Test inputs written over the copies' summaries: groups of six processes, B 20% faster.
    for name, seed, median in (("a", 1, 30.0), ("b", 2, 24.0)):
        (copies / name / "summary.json").write_text(json.dumps(group_summary(draws(seed, median, 0.01))))
    assert main(["compare", str(copies / "a"), str(copies / "b"), "--min-effect", "0.05"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("minimum effect 5.0%")
    step = next(line for line in lines if line.startswith("step"))
    assert " 0.80 [0.7" in step and " 6/6 " in step and "% faster " in step and "effect 2" in step
    rate = next(line for line in lines if line.startswith("tokens/s")).split()
    assert rate[3].startswith("1.2") and rate[4].startswith("[1.2") and rate[7] == "faster"  # higher tokens/s
    assert rate[6].endswith("%") and 20 <= int(rate[6][:-1]) <= 30
    assert any(line.startswith("forward+backward") for line in lines)


def test_the_overhead_benchmark_passes_only_an_interval_inside_its_limit():
    """The benchmarks' rule on paired ratios (benchmarks/harness.judge): pass, FAIL, or inconclusive when too noisy."""
    from benchmarks.harness import judge

    bare = draws(3, 30.0, 0.05)  # a noisy host: 5% between processes, which the pairing takes out
    steady = [1.0 + d for d in (0.001, -0.002, 0.0015, 0.0005, -0.001)]
    passing = judge(bare, [b * r for b, r in zip(bare, steady)], steady, 0.01)
    assert passing["outcome"] == "pass" and passing["spread_pct"] > 1 and passing["ci_high"] < 1.01
    slow = [1.05 + d for d in (0.001, -0.002, 0.0015, 0.0005, -0.001)]
    assert judge(bare, [b * r for b, r in zip(bare, slow)], slow, 0.01)["outcome"] == "FAIL"
    wobbly = [1.0 + d for d in (0.03, -0.02, 0.015, -0.025, 0.01)]
    assert judge(bare, [b * r for b, r in zip(bare, wobbly)], wobbly, 0.01)["outcome"] == "inconclusive"


def test_an_intended_change_is_compared_without_force_and_named(copies, capsys):
    """dtype, compile, attention, optimizer implementation: what users compare. The runs' own summaries with the
    config fields B changed (the step times are the copy's: what is checked is which differences need --force)."""
    summary = json.loads((copies / "b" / "summary.json").read_text())
    changed = summary["config"] | {"dtype": "bf16", "attention": "sdpa", "optimizer_impl": "fused"}
    (copies / "b" / "summary.json").write_text(json.dumps(summary | {"config": changed}))
    assert main(["compare", str(copies / "a"), str(copies / "b")]) == 0
    out = capsys.readouterr().out
    assert "A and B differ in dtype fp32 ≠ bf16, attention naive ≠ sdpa, optimizer_impl" in " ".join(out.split())
    assert main(["compare", str(copies / "a"), str(copies / "b"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["config_differences"]) == {"dtype", "attention", "optimizer_impl"}
    (copies / "b" / "summary.json").write_text(json.dumps(summary | {"config": changed | {"mode": "forward"}}))
    assert main(["compare", str(copies / "a"), str(copies / "b")]) == 2
    assert "the runs measure different steps: mode train ≠ forward; add --force" in capsys.readouterr().err
