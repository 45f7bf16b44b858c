"""`--model-factory`: the user's own model, timed by the real runner on the CPU (a GPT-2-style model in
tests/data/models, imported by path with a neighbour module), and every way of pointing at it wrongly."""
from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.runner.user_model import (
    DIMENSION_NAMES,
    attention_note,
    build_user_model,
    factory_kwargs,
    parse_model_args,
)

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "tests" / "data" / "models" / "nanogpt_style" / "gpt.py"
SMALL_RUN = ["--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1", "--steps", "2"]


def sysprof(args, env):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=180, cwd=ROOT)


def test_external_model_is_timed_and_recorded(cli_env, tmp_path):
    result = sysprof(["run", *SMALL_RUN, "--model-factory", f"{GPT}:build", "--model-arg", "n_layer=1", "--json"],
                     cli_env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    manifest = json.loads((Path(summary["run_dir"]) / "manifest.json").read_text())
    model = manifest["model"]
    # nanoGPT's names filled from the tiny preset's dims; the override wins.
    assert model["kwargs"] == {"vocab_size": 10000, "block_size": 32, "n_embd": 128, "n_layer": 1, "n_head": 4,
                               "attention": "naive"}
    assert model["class"] == "GPT" and model["file"] == str(GPT) and len(model["sha256"]) == 64
    # the real count of this model (tied head counted once), not the built-in model's formula
    assert summary["params"] == model["params"] == 10000 * 128 + 32 * 128 + 1 * (12 * 128 * 128 + 13 * 128) + 2 * 128
    assert summary["phases"]["step"]["n"] == 2 and summary["mfu"] is None and summary["tokens_per_s"] > 0
    assert "--model-factory" in manifest["command"] and "--model-arg n_layer=1" in manifest["command"]
    assert "model GPT from" in result.stderr  # printed, so the run can be reproduced


@pytest.mark.parametrize("factory, args, reason", [
    ("tests/data/models/nanogpt_style/nope.py:build", [], "no such file"),
    ("not_a_package_anywhere.models:build", [], "no module named 'not_a_package_anywhere'"),
    (f"{GPT}:missing", [], "has no attribute 'missing'"),
    (f"{GPT}:GPTConfig", [], "returned a GPTConfig, not a torch.nn.Module"),  # every parameter filled, wrong kind
    (f"{GPT}:needs_more", [], "cannot fill n_experts"),
    (f"{GPT}:build", ["--model-arg", "n_experts=4"], "takes no parameter n_experts"),
    (f"{GPT}:not_a_module", [], "returned a dict, not a torch.nn.Module"),
    ("build", [], "model_factory must be module:callable"),
])
def test_bad_factories_are_one_line_exit_2_and_leave_nothing(cli_env, tmp_path, factory, args, reason):
    result = sysprof(["run", *SMALL_RUN, "--model-factory", factory, *args], cli_env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert reason in lines[-1] and "Traceback" not in result.stderr
    assert not any((tmp_path / "runs").glob("*/manifest.json"))  # nothing ran: no run directory left


@pytest.mark.parametrize("options, says", [
    (["--model-factory", "notmodel.py:build"], "model factory notmodel.py:build returned a int, not a torch.nn.Module"),
    (["--optimizer", "torch.optim.SGD", "--optimizer-arg", "bogus=1"], "optimizer torch.optim.SGD rejects"),
])
def test_a_config_the_runner_refuses_is_the_error_line_alone(cli_env, tmp_path, options, says):
    """The runner finds these only once it has started (and said hello): no banner may come before the error."""
    (tmp_path / "notmodel.py").write_text("def build(vocab_size):\n    return 1\n")
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *SMALL_RUN, *options], env=cli_env,
                            capture_output=True, text=True, timeout=180, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2 and output.startswith(f"sysprof: error: {says}") and output.count("\n") == 1, output


def test_a_model_that_raises_fails_the_run_and_keeps_its_traceback(cli_env, tmp_path):
    result = sysprof(["run", *SMALL_RUN, "--model-factory", f"{GPT}:broken", "--json"], cli_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed"
    assert summary["error"]["message"] == "ValueError: shapes do not line up in Broken.forward"
    assert summary["error"]["phase"] == "forward"
    log = (Path(summary["run_dir"]) / "stderr.log").read_text()
    assert "Traceback" in log and "gpt.py" in log  # the full traceback of the user's code, kept


def test_own_loss_and_a_sweep_over_the_external_model(cli_env, tmp_path):
    result = sysprof(["sweep", *SMALL_RUN, "--ctx", "16,32", "--model-factory", f"{GPT}:build", "--model-arg",
                      "n_layer=1", "--loss", f"{GPT}:token_loss", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"] and [c["config"]["ctx"] for c in cells] == [16, 32]
    assert all(c["config"]["model_args"] == ["n_layer=1"] and c["config"]["loss"].endswith(":token_loss")
               for c in cells)


def test_model_args_file_fills_every_cell_and_the_attention_axis_reaches_the_model(cli_env, tmp_path):
    (tmp_path / "gpt.yaml").write_text("n_layer: 1\nn_head: 8\ndropout: 0.0\n")
    result = sysprof(["sweep", *SMALL_RUN, "--model-factory", f"{GPT}:build",
                      "--model-args", str(tmp_path / "gpt.yaml"),
                      "--model-arg", "n_head=2", "--attention", "naive,sdpa", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert all(c["config"]["model_args"] == ["n_layer=1", "dropout=0.0", "n_head=2"] for c in cells)
    kwargs = [json.loads((Path(c["run_dir"]) / "manifest.json").read_text())["model"]["kwargs"] for c in cells]
    assert [k["attention"] for k in kwargs] == ["naive", "sdpa"] and {k["n_head"] for k in kwargs} == {2}


@pytest.mark.parametrize("command", [["run"], ["sweep"], ["study", "compile"]])
def test_a_bad_model_args_file_is_one_line_exit_2(cli_env, tmp_path, command):
    (tmp_path / "args.yaml").write_text("- n_layer\n- 1\n")
    result = sysprof([*command, *SMALL_RUN, "--model-factory", f"{GPT}:build", "--model-args",
                      str(tmp_path / "args.yaml")], cli_env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("expected a mapping of NAME: VALUE, got a list")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("options, expected", [
    (["--optimizer-impl", "fused"], {"class": "AdamW", "kwargs": {"lr": 1e-4, "fused": True}}),
    (["--optimizer-impl", "loop"], {"class": "AdamW", "kwargs": {"lr": 1e-4, "foreach": False}}),
    (["--optimizer", "torch.optim.SGD", "--optimizer-arg", "momentum=0.9"],
     {"class": "SGD", "kwargs": {"lr": 1e-4, "momentum": 0.9}}),
    (["--optimizer", f"{GPT}:PlainSGD", "--optimizer-arg", "lr=0.01"], {"class": "PlainSGD", "kwargs": {"lr": 0.01}}),
])
def test_optimizer_choice_is_run_and_recorded(cli_env, options, expected):
    result = sysprof(["run", *SMALL_RUN, *options, "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    recorded = json.loads((Path(summary["run_dir"]) / "manifest.json").read_text())["optimizer"]
    assert {key: recorded[key] for key in expected} == expected and summary["phases"]["optimizer"]["n"] == 2


def test_a_compiled_optimizer_step_compiles_before_the_warm_up(cli_env):
    result = sysprof(["run", *SMALL_RUN, "--optimizer-impl", "compiled", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    recorded = json.loads((Path(summary["run_dir"]) / "manifest.json").read_text())["optimizer"]
    assert recorded["impl"] == "compiled" and recorded["kwargs"] == {"lr": 1e-4}  # torch picks foreach under compile
    assert summary["compile_s"] > 0 and summary["run_dir"].endswith("-opt-compiled")
    assert summary["phases"]["optimizer"]["n"] == 2


@pytest.mark.parametrize("options, reason", [
    (["--optimizer", "torch.optim.SGD", "--optimizer-arg", "bogus=1"], "rejects"),
    (["--optimizer-impl", "compiled", "--dtype", "fp16"], "--optimizer-impl compiled does not combine with fp16"),
    (["--optimizer", "torch.optim.NoSuchOptimizer"], "has no attribute 'NoSuchOptimizer'"),
    (["--optimizer", f"{GPT}:PlainSGD", "--optimizer-impl", "fused"], "--optimizer-impl fused is for torch.optim"),
    (["--optimizer-arg", "lr"], "--optimizer-arg takes NAME=VALUE"),
])
def test_bad_optimizers_are_one_line_exit_2(cli_env, options, reason):
    result = sysprof(["run", *SMALL_RUN, *options], cli_env)
    assert result.returncode == 2 and reason in result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr


def test_kwargs_come_from_the_signature():
    def cs336(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta=1.0):
        return None

    dims = {"vocab_size": 7, "context_length": 8, "d_model": 16, "num_layers": 2, "num_heads": 4, "d_ff": 32,
            "rope_theta": 10000.0}
    assert factory_kwargs(cs336, dims, {}, "m:f") == dims
    assert factory_kwargs(cs336, dims, {"d_ff": 64}, "m:f")["d_ff"] == 64
    with pytest.raises(ConfigError, match="cannot fill extra"):
        factory_kwargs(lambda vocab_size, extra: None, dims, {}, "m:f")
    assert factory_kwargs(lambda **kw: None, dims, {"anything": 1}, "m:f") == {"anything": 1}
    assert all(name in inspect.signature(cs336).parameters for name in DIMENSION_NAMES)


def test_attention_choice_reaches_a_factory_that_takes_it_in_its_own_spelling():
    dims = {"vocab_size": 7, "d_model": 16, "attention": "naive"}
    assert factory_kwargs(lambda vocab_size, attention: None, dims, {}, "m:f")["attention"] == "naive"
    assert factory_kwargs(lambda d_model, attn_impl="x": None, dims, {}, "m:f")["attn_impl"] == "naive"
    assert factory_kwargs(lambda d_model, attn_implementation: None, dims, {}, "m:f")["attn_implementation"] == "eager"
    assert factory_kwargs(lambda d_model, attention: None, dims, {"attention": "flash"}, "m:f")["attention"] == "flash"
    assert "attention" not in factory_kwargs(lambda vocab_size: None, dims, {}, "m:f")
    assert attention_note(RunConfig(model_factory="m:f", attention="sdpa"), {"vocab_size": 7}).startswith(
        "--attention sdpa does not reach m:f")
    assert attention_note(RunConfig(model_factory="m:f", attention="sdpa"), {"attn_impl": "sdpa"}) is None
    assert attention_note(RunConfig(model_factory="m:f"), {}) is None  # the default asks for nothing


def test_the_worked_example_switches_its_attention_with_the_same_result():
    models = [build_user_model(RunConfig(model="tiny", ctx=16, model_factory=f"{GPT}:build", attention=choice,
                                         model_args=("n_layer=1",)))[0] for choice in ("naive", "sdpa")]
    models[1].load_state_dict(models[0].state_dict())
    tokens = torch.randint(0, 10000, (2, 16))
    naive, sdpa = (model(tokens).logits for model in models)
    torch.testing.assert_close(naive, sdpa, rtol=1e-4, atol=1e-4)
    assert models[0].blocks[0].attn.attention == "naive" and models[1].blocks[0].attn.attention == "sdpa"


def test_model_args_are_json_literals_else_text():
    assert parse_model_args(("a=1", "b=0.5", "c=true", "d=[1, 2]", "e=gelu", "f=null")) == {
        "a": 1, "b": 0.5, "c": True, "d": [1, 2], "e": "gelu", "f": None}
    assert config_problems(RunConfig(model_args=("a=1",))) == {"model_args": "--model-arg needs --model-factory"}
    assert "NAME=VALUE" in config_problems(RunConfig(model_factory="m:f", model_args=("oops",)))["model_args"]
    cfg = RunConfig(model_factory="m:f", model_args=("a=1",))
    assert RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg and cfg.model_name == "m.f"


def test_compare_names_the_factory_model_of_each_run(cli_env, factory_run):
    builtin = ROOT / "tests" / "data" / "runs" / "tiny-ctx32"
    refused = sysprof(["compare", str(builtin), str(factory_run)], cli_env)
    assert (refused.returncode == 2 and "the runs measure different steps: " in refused.stderr
            and "model_factory None ≠ " in refused.stderr)
    result = sysprof(["compare", str(builtin), str(factory_run), "--json", "--force"], cli_env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["a_model"], document["b_model"]) == ("tiny", "gpt.build (tiny)")
    assert [row["phase"] for row in document["phases"]] == ["forward", "backward", "optimizer", "step", "tokens/s"]
    text = sysprof(["compare", str(builtin), str(factory_run), "--force"], cli_env)
    title = f"B = {factory_run.name} (gpt.build (tiny)) against A = tiny-ctx32 (tiny)"
    assert text.returncode == 0 and title in text.stdout.splitlines()[0]
