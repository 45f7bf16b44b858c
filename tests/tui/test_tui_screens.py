"""Each screen driven with Textual's pilot: saved run directories made from real data, the fake runner."""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import settle, text, until_opened, wait_until

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.keys import GLOBAL_KEYS, PANE_KEYS, key_label
from sysprof.tui.widgets.modals import ConfirmQuit, ExportModal

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = DATA / "runs"
ANALYSED, TINY32, TINY64 = RUNS / "small-h200-analyses", RUNS / "tiny-ctx32", RUNS / "tiny-ctx64"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")


def fake_factory(*extra):
    def argv(cfg, run_dir):
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "tiny_cpu_train.jsonl"),
                "--run-dir", str(run_dir), *extra]
    return argv


def offline_app(*runs, runs_dir=None, **kwargs):
    return build_app(runs_dir=str(runs_dir or RUNS), open_runs=list(runs), **kwargs)


async def test_kernels_screen_filters_sorts_restricts_and_details():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3")
        pane = app.query_one("#pane-kernels")
        assert len(pane.view_rows) == 64 and "backend nsys" in text(app)
        assert "profiling inflation N/A" in text(app)  # the fixture has no clean pass to compare with
        assert "GEMM" in text(app) and "79%" in text(app)  # forward GEMM fraction from the real fixture
        await settle(app, pilot, "slash", *"GEMM", "enter")
        names = list(pane.view_rows["name"])
        assert 0 < len(names) < 64 and all("gemm" in n.lower() for n in names)
        await settle(app, pilot, "p")
        assert pane.view.phase == "forward" and set(pane.view_rows["phase"]) == {"forward"}
        await settle(app, pilot, "s")
        assert pane.view.sort_by == "pct_of_phase"
        values = list(pane.view_rows["pct_of_phase"])
        assert values == sorted(values, reverse=True)
        await settle(app, pilot, "S")
        assert list(pane.view_rows["pct_of_phase"]) == sorted(values)
        assert "launches" in str(app.query_one("#kernel-numbers").render())


async def test_kernel_data_that_arrives_after_the_filter_keeps_the_filter_on_screen(tmp_path):
    """The table's data loads in a thread: on a loaded machine it can land after the user typed a filter (a second
    load's result, or a replaced worker's). The filter the field shows must stay the one applied, so an export
    writes the rows on screen: the tmux test once exported all 64 rows under a filter showing 3."""
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3", "slash", *"cutlass", "enter")
        pane = app.query_one("#pane-kernels")
        assert len(pane.view_rows) == 3
        pane.data = pane.data  # the same table arriving once more, as a late load's would
        await settle(app, pilot)
        assert app.query_one("#kernel-filter").value == "cutlass" and len(pane.view_rows) == 3
        await settle(app, pilot, "e")
        assert len(app.screen.table.records) == 3


async def test_p_cycles_phases_then_attention_sub_ranges():
    """Help says `p` restricts to the next phase or attention sub-range: after the phases come the parts, each
    with its own kernels; the FLOPs line sets the matmuls against the softmax."""
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3")
        pane = app.query_one("#pane-kernels")
        assert "QKᵀ+PV do ×51.2 the softmax's FLOPs in ×3.63 its time" in text(app)
        seen = []
        for _ in range(len(pane.data.phases)):
            await settle(app, pilot, "p")
            seen.append(pane.view.phase)
        assert seen == ["forward", "backward", "optimizer", "attn QKᵀ+mask", "attn softmax", "attn PV", "all"]
        for _ in range(5):
            await settle(app, pilot, "p")
        assert pane.view.phase == "attn softmax" and set(pane.view_rows["class"]) == {"softmax"}
        assert "1 of 9 rows" in text(app) and "attn softmax" in text(app)  # 9 kernels in all the sub-ranges


