"""SVG snapshots of every screen at 80×24 (GPU-free: saved runs from real data, no telemetry, no clock)."""
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import until_opened, workers_done

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import SysprofApp, build_app

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

ROOT = Path(__file__).resolve().parents[2]
RUNS = Path("tests/data/runs")  # relative: paths on screen must not depend on the checkout's location
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def saved_app(*names: str) -> SysprofApp:
    return build_app(runs_dir=str(RUNS), open_runs=[RUNS / name for name in names], initial=TINY)


async def loaded(pilot) -> None:
    # A refresh can start a worker (a pane built when first shown loads its data after it): wait for the
    # workers more than once, or a loaded machine takes the picture before the table is there.
    for _ in range(3):
        await pilot.pause()
        await workers_done(pilot.app)
    await pilot.pause()


async def steady_cursors(pilot) -> None:
    """A focused field's cursor shown steadily: blinking, it is drawn or not by when the picture is taken (on a
    loaded machine, either)."""
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


def snap(snap_compare, app, *keys) -> bool:
    async def settle(pilot):
        await loaded(pilot)
        first = app.open_runs[0] if app.open_runs else None
        if first and (first / "manifest.json").is_file():  # a run (not a study) opened on Live: on a loaded machine
            await until_opened(app, pilot, first)  # it loads after the first keys, and would take the screen back
        for key in keys:
            await pilot.press(key)
            await loaded(pilot)
        await steady_cursors(pilot)
    return snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_configure(snap_compare):
    assert snap(snap_compare, saved_app())


def test_configure_own_model(snap_compare):
    """A factory instead of the built-in model: what its dims fill, no built-in count or memory prediction."""
    app = saved_app()
    app.initial = replace(TINY, model_factory="tests/data/models/nanogpt_style/gpt.py:build",
                          model_args=("n_layer=1",))
    assert snap(snap_compare, app)


def test_live_saved_run(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"))


def test_kernels(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "3")


def test_kernels_filtered_backward(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "3", "slash", *"elementwise", "enter", "p", "p")


def test_kernels_module_types_without_module_ranges(snap_compare):
    """The run had no --nvtx-modules: the module-type table says in one line how to get it."""
    assert snap(snap_compare, saved_app("small-h200-analyses"), "3", "t")


def test_memory(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "4")


def test_memory_predicted_vs_measured(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "4", "t", "t")


def test_memory_module_types_without_tags(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "4", "t", "t", "t")


def test_runs_compare(snap_compare):
    assert snap(snap_compare, saved_app(), "5", "down", "space", "down", "space", "c")


def test_help(snap_compare):
    assert snap(snap_compare, saved_app(), "7")


def test_export_dialog(snap_compare):
    assert snap(snap_compare, saved_app("small-h200-analyses"), "3", "e")


def test_studies_saved_attention_grid(snap_compare):
    """The H200 attention microbenchmark, opened offline from its study directory."""
    app = build_app(runs_dir=str(RUNS), open_runs=[Path("tests/data/studies/attention-h200")], initial=TINY)
    assert snap(snap_compare, app)


def test_studies_saved_advise_study(snap_compare):
    """A real advise study on the CPU, opened offline: its candidates against the baseline, the best first."""
    app = build_app(runs_dir=str(RUNS), open_runs=[Path("tests/data/studies/advise-tiny-cpu")], initial=TINY)
    assert snap(snap_compare, app)
