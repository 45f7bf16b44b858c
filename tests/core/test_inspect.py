"""`sysprof inspect`: the model on the meta device. Counted FLOPs must equal the closed form the tool uses for
the built-in model; the meta counts of parameters, optimizer state and saved activations must equal what a real
CPU model has; the CLI reports a user's mistakes in one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from sysprof.models.presets import PRESETS, count_params, step_flops
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.errors import InspectFailed
from sysprof.profiler_core.cli.main import main
from sysprof.profiler_core.runner.inspect_model import inspect_config, module_rows
from sysprof.profiler_core.runner.meta_model import (
    FlopCounter,
    SavedBytes,
    build_on_meta,
    counted_step_flops,
    meta_batch,
)
from sysprof.profiler_core.runner.user_model import build_user_model
from sysprof.profiler_core.runner.workload import build_workload
from sysprof.profiler_core.session.inspecting import read_inspect_output

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "tests" / "data" / "models" / "nanogpt_style" / "gpt.py"
TINY = {"model": "tiny", "ctx": 32, "batch": 2, "device": "cpu"}


@pytest.mark.parametrize("overrides", [
    {"mode": "train", "attention": "naive"},
    {"mode": "forward", "attention": "sdpa"},
    {"mode": "forward_backward", "attention": "sdpa", "model": "custom", "d_model": 96, "d_ff": 200, "layers": 3,
     "heads": 6, "vocab": 777, "max_ctx": 64},
])
def test_counted_flops_equal_the_closed_form_of_the_built_in_model(overrides):
    cfg = RunConfig(**TINY | overrides)
    report = inspect_config(cfg)
    expected = step_flops(cfg.spec(), cfg.batch, cfg.ctx, cfg.mode)
    assert report["flops"]["step"] == report["closed_form_flops"] == expected
    assert report["params"]["total"] == count_params(cfg.spec())
    backward = report["flops"]["backward"]
    assert backward is None if cfg.mode == "forward" else backward == 2 * report["flops"]["forward"]


@pytest.mark.parametrize("config", [
    {"attention": "naive"}, {"attention": "sdpa"},
    {"model_factory": f"{GPT}:build"}, {"model_factory": f"{GPT}:build", "dtype": "bf16", "mode": "forward"},
])
def test_the_light_counter_gives_flop_counter_modes_totals(config):
    """The inspector skips FlopCounterMode's decomposition of uncounted ops (seconds on 2.7B): same totals."""
    cfg = RunConfig(**TINY | config)
    totals = []
    for counter in (FlopCounter(), FlopCounterMode(display=False)):
        model = build_on_meta(cfg)[0]
        tokens, _ = meta_batch(cfg)
        with counter:
            output = model(tokens)
            logits = output if isinstance(output, torch.Tensor) else output.logits
            if cfg.mode != "forward":
                logits.float().sum().backward()
        totals.append(counter.total if isinstance(counter, FlopCounter) else counter.get_total_flops())
    assert totals[0] == totals[1] > 0


def test_meta_counts_equal_a_real_cpu_model_and_optimizer():
    cfg = RunConfig(**TINY, mode="train")
    report = inspect_config(cfg)
    work = build_workload(cfg, torch.device("cpu"))
    params = list(work.model.parameters())
    assert report["memory"]["weights_bytes"] == sum(t.numel() * t.element_size() for t in
                                                    (*params, *work.model.buffers()))
    assert report["memory"]["gradients_bytes"] == sum(p.numel() * 4 for p in params)
    work.backward(work.forward())
    work.optimizer_step()  # AdamW's exp_avg and exp_avg_sq appear at the first step
    assert work.optimizer is not None
    real_state = sum(t.numel() * t.element_size() for state in work.optimizer.state.values()
                     for t in state.values() if t.dim() > 0)
    assert report["memory"]["optimizer_state_bytes"] == real_state == 2 * 4 * report["params"]["trainable"]


def test_saved_activations_on_meta_equal_those_of_a_real_forward():
    cfg = RunConfig(**TINY, mode="forward_backward")
    work = build_workload(cfg, torch.device("cpu"))
    saved = SavedBytes(work.model)
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda tensor: tensor):
        work.forward()
    assert saved.total > 0
    assert inspect_config(cfg)["memory"]["activations_bytes"] == saved.total


def test_a_users_model_is_counted_like_the_real_one():
    cfg = RunConfig(**TINY, model_factory=f"{GPT}:build", model_args=("n_layer=1",))
    report = inspect_config(cfg)
    model, info = build_user_model(cfg)
    assert report["params"]["total"] == info["params"] == sum(p.numel() for p in model.parameters())
    assert report["closed_form_flops"] is None and report["factory"]["kwargs"]["n_layer"] == 1
    # a GPT-2 block: qkv and output projections, a 4× MLP, the T² attention terms, the tied head
    d, t, b, v = 128, 32, 2, 10_000
    forward = b * (2 * t * (4 * d * d + 8 * d * d + d * v) + 4 * t * t * d)
    assert report["flops"]["forward"] == forward and report["flops"]["step"] == 3 * forward
    assert counted_step_flops(cfg) == (3 * forward, None)