async def test_kernel_header_follows_the_run_to_its_inflation_and_shows_per_step_time():
    """The kernel tables arrive before the session's summary: the inflation line must catch up with it."""
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3")
        assert "profiling inflation N/A" in text(app)
        assert "ms/step" in text(app) and "5 profiled steps" in text(app)
        forward = app.query_one("#pane-kernels").data.analysis["phases"]["forward"]["gpu_ns"]
        assert f"{forward / 5 / 1e6:,.2f}" in text(app)  # per step: the fixture profiled 5 steps
        summary = dict(app.run_state.summary, profile={"backend": "nsys", "profiled_median_ms": 38.42,
                                                       "clean_median_ms": 31.43, "inflation": 38.42 / 31.43})
        app.run_state = replace(app.run_state, summary=summary)
        await pilot.pause()
        assert "profiling inflation ×1.22" in text(app)


async def test_kernel_phases_say_busy_share_and_which_are_launch_bound_with_the_remedy_on_hover():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3")
        phases = app.query_one("#kernel-phases")
        words = [line.split() for line in text(app).splitlines()]
        first_row = {phase: next(w for w in words if w and w[0] == phase) for phase in ("forward", "optimizer")}
        assert "busy" in text(app) and "bound" in text(app)
        assert first_row["forward"][5:7] == ["49", "launch"] and first_row["optimizer"][5:7] == ["97", "GPU"]
        assert "launch-bound — host-wait 48%" in phases.tooltip and "remedy: bf16 will not help" in phases.tooltip


async def test_kernel_header_click_sorts_by_that_column():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot, "3")
        pane = app.query_one("#pane-kernels")
        table = app.query_one("#kernel-table")
        table.post_message(table.HeaderSelected(table, table.columns[next(k for k in table.columns
                                                                           if k.value == "instances")].key, 4, None))
        await settle(app, pilot)
        assert pane.view.sort_by == "instances"
        assert list(pane.view_rows["instances"]) == sorted(pane.view_rows["instances"], reverse=True)


async def test_a_cpu_run_says_why_it_has_no_kernels_memory_or_mfu_and_what_would_work():
    app = offline_app(TINY32)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "2")
        assert "MFU N/A (no peak FLOP/s for a CPU run)" in " ".join(text(app).split())
        await settle(app, pilot, "3")
        shown = " ".join(text(app).split())
        assert "this run was on the CPU" in shown and "Run it on a GPU node with profiler nsys" in shown
        await settle(app, pilot, "4")
        shown = " ".join(text(app).split())
        assert "this run was on the CPU" in shown and "Run it on a GPU node with memory capture" in shown


async def test_a_gpu_run_without_passes_says_which_pass_to_add(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(ANALYSED, run_dir)
    shutil.rmtree(run_dir / "kernels")
    shutil.rmtree(run_dir / "memory")
    for name in ("manifest.json", "summary.json"):
        document = json.loads((run_dir / name).read_text())
        document["config"] |= {"profiler": "none", "memory": False, "device": "cuda"}
        document["env"] |= {"device_type": "cuda", "device_name": "NVIDIA H200"}  # the fixture's steps ran on a CPU
        document.pop("profile", None)
        document.pop("memory", None)
        (run_dir / name).write_text(json.dumps(document))
    app = offline_app(run_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3")
        assert "this run had no profiled pass" in " ".join(text(app).split())
        await settle(app, pilot, "4")
        assert "this run had no memory pass" in " ".join(text(app).split())


async def test_a_pane_chosen_before_an_opened_run_is_drawn_stays_shown(monkeypatch):
    """Opening a run switches to Live after the next refresh; a key pressed before that refresh (a loaded machine,
    a fast typist), even before the app read Runs' enter, chose a pane, and it stays."""
    from sysprof.tui.app import SysprofApp
    from sysprof.tui.panes.runs import RunsPane

    deferred: list[tuple] = []
    real = SysprofApp.show_pane_unless_moved
    monkeypatch.setattr(SysprofApp, "show_pane_unless_moved",
                        lambda self, *given: deferred.append(given) or real(self, *given))
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: len(deferred) == 1, "the start's switch to Live")
        await settle(app, pilot)  # and the start's own focus (Textual focuses Live's table; the tabs follow focus)
        app.open_path(ANALYSED)
        app.action_show_pane("memory")  # in the same tick: before the refresh the switch to Live waits for
        await wait_until(pilot, lambda: len(deferred) == 2, "the deferred switch")
        await settle(app, pilot)
        assert app.shown_pane_name() == "memory"
        await settle(app, pilot, "5")
        app.query_one(RunsPane).post_message(RunsPane.Open(ANALYSED, app.pane_switches))  # enter on a run
        app.action_show_pane("memory")  # a key the app handles before the message
        await wait_until(pilot, lambda: len(deferred) == 3, "the deferred switch after enter")
        await settle(app, pilot)
        assert app.shown_pane_name() == "memory"
        await settle(app, pilot, "5")
        app.query_one(RunsPane).post_message(RunsPane.Open(ANALYSED, app.pane_switches))  # nothing chosen since
        await wait_until(pilot, lambda: app.shown_pane_name() == "live", "Live after Runs' enter")


async def test_memory_screen_peaks_timeline_and_tables():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "4")
        screen = text(app)
        assert "peak 2.68 GiB in backward step 0" in screen and "memory_viz:" in screen
        plot = app.query_one("#memory-timeline").render().plain  # a real plot: phase starts lettered, peak marked
        assert all(letter in plot for letter in "FBO") and "x" in plot and "GiB" in plot and "time (ms)" in plot
        table = app.query_one("#memory-table")
        assert table.row_count == 20 and table.records[0]["size_bytes"] == 40960000
        await settle(app, pilot, "t", "t")
        assert [r["item"] for r in table.records] == ["parameters", "gradients", "optimizer_state", "activations",
                                                      "attention_scores"]
        params = table.records[0]
        assert params["predicted_bytes"] == 128625408 * 4 and params["measured_bytes"] == 514501632
        # The screen shows what the memory pass stored, never a prediction of its own (they once disagreed).
        stored = json.loads((ANALYSED / "memory" / "analysis.json").read_text())["predicted_vs_measured"]
        assert table.records == stored and table.records[1]["item"] == "gradients" and table.records[1]["ratio"] == 1.0


