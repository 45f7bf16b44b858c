"""Configure's live inspect: the real inspector process (torch on the meta device) runs when the form settles,
never in the app's own process, and a model that raises shows its one-line reason."""
import asyncio
import sys
from pathlib import Path

import pytest
from tui_helpers import settle, text, wait_until

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.panes.inspect_panel import InspectPanel

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")
INSPECTOR_S = 60  # the inspector imports torch: seconds on a loaded CI machine


def panel_text(app) -> str:
    """What the screen shows right of the form (the panel is the side column's last widget)."""
    side = app.query_one("#config-side")
    return "\n".join(line[side.region.x:] for line in text(app).splitlines()[side.region.y:])


async def wait_for(app, pilot, needle: str) -> str:
    for _ in range(INSPECTOR_S * 10):
        await pilot.pause(0.1)
        if needle in panel_text(app):
            return panel_text(app)
    raise AssertionError(f"{needle!r} never shown; the panel says {panel_text(app)!r}")


def three_blocks_folded(line: str) -> bool:
    cells = [cell.strip() for cell in line.split("│")]
    return "layers.*" in cells and "3" in cells


async def test_the_panel_inspects_the_form_and_follows_its_changes(tmp_path):
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        shown = await wait_for(app, pilot, "FlopCounterMode")
        assert "tiny (TransformerLM)" in shown and "counted and closed form equal" in shown
        app.query_one("#layers").value = "3"
        for _ in range(INSPECTOR_S * 10):  # the form settles, a second inspector runs, its table replaces the first
            await pilot.pause(0.1)
            if any(three_blocks_folded(line) for line in panel_text(app).splitlines()):
                break
        else:
            raise AssertionError(f"the 3-layer model was never shown: {panel_text(app)!r}")


async def test_an_invalid_form_clears_the_panel_and_a_raising_model_says_why(tmp_path):
    (tmp_path / "broken.py").write_text("def build(vocab_size):\n    raise ValueError('no such layer')\n")
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_for(app, pilot, "FlopCounterMode")
        app.query_one("#ctx").value = "0"
        await settle(app, pilot)
        await asyncio.sleep(1)
        assert "FlopCounterMode" not in panel_text(app)
        app.query_one("#ctx").value = "32"
        app.query_one("#model_factory").value = f"{tmp_path / 'broken.py'}:build"
        shown = await wait_for(app, pilot, "inspect:")
        assert "ValueError: no such layer" in shown
    assert (tmp_path / "runs" / "inspect-stderr.log").is_file()


async def test_an_inspector_that_cannot_start_is_one_line_on_the_panel(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-python")
    monkeypatch.setattr(sys, "executable", missing)  # what inspect_argv starts
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_for(app, pilot, "inspect:")
        said = str(app.query_one(InspectPanel).render())
        assert said == f"inspect: cannot start the inspector ({missing}): No such file or directory"
        assert app.is_running  # the worker said so and ended; nothing crashed


async def test_a_run_holds_the_inspector_and_off_means_no_panel(tmp_path):
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY)
    async with app.run_test(size=(140, 60)) as pilot:
        await settle(app, pilot)
        assert not app.query_one(InspectPanel).display


def runs_made(tmp_path) -> list[Path]:
    return [path for path in (tmp_path / "runs").glob("*") if path.is_dir()]


async def test_run_waits_for_the_inspection_of_user_code_and_stays_off_when_it_fails(tmp_path):
    (tmp_path / "broken.py").write_text("def build(vocab_size):\n    raise ValueError('no such layer')\n")
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_for(app, pilot, "FlopCounterMode")
        run = app.query_one("#run")
        assert not run.disabled  # the built-in model needs no inspection to run
        app.query_one("#optimizer").value = "nope.Class"
        await settle(app, pilot)
        assert app.query_one("#optimizer").has_class("-invalid") and run.disabled  # at once, no inspector needed
        app.query_one("#optimizer").value = "torch.optim.AdamW"
        app.query_one("#model_factory").value = f"{tmp_path / 'broken.py'}:build"
        await settle(app, pilot)
        said = str(app.query_one("#config-error").render())  # the inspection may already have failed (a fast host)
        assert run.disabled and ("Run waits for the model's inspection" in said or "no such layer" in said)
        await settle(app, pilot, "ctrl+r")
        assert runs_made(tmp_path) == []
        await wait_for(app, pilot, "inspect:")
        await settle(app, pilot, "ctrl+r")
        assert run.disabled and "ValueError: no such layer" in str(app.query_one("#config-error").render())
        assert runs_made(tmp_path) == []
        app.query_one("#model_factory").value = f"{DATA / 'models' / 'nanogpt_style' / 'gpt.py'}:build"
        await wait_for(app, pilot, "FlopCounterMode")
        await settle(app, pilot)
        assert not run.disabled


async def test_the_run_gate_lets_go_for_a_fix_saved_to_the_file_and_for_fields_the_inspection_does_not_read(tmp_path):
    model = tmp_path / "mine.py"
    model.write_text("def build(vocab_size):\n    raise ValueError('no such layer')\n")
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_for(app, pilot, "FlopCounterMode")
        run = app.query_one("#run")
        app.query_one("#model_factory").value = f"{model}:build"
        await wait_for(app, pilot, "ValueError: no such layer")
        await settle(app, pilot, "ctrl+t")  # A/B is held as Run is
        assert run.disabled and app.query_one("#panes").active == "configure"
        model.write_text("import torch\n\ndef build(vocab_size, d_model):\n"
                         "    return torch.nn.Sequential(torch.nn.Embedding(vocab_size, d_model),\n"
                         "                               torch.nn.Linear(d_model, vocab_size))\n")
        await wait_until(pilot, lambda: not run.disabled, "the saved fix never let Run go", INSPECTOR_S)
        app.query_one("#steps").value = "7"  # the inspection does not read it: no new wait
        await settle(app, pilot)
        assert not run.disabled


async def test_a_model_the_meta_device_cannot_build_does_not_hold_run(tmp_path):
    model = tmp_path / "pinned.py"
    model.write_text("import torch\n\ndef build(vocab_size, d_model):\n"
                     "    return torch.nn.Sequential(torch.nn.Embedding(vocab_size, d_model),\n"
                     "                               torch.nn.Linear(d_model, vocab_size)).to('cpu')\n")
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=TINY, live_inspect=True)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_for(app, pilot, "FlopCounterMode")
        app.query_one("#model_factory").value = f"{model}:build"
        shown = await wait_for(app, pilot, "inspect:")
        assert "meta" in shown
        await settle(app, pilot)
        assert not app.query_one("#run").disabled  # the run builds it on the CPU, where it works