def test_module_rows_fold_repeated_blocks():
    cfg = RunConfig(**TINY)
    rows = {row["name"]: row for row in inspect_config(cfg, depth=3)["modules"]}
    assert rows["layers.*"]["count"] == cfg.spec().layers
    assert rows["layers.*.attn"]["params"] == cfg.spec().layers * 4 * cfg.spec().d_model ** 2
    top = [row for row in rows.values() if row["depth"] == 1]
    assert sum(row["params"] for row in top) == count_params(cfg.spec())
    assert all(row["depth"] <= 1 for row in module_rows(torch.nn.Sequential(torch.nn.Linear(2, 2)), 1))


def test_a_model_that_cannot_run_on_meta_keeps_its_parameter_table():
    report = inspect_config(RunConfig(**TINY, model_factory=f"{GPT}:broken"))
    assert report["params"]["total"] == 10_000 * 128 and report["flops"] is None
    assert "shapes do not line up" in report["notes"][0]
    assert counted_step_flops(RunConfig(**TINY, model_factory=f"{GPT}:broken"))[0] is None


def sysprof(args, env):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "inspect", *args], env=env,
                          capture_output=True, text=True, timeout=180, cwd=ROOT)


@pytest.mark.slow
def test_cli_prints_json_and_tables(cli_env):
    result = sysprof(["--model", "tiny", "--ctx", "32", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["flops"]["step"] == report["closed_form_flops"]
    tiny = PRESETS["tiny"]
    assert report["residual_stream_per_layer_bytes"] == 4 * 32 * tiny.d_model * 4  # B·T·d·fp32 bytes, default batch 4
    text = sysprof(["--model", "tiny", "--ctx", "32"], cli_env)
    assert text.returncode == 0 and "counted and closed form equal" in text.stdout
    assert "residual stream per layer (B·T·d)" in text.stdout


@pytest.mark.parametrize(("args", "code", "says"), [
    ([f"--model-factory={GPT}:nope"], 2, "has no attribute 'nope'"),
    ([f"--model-factory={GPT}:needs_more"], 2, "cannot fill n_experts"),
    ([f"--model-factory={GPT}:build", "--model-arg", "n_head=3"], 1, "AssertionError"),  # raises in __init__
    (["--depth", "0"], 2, "--depth must be 1 or more"),
])
@pytest.mark.slow
def test_cli_mistakes_are_one_line(cli_env, tmp_path, args, code, says):
    result = sysprof(["--model", "tiny", "--runs-dir", str(tmp_path), *args], cli_env)
    assert result.returncode == code
    assert result.stderr.count("\n") == 1 and says in result.stderr and "Traceback" not in result.stderr
    if code == 1:  # the user's code raised: its traceback is kept, and the one line says where
        assert "Traceback" in (tmp_path / "inspect-stderr.log").read_text()
        assert "inspect-stderr.log" in result.stderr


@pytest.mark.slow
def test_a_run_of_a_users_model_reports_counted_flops(cli_env, tmp_path):
    args = ["run", "--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "0", "--steps",
            "2", "--model-factory", f"{GPT}:build", "--runs-dir", str(tmp_path), "--json"]
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=cli_env, capture_output=True,
                            text=True, timeout=180, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    counted = inspect_config(RunConfig(**TINY, model_factory=f"{GPT}:build"))["flops"]["step"]
    assert summary["flops_per_step"] == counted
    assert summary["tflops"] == pytest.approx(counted / (summary["phases"]["step"]["median_ms"] / 1e3) / 1e12)
    manifest = json.loads((Path(summary["run_dir"]) / "manifest.json").read_text())
    assert manifest["model"]["flops_per_step"] == counted


def no_python(tmp_path: Path, how: str) -> str:
    """A python that does not start: missing, or a file that may not be executed."""
    path = tmp_path / "python"
    if how == "not executable":
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    return str(path)


@pytest.mark.parametrize(("how", "why"), [("missing", "No such file or directory"),
                                          ("not executable", "Permission denied")])
def test_an_inspector_that_cannot_start_is_one_line(tmp_path, monkeypatch, capsys, how, why):
    python = no_python(tmp_path, how)
    monkeypatch.setattr(sys, "executable", python)
    code = main(["inspect", "--model", "tiny", "--runs-dir", str(tmp_path / "runs")])
    assert code == 1
    assert capsys.readouterr().err == f"sysprof: error: cannot start the inspector ({python}): {why}\n"


def test_an_inspector_killed_before_it_reported_says_so(tmp_path):
    with pytest.raises(InspectFailed, match="^the inspector was killed by SIGKILL before it reported$"):
        read_inspect_output("", "", -9, tmp_path)


def test_models_tabulates_the_residual_stream_per_layer_over_contexts(capsys):
    assert main(["models", "--ctxs", "128,1024", "--batch", "4", "--dtype", "bf16", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    residual = {row["model"]: row for row in document["residual_stream_per_layer"]}
    assert residual["small"]["ctx 128 MiB"] == 4 * 128 * 768 * 2 / 2**20  # B·T·d·bytes
    assert residual["2.7B"]["ctx 1024 MiB"] == 4 * 1024 * 2560 * 2 / 2**20
    assert [row["name"] for row in document["presets"]] == list(PRESETS)
    for bad, reason in ((["--ctxs", "0"], "--ctxs takes comma-separated positive integers"),
                        (["--ctxs", "128", "--batch", "0"], "--batch must be a positive integer")):
        assert main(["models", *bad]) == 2 and reason in capsys.readouterr().err