async def test_runs_screen_lists_newest_first_opens_and_compares():
    app = offline_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "5")
        table = app.query_one("#runs-table")
        started = [r["started"] for r in table.records]
        assert started == sorted(started, reverse=True) and table.row_count == 3
        names = [r["name"] for r in table.records]
        await settle(app, pilot, *["down"] * names.index("tiny-ctx32"), "space", "up", "space", "c")
        rows = app.query_one("#pane-runs").comparison
        assert [r["phase"] for r in rows] == ["forward", "backward", "optimizer", "step", "tokens/s"]
        title = str(app.query_one("#compare-title").render())
        assert "different steps (" in title and "ctx " in title  # named as `sysprof compare` names them
        assert all(r["verdict"] in ("noise unknown", "within noise") for r in rows)
        assert all(r["reason"].startswith("1 process per side: run-to-run noise unknown") for r in rows)
        export = app.query_one("#pane-runs").export_table()
        marked = [record["name"] for record in table.selected_records()]
        assert export.name == f"compare-{marked[0]}-vs-{marked[1]}"
        assert export.base == app.runs_root  # a comparison belongs to neither run: not inside run A
        # The export names A and B on every row; the display cells stay out of it.
        assert export.records == [{"A": marked[0], "B": marked[1], **row} for row in rows]
        chosen = table.cursor_record()["name"]
        await settle(app, pilot, "enter")
        assert app.run_state.run_dir.endswith(chosen)
        for _ in range(300):  # the Live pane may still be switching in under a loaded suite (30 s at most)
            if app.shown_pane_name() == "live":
                break
            await pilot.pause(0.1)
        assert app.shown_pane_name() == "live"


async def test_runs_screen_names_a_factory_run_by_its_model_compares_and_opens_it(factory_run):
    app = offline_app(factory_run)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot, "5")
        table = app.query_one("#runs-table")
        names = [r["name"] for r in table.records]
        assert table.records[names.index(factory_run.name)]["model"] == "gpt.build (tiny)"
        await settle(app, pilot, *["down"] * names.index(factory_run.name), "space")
        await settle(app, pilot, *["up"] * names.index(factory_run.name), *["down"] * names.index("tiny-ctx32"),
                     "space", "c")
        assert "(gpt.build (tiny))" in str(app.query_one("#compare-title").render())
        assert len(app.query_one("#pane-runs").comparison) == 5  # 4 phases and tokens/s
        await settle(app, pilot, *["up"] * names.index("tiny-ctx32"), *["down"] * names.index(factory_run.name),
                     "enter")
        assert app.run_state.run_dir.endswith(factory_run.name) and app.run_state.stage == "finished"


