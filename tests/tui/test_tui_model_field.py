"""The Configure screen's fields for the user's own model: validated live, a factory's text instead of the built-in
count, the file picker (the file parsed with ast, never run), and the config a run starts with."""
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from tui_helpers import settle, text

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.model.factory_scan import ScanError, factory_spec, top_level_definitions
from sysprof.tui.panes.config_fields import read_code_field, shown
from sysprof.tui.widgets.factory_picker import FactoryPicker

DATA = Path(__file__).resolve().parents[1] / "data"
GPT = f"{DATA / 'models' / 'nanogpt_style' / 'gpt.py'}:build"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")
MODEL_FILE = '''
import torch
from torch import nn

open("RAN", "w").write("the file was run")  # the picker must never get here


class Net(nn.Module):
    def __init__(self, vocab_size, d_model, *, depth=2):
        super().__init__()


def build(vocab_size, n_embd, **extra):
    def helper():  # not top level: not listed
        pass
    return Net(vocab_size, n_embd)


async def not_a_factory():
    pass
'''


def test_scan_lists_top_level_classes_and_functions_without_running_the_file(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(MODEL_FILE)
    found = top_level_definitions(model)
    assert [(d.name, d.kind, d.parameters, d.bases) for d in found] == [
        ("Net", "class", ("vocab_size", "d_model", "depth"), "nn.Module"),
        ("build", "function", ("vocab_size", "n_embd", "**extra"), "")]
    assert not (tmp_path / "RAN").exists()
    (tmp_path / "broken.py").write_text("def build(:\n")
    with pytest.raises(ScanError, match="broken.py line 1: invalid syntax"):
        top_level_definitions(tmp_path / "broken.py")


def test_picked_spec_is_relative_inside_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    assert factory_spec(tmp_path / "models" / "gpt.py", "build") == "models/gpt.py:build"
    assert factory_spec(Path("/elsewhere/gpt.py"), "GPT") == "/elsewhere/gpt.py:GPT"


def test_pairs_fields_read_quoted_items_and_show_them_back():
    items = read_code_field("model_args", "n_layer=6 'names=[\"a\", \"b\"]'")
    assert items == ("n_layer=6", 'names=["a", "b"]')
    assert read_code_field("model_args", shown(replace(TINY, model_args=items), "model_args")) == items
    assert read_code_field("optimizer", "  ") == "torch.optim.AdamW" and read_code_field("loss", "") is None
    assert read_code_field("nvtx_modules", "") == 0 and read_code_field("nvtx_modules", "2") == 2


def recording_argv(started: list[RunConfig]):
    def argv(cfg, run_dir):
        started.append(cfg)
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "tiny_cpu_train.jsonl"),
                "--run-dir", str(run_dir)]
    return argv


@pytest.mark.slow
async def test_model_fields_are_checked_live_and_a_run_gets_them(tmp_path):
    started: list[RunConfig] = []
    app = build_app(runs_dir=str(tmp_path), argv_factory=recording_argv(started), initial=TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "3,084,928 parameters" in text(app) and "predicted memory" in text(app)
        for name, value, reason in (("model_factory", "build", "model_factory must be module:callable"),
                                    ("model_factory", "missing.py:build", "no such file missing.py"),
                                    ("model_args", "n_layer", "--model-arg takes NAME=VALUE"),
                                    ("nvtx_modules", "-1", "nvtx_modules must be 0 (off)")):
            app.query_one(f"#{name}").value = value
            await settle(app, pilot)
            field = app.query_one(f"#{name}")
            assert field.has_class("-invalid") and reason in field.tooltip and app.query_one("#run").disabled
            field.value = ""
        app.query_one("#model_factory").value = GPT
        app.query_one("#model_args").value = "n_layer=1 dropout=0.0"
        app.query_one("#optimizer_args").value = "lr=0.001"
        await settle(app, pilot)
        info = str(app.query_one("#model-info").render())
        assert info.startswith("gpt.build: your model") and "parameters by name" in info
        assert "3,084,928" not in text(app) and "predicted memory" not in text(app)  # the built-in model's numbers
        await settle(app, pilot, "ctrl+r")
    assert started[0].model_factory == GPT and started[0].model_args == ("n_layer=1", "dropout=0.0")
    assert started[0].optimizer_args == ("lr=0.001",) and started[0].optimizer == "torch.optim.AdamW"


async def in_tree(pilot, *keys):
    """Press keys while the folder tree is up: its loader is a worker that never ends, so wait by time."""
    for key in keys:
        await pilot.press(key)
        await pilot.pause(0.2)


@pytest.mark.slow
async def test_file_picker_fills_the_factory_with_a_definition_it_parsed(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mine.py").write_text(MODEL_FILE)
    monkeypatch.chdir(tmp_path)
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await in_tree(pilot, "ctrl+o")
        assert isinstance(app.screen, FactoryPicker)
        await in_tree(pilot, "down", "enter")  # the models folder opens
        await in_tree(pilot, "down", "enter")  # mine.py: its definitions are listed
        assert "mine.py: 2 classes and functions" in str(app.screen.query_one("#picker-note").render())
        await in_tree(pilot, "down", "down", "enter")  # build
        assert not isinstance(app.screen, FactoryPicker)
        assert app.query_one("#model_factory").value == "models/mine.py:build"
        assert not app.query_one("#model_factory").has_class("-invalid") and not app.query_one("#run").disabled
    assert not (tmp_path / "RAN").exists()  # listed, picked, and never run
