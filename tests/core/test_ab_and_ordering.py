"""Drift cannot pose as a change: `sysprof ab` runs A and B interleaved in fresh processes;
compare says whether two sides interleaved, withholds a verdict between sides that ran one after the other, and
names a side whose processes drift. Real tiny CPU processes; fused against foreach AdamW is a real change."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.compare import NOT_INTERLEAVED, compare_summaries, ordering, verdict_text
from sysprof.profiler_core.analysis.ordering import drift, interleaved
from sysprof.profiler_core.documents.run_document import Run

ROOT = Path(__file__).resolve().parents[2]
SHARED = ["--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1", "--steps", "6"]
FOREACH, FUSED = "--optimizer-impl foreach", "--optimizer-impl fused"


def sysprof(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)


@pytest.mark.slow
def test_ab_runs_the_two_configs_interleaved_and_compares_them(cli_env, tmp_path):
    done = sysprof("ab", *SHARED, "--a", FOREACH, "--b", FUSED, "--repeats", "2", "--json", env=cli_env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["interleaved"] is True
    assert document["config_differences"] == {"optimizer_impl": ["foreach", "fused"]}
    runs = [Run.load(Path(document[side])) for side in ("a", "b")]
    order = sorted((p["ran"]["start"], side) for side, run in zip("AB", runs)
                   for p in run.summary["repeats"]["processes"])
    assert "".join(side for _, side in order) == "ABBA"  # the second round reversed
    rows = {row["phase"]: row for row in document["phases"]}
    optimizer = rows["optimizer"]
    assert optimizer["n_a"] == optimizer["n_b"] == 2
    # fused is usually faster, but how much beyond noise depends on the machine's load: only the logic is asserted
    assert optimizer["verdict"] in ("faster", "slower", "within noise"), optimizer
    assert optimizer["verdict"] != "faster" or optimizer["ratio_b_over_a"] < 1, optimizer
    assert optimizer["verdict"] != "slower" or optimizer["ratio_b_over_a"] > 1, optimizer
    assert all(row["interleaved"] is True for row in document["phases"])


@pytest.mark.slow
def test_groups_run_one_after_the_other_get_no_verdict_and_the_output_says_why(cli_env, tmp_path):
    dirs = []
    for options in (FOREACH, FUSED):
        done = sysprof("run", *SHARED, *options.split(), "--repeats", "2", "--json", env=cli_env)
        assert done.returncode == 0, done.stderr
        dirs.append(json.loads(done.stdout)["run_dir"])
    as_json = json.loads(sysprof("compare", *dirs, "--force", "--json", env=cli_env).stdout)
    assert as_json["interleaved"] is False
    optimizer = next(row for row in as_json["phases"] if row["phase"] == "optimizer")
    assert optimizer["ratio_b_over_a"] > 0  # the gap is still shown, only not laid on the config
    # whether a gap is beyond the steps' noise depends on the machine's load; a verdict on the config never comes
    assert not {row["verdict"] for row in as_json["phases"]} & {"faster", "slower"}
    assert all("one after the other" in row["reason"] for row in as_json["phases"] if row["verdict"] == NOT_INTERLEAVED)
    text = sysprof("compare", *dirs, "--force", env=cli_env).stdout
    assert "ran one after the other, not interleaved" in text and "sysprof ab" in text


@pytest.mark.parametrize("arguments, message", [
    (["--a", FOREACH, "--b", FOREACH], "A and B are the same config"),
    (["--a", "", "--b", "--ctx 32"], "A and B are the same config"),  # B repeats a shared option
    (["--a", FOREACH, "--b", "--ctx 0"], "--b: "),
    (["--a", FOREACH, "--b", "--no-such-option 3"], "--b: not a run option: --no-such-option 3"),
    (["--a", FOREACH, "--b", FUSED, "--repeats", "1"], "ab needs at least 2 processes per side"),
    (["--a", "--ctx '32", "--b", FUSED], "--a: No closing quotation"),
    (["--a", FOREACH + " --repeats 1", "--b", FUSED], "a side's --repeats below 2"),
    (["--a", "", "--b", "--repeats 5"], "A and B are the same config"),  # how many processes: not the steps
    (["--a", "--optim fused", "--b", FUSED], "--a: not a run option: --optim fused"),  # never a guessed option
    (["--a=", "--b=--compile", "--repeats", "1"], "ab needs at least 2 processes per side"),  # a lone flag with =
])
def test_a_pair_that_cannot_answer_is_one_line_before_anything_runs(cli_env, tmp_path, arguments, message):
    done = sysprof("ab", *SHARED, *arguments, env=cli_env)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "runs").exists()  # nothing ran, nothing was made


def test_interleaving_is_told_from_the_windows_and_unknown_without_them():
    a, b = [(0.0, 1.0), (3.0, 4.0)], [(1.0, 2.0), (2.0, 3.0)]
    assert interleaved(a, b) is True and interleaved(a[:1], b) is False and interleaved(None, b) is None
    saved_before = {"phases": {"step": {"median_ms": 10.0, "n": 5}}, "config": {}}
    assert ordering(saved_before, saved_before)["interleaved"] is None


def test_drift_is_a_trend_over_run_order_not_a_spread():
    windows = [(float(i), i + 0.5) for i in range(5)]
    rising = drift([10.0, 10.4, 10.9, 11.5, 12.2], windows)
    assert rising is not None and rising["tau"] == 1.0 and rising["change_pct"] == 22.0
    assert drift([10.0, 12.2, 10.4, 11.5, 10.9], windows) is None  # as wide a spread, no trend
    assert drift([10.0, 10.4, 10.9], windows[:3]) is None  # too few to tell


def test_a_large_effect_reads_as_a_ratio():
    assert verdict_text({"verdict": "faster", "speedup_a_over_b": 4.31}) == "4.3× faster"
    assert verdict_text({"verdict": "slower", "speedup_a_over_b": 0.4}) == "2.5× slower"
    assert verdict_text({"verdict": "faster", "speedup_a_over_b": 1.61}) == "61% faster"


def test_a_verdict_between_ordered_sides_is_withheld_with_its_effect_in_the_reason():
    def group(medians: list[float], start: float) -> dict:
        processes = [{"status": "ok", "phases": {"step": m}, "std_ms": {"step": 0.1}, "tokens_per_s": None,
                      "ran": {"start": start + i, "end": start + i + 0.5}} for i, m in enumerate(medians)]
        return {"phases": {"step": {"median_ms": sorted(medians)[1], "std_ms": 0.1, "n": 20}},
                "repeats": {"n": 3, "ok": 3, "failed": 0, "processes": processes}}

    a, b = group([10.0, 10.1, 10.2], 0.0), group([8.0, 8.1, 8.2], 10.0)
    row = compare_summaries(a, b)[0]
    assert row["verdict"] == NOT_INTERLEAVED and row["reason"].startswith("B 2") and row["interleaved"] is False
    b_between = group([8.0, 8.1, 8.2], 0.25)  # its processes between A's
    assert compare_summaries(a, b_between)[0]["verdict"] == "faster"


def test_one_sides_repeatable_options_never_leak_into_the_other_or_the_shared_ones():
    from sysprof.profiler_core.base.options import OneLineParser, add_config_options
    from sysprof.profiler_core.studies.kinds.ab.sides import side_config

    parser = OneLineParser()
    add_config_options(parser)
    shared = parser.parse_args(["--device", "cpu", "--model-factory",
                                "tests/data/models/nanogpt_style/gpt.py:build", "--model-arg", "n_layer=1"])
    side_a, side_b = side_config(shared, "--model-arg dropout=0.1", "a"), side_config(shared, "", "b")
    assert side_a.model_args == ("n_layer=1", "dropout=0.1") and side_b.model_args == ("n_layer=1",)
    assert shared.model_args == ["n_layer=1"]