async def test_export_kernels_to_markdown_and_unwritable_path(tmp_path):
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3", "space", "down", "space", "e")
        modal = app.screen
        assert isinstance(modal, ExportModal) and len(modal.table.records) == 2
        field = modal.query_one("#export-path")
        assert field.value.endswith("small-h200-analyses/exports/kernels.md")
        field.value = "/proc/no/such/dir/kernels.md"
        await settle(app, pilot, "enter")
        assert "cannot write" in str(modal.query_one("#export-error").render())
        field.value = str(tmp_path / "k.md")
        await settle(app, pilot, "enter")
        lines = (tmp_path / "k.md").read_text().splitlines()
        assert lines[0].startswith("| phase | name | class |") and len(lines) == 4


async def test_copy_puts_markdown_on_the_clipboard():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3", "y")
        assert app.clipboard.startswith("| phase | name |") and app.clipboard.count("\n") == 66


async def test_live_screen_fills_from_fake_runner_and_remembers_config(tmp_path):
    settings = tmp_path / "cfg" / "last_config.json"
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory(), initial=TINY, settings_path=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "ctrl+r")
        assert app.shown_pane_name() == "live" and app.run_state.stage == "finished"
        assert len(app.query_one("#chart-wall").data) == 5
        assert "tokens/s" in text(app) and "no telemetry" in str(app.query_one("#telemetry").render())
    assert json.loads(settings.read_text())["ctx"] == 32
    again = build_app(runs_dir=str(tmp_path), settings_path=settings)
    assert again.initial == TINY


