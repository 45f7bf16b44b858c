"""Sweeps (expansion, resume, OOM cells), study tables, the precision lab and the compare verdict."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.analysis.verdicts import within_run_verdict
from sysprof.profiler_core.base.config import ConfigError
from sysprof.profiler_core.session import passes as session_module
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.derived import (
    compile_table,
    passes_table,
    precision_memory_table,
    precision_table,
    warmup_table,
)
from sysprof.profiler_core.studies.document import Study, sweep_rows
from sysprof.profiler_core.studies.tables import compact, pivot, sweep_document

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = dict(model="tiny", ctx=16, batch=2, warmup=0, steps=2, device="cpu")


def test_expand_is_the_cartesian_product_in_order():
    configs = sweep.expand({"model": ["tiny"], "ctx": [16, 32], "compile": [False, True]})
    assert [(c.ctx, c.compile) for c in configs] == [(16, False), (16, True), (32, False), (32, True)]


def test_expand_rejects_an_impossible_cell_with_its_reason():
    with pytest.raises(ConfigError, match="cell model=small, heads=7: heads \\(7\\) must divide"):
        sweep.expand({"model": ["small"], "heads": [12, 7]})


@pytest.fixture
def oom_for_ctx_32(monkeypatch):
    """Cells with ctx 32 replay the events of a real OOM on the H200 (2.7B, batch 64, ctx 4096)."""
    real_argv = session_module.runner_argv

    def argv(cfg, run_dir, capture="none", launcher=()):
        if cfg.ctx != 32:
            return real_argv(cfg, run_dir, capture)
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "oom_h200.jsonl"),
                "--run-dir", str(run_dir)]
    monkeypatch.setattr(session_module, "runner_argv", argv)


@pytest.mark.slow
def test_sweep_with_an_oom_cell_continues_and_resumes_only_unfinished(tmp_path, oom_for_ctx_32):
    configs = sweep.expand({**{k: [v] for k, v in TINY.items()}, "ctx": [16, 32, 24]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx"])
    events = []
    summaries = sweep.run(sweep_dir, events.append)
    assert [s["status"] for s in summaries] == ["ok", "oom", "ok"]
    assert summaries[1]["error"]["kind"] == "oom" and summaries[1]["error"]["phase"]
    # a cell killed half-way (no summary) runs again; finished and OOM cells do not
    (sweep.cell_dir(sweep_dir, 2, configs[2]) / "summary.json").unlink()
    events.clear()
    sweep.run(sweep_dir, events.append)
    assert events[0] == {"event": "study", "cells": 3, "pending": 1}
    assert [e["index"] for e in events if e["event"] == "cell"] == [2]
    steps = (sweep.cell_dir(sweep_dir, 2, configs[2]) / "steps.jsonl").read_text().splitlines()
    assert len(steps) == 2  # the rerun starts clean: no steps of the abandoned attempt
    document = sweep_document(Study.load(sweep_dir))
    assert [c["status"] for c in document["cells"]] == ["ok", "oom", "ok"]
    assert set(document["cells"][0]) >= {"config", "status", "phases"}


@pytest.mark.slow
def test_sweep_rows_have_the_seed_columns_and_pivot(tmp_path):
    configs = sweep.expand({**{k: [v] for k, v in TINY.items()}, "ctx": [16, 24]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx"])
    sweep.run(sweep_dir, lambda e: None)
    rows = sweep_rows(sweep_dir)
    for column in ("model", "ctx", "dtype", "device", "batch", "compile", "status", "fwd mean ms", "fwd std ms",
                   "bwd mean ms", "bwd std ms", "fwd+bwd mean ms", "fwd+bwd std ms"):
        assert column in rows[0]
    for row in rows:
        assert row["fwd+bwd mean ms"] == pytest.approx(row["fwd mean ms"] + row["bwd mean ms"])
    table = pivot(rows, ["ctx"], ["compile"], "fwd mean ms")
    assert list(table["ctx"]) == [16, 24] and list(table.columns) == ["ctx", "compile=False"]
    assert "±" in compact([{"fwd mean ms": 1.0, "fwd std ms": 0.5}])[0]["fwd ms"]



@pytest.mark.slow
def test_pivot_marks_oom_cells_keeps_all_oom_rows_and_takes_text_values(tmp_path, oom_for_ctx_32):
    configs = sweep.expand({**{k: [v] for k, v in TINY.items()}, "ctx": [16, 32], "batch": [2, 3]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx", "batch"])
    sweep.run(sweep_dir, lambda e: None)
    rows = sweep_rows(sweep_dir)
    table = pivot(rows, ["ctx"], ["batch"], "fwd mean ms").to_dict("records")
    assert [r["ctx"] for r in table] == [16, 32]  # the row where every cell ran out of memory stays
    assert table[1] == {"ctx": 32, "batch=2": "OOM", "batch=3": "OOM"}
    assert all(isinstance(table[0][f"batch={b}"], float) for b in (2, 3))
    status = pivot(rows, ["ctx"], ["batch"], "status").to_dict("records")
    assert status == [{"ctx": 16, "batch=2": "ok", "batch=3": "ok"}, {"ctx": 32, "batch=2": "oom", "batch=3": "oom"}]
    with pytest.raises(KeyError, match="no finished cell has a value for 'peak GiB' \\(ran on .*\\); .*CUDA only"):
        pivot(rows, ["ctx"], ["batch"], "peak GiB")
    with pytest.raises(KeyError, match="no column 'seq'; choose from"):
        pivot(rows, ["seq"], ["batch"], "fwd mean ms")


@pytest.mark.slow
def test_sweep_cli_json_and_bad_values(cli_env, tmp_path):
    args = [sys.executable, "-m", "sysprof.profiler_core", "sweep", "--model", "tiny", "--device", "cpu",
            "--ctx", "16,24", "--batch", "2", "--warmup", "0", "--steps", "2", "--json"]
    result = subprocess.run(args, env=cli_env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [c["config"]["ctx"] for c in cells] == [16, 24] and all(c["status"] == "ok" for c in cells)
    for extra, reason in ((["--compile", "maybe"], "takes true/false values"), (["--ctx", "²"], "takes integers"),
                          (["--output", "/proc/no/table.md"], "not a writable folder"),
                          (["--output", "table.txt"], "end the name in"), (["--ctx", ","], "--ctx: no value"),
                          (["--pivot", "ctx:dmodel"], "--pivot/--value: no column 'dmodel'"),
                          (["--pivot", "ctx", "--value", "fwd ms"], "no column 'fwd ms'")):
        bad = subprocess.run(args[:-1] + extra, env=cli_env, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and reason in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 1  # the refused sweeps created nothing


def _row(**values):
    base = {"model": "small", "ctx": 256, "batch": 4, "mode": "train", "status": "ok", "compile s": None,
            "first step ms": None, "params": 128625408, "d_model": 768, "d_ff": 3072, "layers": 12, "heads": 12,
            "device type": "cuda", "peak GiB": None, "peak reserved GiB": None}
    for label in ("fwd", "bwd", "fwd+bwd", "bwd+opt", "step"):
        base |= {f"{label} mean ms": None, f"{label} std ms": None, f"{label} median ms": None}
    return base | values


def test_warmup_table_puts_modes_side_by_side_with_first_step_penalty_and_times():
    rows = [_row(warmup=0, mode="forward", **{"fwd mean ms": 50.0, "fwd std ms": 40.0, "first step ms": 150.0,
                                              "warm-up s": 0.0, "total s": 1.2}),
            _row(warmup=0, mode="forward_backward", status="oom"),
            _row(warmup=5, mode="forward", **{"fwd mean ms": 30.0, "fwd std ms": 0.3, "first step ms": 30.3,
                                              "warm-up s": 0.9, "total s": 1.5}),
            _row(warmup=5, mode="forward_backward", **{"fwd+bwd mean ms": 90.0, "first step ms": 91.0})]
    table = warmup_table(rows)
    assert [t["warm-up steps"] for t in table] == [0, 5] and [t["fwd first / mean"] for t in table] == [3.0, 1.01]
    assert (table[0]["fwd status"], table[0]["fwd+bwd status"], table[1]["fwd+bwd mean ms"]) == ("ok", "oom", 90.0)
    assert (table[1]["fwd warm-up s"], table[1]["fwd total s"]) == (0.9, 1.5)
    assert {"params", "d_ff", "layers", "heads"} <= set(table[0])


def test_compile_table_per_model_and_ctx_with_a_backward_optimizer_row():
    rows = []
    for ctx, scale in ((256, 1.0), (512, 2.0)):
        rows += [_row(ctx=ctx, mode="forward", compile=False, **{"fwd mean ms": 10.0 * scale}),
                 _row(ctx=ctx, mode="forward", compile=True, **{"fwd mean ms": 8.0 * scale, "compile s": 12.0}),
                 _row(ctx=ctx, mode="train", compile=False, **{"step mean ms": 30.0 * scale, "bwd+opt mean ms": 20.0}),
                 _row(ctx=ctx, mode="train", compile=True, **{"step mean ms": 24.0 * scale, "bwd+opt mean ms": 16.0,
                                                              "peak GiB": 3.5 * scale})]
    table = compile_table(rows)
    assert [(t["ctx"], t["measured"]) for t in table] == [(256, "forward"), (256, "train step"),
                                                          (256, "backward+optimizer"), (512, "forward"),
                                                          (512, "train step"), (512, "backward+optimizer")]
    assert [t["speedup"] for t in table] == [1.25] * 6 and table[0]["compile s"] == 12.0
    assert [t["compiled peak GiB"] for t in table[3:]] == [None, 7.0, 7.0]  # the train cell's peak, per its mode
    assert {t["eager peak GiB"] for t in table} == {None}  # the eager cells measured none (a CPU study)


def test_precision_table_per_measured_part_with_medians_and_params():
    rows = [_row(dtype="fp32", matmul_precision="highest", **{"step mean ms": 61.0, "step median ms": 60.0,
                                                              "fwd mean ms": 20.0, "fwd median ms": 20.0}),
            _row(dtype="fp32", matmul_precision="high", **{"step mean ms": 31.0, "step median ms": 30.0,
                                                           "fwd mean ms": 10.0, "fwd median ms": 10.0}),
            _row(dtype="bf16", matmul_precision="highest", **{"step mean ms": 21.0, "step median ms": 20.0,
                                                              "fwd mean ms": 5.0, "fwd median ms": 5.0})]
    table = precision_table(rows)
    assert [t["measured"] for t in table] == ["forward", "train step"]
    step = table[1]
    assert step["params"] == 128625408 and (step["fp32 mean ms"], step["fp32 median ms"]) == (61.0, 60.0)
    assert (step["fp32 speedup"], step["tf32 speedup"], step["bf16 speedup"]) == (1.0, 2.0, 3.0)  # from medians
    assert table[0]["bf16 speedup"] == 4.0
    tokens = rows[0]["batch"] * rows[0]["ctx"]  # forward and train-step throughput per precision, from the medians
    assert (table[0]["fp32 tokens/s"], table[0]["bf16 tokens/s"]) == (tokens * 1000 / 20.0, tokens * 1000 / 5.0)
    assert step["bf16 tokens/s"] == tokens * 1000 / 20.0


def test_passes_table_gives_the_ratio_of_the_medians():
    row = _row(mode="forward_backward", **{"fwd mean ms": 11.0, "fwd median ms": 10.0, "fwd+bwd mean ms": 31.0,
                                          "fwd+bwd median ms": 30.0})
    entry = passes_table([row])[0]
    assert entry["ratio fwd+bwd / fwd"] == 3.0 and entry["params"] == 128625408 and entry["d_ff"] == 3072


@pytest.mark.slow
def test_precision_lab_computed_live_on_cpu():
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core.runner.precision_lab", "--device", "cpu"],
                            capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    lab = json.loads(result.stdout)
    sums = [row["sum"] for row in lab["accumulation"]]
    assert sums[0] == pytest.approx(10.0001335, abs=1e-6)  # fp32 accumulates 0.01 with a tiny error
    assert sums[1] == pytest.approx(9.953125)  # fp16 accumulator: the sum stalls as the spacing grows
    assert sums[2] == sums[3] == pytest.approx(10.0021362, abs=1e-6)  # fp16 addends: their rounding error stays
    for dtype, name in (("fp16", "float16"), ("bf16", "bfloat16")):
        table = lab["autocast"][dtype]
        assert table["parameters"] == "float32" and table["gradients"] == "float32"
        assert table["fc1 output"] == name and table["logits"] == name and table["loss"] == "float32"


def test_a_failed_precision_lab_is_a_failed_study_exit_1(tmp_path, monkeypatch, capsys):
    """The lab's process dying (here: a real interpreter exiting 3 with a message) ends the study like any failed
    study: exit 1 and its one-line reason, nothing run, no traceback."""
    from sysprof.profiler_core.cli import main as cli_main
    from sysprof.profiler_core.studies.kinds import precision as precision_study

    real_run = subprocess.run
    failing = [sys.executable, "-c", "import sys; sys.stderr.write('lab exploded\\n'); sys.exit(3)"]
    monkeypatch.setattr(precision_study.subprocess, "run", lambda argv, **kw: real_run(failing, **kw))
    code = cli_main.main(["study", "precision", "--models", "tiny", "--device", "cpu", "--runs-dir", str(tmp_path)])
    assert code == 1
    assert capsys.readouterr().err.strip() == "sysprof: error: precision lab failed: lab exploded"
    assert not any(tmp_path.iterdir())  # the lab runs first: no study directory was made


def test_one_process_verdict_rule():
    """One process per side: the within-run rule (gap > 2·√(σA²+σB²)) and the minimum effect, flagged as such."""
    a = {"median_ms": 100.0, "std_ms": 1.0, "n": 10}
    assert within_run_verdict(a, {"median_ms": 97.5, "std_ms": 1.0, "n": 10}) == "within noise"  # 2.5 < 2·√2
    assert within_run_verdict(a, {"median_ms": 96.0, "std_ms": 1.0, "n": 10}) == "faster"
    assert within_run_verdict(a, {"median_ms": 104.0, "std_ms": 1.0, "n": 10}) == "slower"
    assert within_run_verdict(a, {"median_ms": 50.0, "std_ms": 0.0, "n": 1}) == "too few steps"
    rows = compare_summaries({"phases": {"step": a}}, {"phases": {"step": {"median_ms": 50.0, "std_ms": 1.0, "n": 10}}})
    assert rows[0]["ratio_b_over_a"] == 0.5 and rows[0]["verdict"] == "noise unknown"  # never faster from 1 process
    quiet = {"median_ms": 100.0, "std_ms": 0.1, "n": 10}
    [row] = compare_summaries({"phases": {"step": quiet}}, {"phases": {"step": {**quiet, "median_ms": 99.0}}})
    assert row["verdict"] == "within noise"  # beyond 2σ of the steps, but 1% < the 2% minimum effect
    assert row["reason"].endswith("; effect 1.0% < 2.0% (--min-effect)")


def test_precision_memory_table_gives_delta_and_percent_for_allocated_and_reserved():
    rows = [_row(dtype="fp32", matmul_precision="highest", **{"peak GiB": 4.0, "peak reserved GiB": 5.0}),
            _row(dtype="bf16", matmul_precision="highest", **{"peak GiB": 3.0, "peak reserved GiB": 4.5}),
            _row(model="medium", dtype="fp32", matmul_precision="highest", status="oom", **{"peak GiB": 80.0,
                                                                                           "peak reserved GiB": None}),
            _row(model="medium", dtype="bf16", matmul_precision="highest", **{"peak GiB": 60.0,
                                                                               "peak reserved GiB": 62.0})]
    small, medium = precision_memory_table(rows)
    assert (small["Δ allocated GiB"], small["Δ allocated %"]) == (-1.0, -25.0)
    assert (small["Δ reserved GiB"], small["Δ reserved %"]) == (-0.5, -10.0)
    assert medium["status"] == "oom/ok" and medium["Δ reserved %"] is None and medium["Δ allocated %"] == -25.0
    assert precision_memory_table([_row(dtype="fp32", matmul_precision="highest", **{"peak GiB": None}),
                                   _row(dtype="bf16", matmul_precision="highest", **{"peak GiB": None})]) == []
