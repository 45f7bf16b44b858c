"""The advisor's benchmark models (benchmarks/user_models): each package's model and optimizer, loaded the way the
tool loads a user's code (by file, with the file's folder on sys.path), at tiny dims on the CPU."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner.user_model import build_optimizer, build_user_model, logits_of

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = "benchmarks/user_models"
# package: (factory, optimizer, model class, optimizer class, parameters at --model small, ctx 256)
MODELS = {
    "rope_lm": (f"{PACKAGES}/rope_lm/model.py:build", f"{PACKAGES}/rope_lm/optim.py:AdamW", "TransformerLM",
                "AdamW", 128_625_408),
    "nanogpt_style": (f"{PACKAGES}/nanogpt_style/model.py:build",
                      f"{PACKAGES}/nanogpt_style/optim.py:DecayGroupsAdamW", "GPT", "DecayGroupsAdamW", 92_932_608),
}
TINY = {"model": "tiny", "d_model": 32, "layers": 2, "heads": 4, "d_ff": 64, "vocab": 97, "ctx": 8}
TINY_RUN = ["--device", "cpu", "--ctx", "16", "--batch", "2", "--steps", "3", "--warmup", "1", "--mode", "train",
            "--d-model", "32", "--layers", "2", "--heads", "4", "--d-ff", "64", "--vocab", "97"]


@pytest.fixture(autouse=True)
def own_imports(monkeypatch):
    """The loader puts each package's folder on sys.path and its files in sys.modules: both are put back after."""
    monkeypatch.chdir(ROOT)  # the specs are relative, as in the README
    monkeypatch.setattr(sys, "path", [*sys.path])
    for name in ("model", "optim"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))


def tiny_model(package: str, **config):
    factory = MODELS[package][0]
    return build_user_model(RunConfig(**{**TINY, **config}, model_factory=factory))


@pytest.mark.parametrize("package", MODELS)
def test_the_tool_builds_each_model_with_logits_over_the_vocabulary(package):
    torch.manual_seed(0)
    model, info = tiny_model(package)
    tokens = torch.randint(97, (2, 8))
    assert logits_of(model(tokens)).shape == (2, 8, 97)
    assert info["class"] == MODELS[package][2] and info["vocab_size"] == 97 and len(info["sha256"]) == 64


@pytest.mark.parametrize("package", MODELS)
def test_parameters_at_the_small_dims(package):
    with torch.device("meta"):  # the shapes alone: no memory, no initialization
        _, info = tiny_model(package, model="small", d_model=None, layers=None, heads=None, d_ff=None, vocab=None,
                             ctx=256)
    assert info["params"] == MODELS[package][4]


@pytest.mark.parametrize("package", MODELS)
def test_the_optimizer_is_the_packages_own_and_lowers_the_loss(package):
    torch.manual_seed(0)
    model, _ = tiny_model(package)
    spec = MODELS[package][1]
    optimizer, info = build_optimizer(RunConfig(optimizer=spec, optimizer_args=("lr=0.01",)), model.parameters())
    assert type(optimizer).__name__ == info["class"] == MODELS[package][3]
    assert type(optimizer).__module__ == "optim" and info["file"] == str(ROOT / spec.rpartition(":")[0])
    tokens, targets = torch.randint(97, (2, 8)), torch.randint(97, (2, 8))
    losses = []
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(logits_of(model(tokens)).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[2] < losses[1] < losses[0]


def test_rope_lm_adamw_is_written_out_and_nanogpt_decays_matrices_only():
    rope_optimizer, _ = build_optimizer(RunConfig(optimizer=MODELS["rope_lm"][1]), [torch.nn.Parameter(torch.ones(2))])
    assert not isinstance(rope_optimizer, torch.optim.AdamW)  # its own loop, not torch's
    model, _ = tiny_model("nanogpt_style")
    optimizer, _ = build_optimizer(RunConfig(optimizer=MODELS["nanogpt_style"][1]), model.parameters())
    decay, no_decay = optimizer.param_groups
    assert isinstance(optimizer, torch.optim.AdamW) and (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0)
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])


@pytest.mark.slow
@pytest.mark.parametrize("package", MODELS)
def test_a_real_run_of_each_finishes_ok_and_learns(cli_env, package):
    factory, optimizer, model_class, optimizer_class, _ = MODELS[package]
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *TINY_RUN, "--model-factory",
                             factory, "--optimizer", optimizer, "--optimizer-arg", "lr=0.001", "--json"],
                            env=cli_env, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    run_dir = Path(summary["run_dir"])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert summary["status"] == "ok" and summary["phases"]["optimizer"]["n"] == 3
    assert manifest["model"]["class"] == model_class and manifest["optimizer"]["class"] == optimizer_class
    losses = [json.loads(line)["loss"] for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert losses[-1] < losses[0]