async def test_corrupt_remembered_config_is_ignored_with_a_notice(tmp_path):
    settings = tmp_path / "last_config.json"
    settings.write_text("{not json")
    app = build_app(runs_dir=str(tmp_path), settings_path=settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.initial.model in ("tiny", "small") and "ignored" in app.settings_notice


async def test_configure_marks_invalid_fields_inline_and_disables_run(tmp_path):
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory(), initial=TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#heads").value = "3"
        await settle(app, pilot)
        assert app.query_one("#run").disabled and app.query_one("#heads").has_class("-invalid")
        assert "heads (3) must divide d_model (128)" in str(app.query_one("#config-error").render())
        await settle(app, pilot, "ctrl+r")
        assert app.run_state.stage == "idle"
        app.query_one("#heads").value = ""
        await settle(app, pilot)
        assert not app.query_one("#run").disabled and "3,084,928 parameters" in text(app)


async def test_quit_during_a_run_asks_and_cancel_leaves_no_process(tmp_path):
    # Each event 10 s apart: the cancel ends the run (a kill ~10 s after the SIGINT) long before it could finish
    # (8 events, 80 s), however loaded the suite; at 3 s apart a loaded CI run once saw it finish first.
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory("--delay", "10"), initial=TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        await pilot.pause(1.0)
        await pilot.press("escape", "q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmQuit)
        await pilot.press("n")
        for _ in range(50):  # under a loaded suite the dialog may still be closing: a key sent now would go to it
            if not isinstance(app.screen, ConfirmQuit):
                break
            await pilot.pause(0.1)
        assert app.run_state.running and not isinstance(app.screen, ConfirmQuit)
        pid = app.control.pid("run")
        await settle(app, pilot, "ctrl+g")
        assert app.run_state.stage == "failed" and app.run_state.error["kind"] == "killed"
        assert not app.control.running("run")
        try:
            os.killpg(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive


async def test_help_lists_every_key_and_palette_has_every_action():
    app = offline_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot, "7")
        help_text = text(app)
        for key in (*GLOBAL_KEYS, *PANE_KEYS):
            assert key_label(key.keys) in help_text, key
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {k.label for k in GLOBAL_KEYS} <= titles
        assert "Kernels: Sort" in titles and "Runs: Compare" in titles and "Studies: Start" in titles



async def test_help_scrolls_from_the_keyboard_at_once():
    app = offline_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "7")
        scroll = app.query_one("#help-scroll")
        assert scroll.max_scroll_y > 0 and scroll.scroll_y == 0
        await settle(app, pilot, "pagedown")
        assert scroll.scroll_y > 0
        await settle(app, pilot, "end")
        await pilot.pause(0.3)  # the scroll to the end is animated
        assert scroll.scroll_y == scroll.max_scroll_y


def test_non_run_path_is_one_line_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sysprof.tui", str(tmp_path)], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert result.returncode == 2 and "is not a run directory" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_app_import_stays_light():
    check = "import sys, sysprof.tui.app; print(','.join(m for m in ('torch', 'pandas') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr


async def test_kernels_screen_shows_every_rank_and_r_switches_to_the_next_ranks_tables(tmp_path):
    """A --nproc 2 run whose two real per-rank reports were analysed as the session does."""
    import shutil

    from rank_reports import SqliteBackend, unpack_rank_reports

    from sysprof.profiler_core.session.analysis import analyze_rank_kernels

    run_dir = tmp_path / "ranks-run"
    run_dir.mkdir()
    for name in ("manifest.json", "steps.jsonl"):
        shutil.copy(ANALYSED / name, run_dir / name)
    unpack_rank_reports(run_dir / "profiled")
    profile = {"backend": "nsys", **analyze_rank_kernels(SqliteBackend(), run_dir / "profiled", run_dir,
                                                          [(0, 0), (1, 1)])}
    summary = json.loads((ANALYSED / "summary.json").read_text()) | {"run_dir": str(run_dir), "profile": profile}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    one = profile["ranks"][1]
    app = offline_app(run_dir, runs_dir=tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot, "3")
        pane = app.query_one("#pane-kernels")
        assert "2 ranks, one report each" in text(app) and f"comm {one['comm_ms']:.1f} ms" in text(app)
        first_total = pane.data.analysis["totals"]["gpu_ns"]
        await settle(app, pilot, "r")
        assert pane.shown_rank == 1 and pane.data.kernels_dir == run_dir / "kernels" / "ranks" / "01"
        assert pane.data.analysis["totals"]["gpu_ns"] != first_total
        nccl = pane.data.table[pane.data.table["class"] == "nccl"]
        assert set(nccl["phase"]) == {"backward"}  # DDP's all-reduce, inside backward
        await settle(app, pilot, "r")
        assert pane.shown_rank == 0 and pane.data.kernels_dir == run_dir / "kernels"


async def test_leaving_runs_while_comparing_stays_left():
    """A focused widget that is hidden blurs itself, and Textual hands the focus to a sibling in the same pane,
    which switched the tabs back (TabbedContent follows focus): opening a run from Runs once stayed on Runs.
    Here the hidden pane's blur is delivered before the new pane takes focus, the order that lost the switch."""
    app = offline_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "5", "space", "down", "space", "c")
        assert app.query_one("#pane-runs").comparison
        app.action_show_pane("live")
        if app.screen.focused is not None:
            app.screen.focused.blur()  # what Widget._on_hide does when the runs tab is hidden
        for _ in range(5):
            await pilot.pause(0.05)
        assert app.shown_pane_name() == "live"
        assert app.screen.focused is not None and app.query_one("#pane-live") in app.screen.focused.ancestors


async def test_kernel_table_shows_short_names_and_the_detail_line_the_whole_name_unaltered():
    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await until_opened(app, pilot, ANALYSED)
        await settle(app, pilot, "3")
        assert "elementwise_kernel" in text(app) and "void at::native" not in text(app)
        await settle(app, pilot, "slash", *"direct_copy", "enter")
        pane = app.query_one("#pane-kernels")
        assert len(pane.view_rows) > 0 and all("direct_copy" in name for name in pane.view_rows["name"])
        details = str(app.query_one("#kernel-name").render())
        assert "direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]" in details


async def test_switching_screens_never_types_into_a_field(tmp_path):
    app = build_app(runs_dir=str(tmp_path / "runs"), settings_path=tmp_path / "settings.json")
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot, "6")
        command = app.query_one("#study-command").value
        assert not isinstance(app.focused, Input)  # Studies offers its list, not its command line
        await settle(app, pilot, "1")
        assert app.shown_pane_name() == "configure" and app.query_one("#study-command").value == command
        repeats = app.query_one("#repeats", Input)
        repeats.focus()
        await settle(app, pilot, "ctrl+pagedown")  # while typing: the next screen, the field keeps its value
        assert app.shown_pane_name() == "live" and repeats.value == "3"
        await settle(app, pilot, "ctrl+pageup")
        repeats.focus()
        await settle(app, pilot, "end", "2")  # a plain digit in a field is text, as typed
        assert app.shown_pane_name() == "configure" and repeats.value == "32"
        await settle(app, pilot, "backspace", "enter", "2")  # Enter ends the edit: the next digit switches
        assert app.shown_pane_name() == "live" and repeats.value == "3"
        await settle(app, pilot, "ctrl+pageup", "ctrl+pageup")  # round the end: Configure, then Help
        assert app.shown_pane_name() == "help"


async def test_a_longer_run_opened_after_a_shorter_one_shows_only_its_own_steps():
    from sysprof.profiler_core.base.units import format_ms
    from sysprof.tui.model.run_files import state_from_run_dir
    from sysprof.tui.panes.live import StepTable

    app = offline_app(ANALYSED)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "2")
        table = app.query_one(StepTable)
        assert table.row_count > 0
        longer = state_from_run_dir(TINY32)
        app.run_state = longer
        await settle(app, pilot)
        steps = [*longer.warmup_steps, *longer.steps]
        shown = [[str(cell) for cell in table.get_row_at(i)[:2]] for i in range(len(steps))]
        assert shown[0][0] == "warm-up 0" and shown[len(longer.warmup_steps)][0] == "step 0"
        assert [wall for _, wall in shown] == [format_ms(s["wall_ms"]) for s in steps]


async def test_the_runs_table_exports_under_the_runs_directory_with_readable_start_times():
    import re

    app = offline_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "5")
        export = app.query_one("#pane-runs").export_table()
        assert export.name == "runs" and export.base == app.runs_root  # the runs directory's table, no run's
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", record["started"]) for record in export.records)
        assert "summary" not in export.records[0]


def test_a_run_name_longer_than_its_column_is_seen_to_be_cut():
    from sysprof.profiler_core.tables.runs_list import NAME_WIDTH, cut_name

    cut = cut_name("20261127-025516-tiny-ctx256-b4-train-fp32-naive")
    assert cut == "20261127-025516-tiny-…" and len(cut) == NAME_WIDTH
    assert cut_name("tiny-ctx64") == "tiny-ctx64"


def test_while_steps_are_measured_the_stage_line_keeps_its_length():
    """A line that grows as the step count gains a digit rewraps, and a new height lays the screen out again."""
    from sysprof.tui.model.state import RunState
    from sysprof.tui.panes.live import stage_text

    step = {"index": 0, "wall_ms": 1.0, "phases_ms": {}}
    lines = [stage_text(RunState(stage="measured", run_dir="runs/r", stage_total=150, planned_steps=150,
                                 steps=(step,) * done)) for done in (1, 9, 10, 99, 100, 150)]
    assert len({len(line) for line in lines}) == 1, lines
    assert "  1/150 ·   1 measured steps" in lines[0] and "150/150 · 150 measured steps" in lines[-1]


async def test_rows_made_for_steps_that_never_came_go_when_the_run_ends(tmp_path):
    from sysprof.tui.model.state import RunState
    from sysprof.tui.panes.live import StepTable

    app = build_app(runs_dir=str(tmp_path / "runs"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "2")
        building = RunState(stage="build", run_dir=str(tmp_path / "runs" / "r"), config={"warmup": 2, "steps": 50})
        app.run_state = building
        await settle(app, pilot)
        table = app.query_one(StepTable)
        assert table.row_count == 52  # made before the first step
        app.run_state = replace(building, stage="failed", error={"kind": "oom", "message": "out of memory"})
        await settle(app, pilot)
        assert table.row_count == 0
