"""The Studies screen: a real CPU study started from the app, saved H200 studies opened offline, bad input."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import settle, text, wait_until, workers_done

from sysprof.tui.app import build_app
from sysprof.tui.model.study_commands import study_argv
from sysprof.tui.model.study_state import StudyState

DATA = Path(__file__).resolve().parents[1] / "data"
ATTENTION, WARMUP = DATA / "studies" / "attention-h200", DATA / "studies" / "warmup-small-h200"
ATTENTION_OOM = DATA / "studies" / "attention-oom-h200"
ADVISE = DATA / "studies" / "advise-tiny-cpu"  # a real `sysprof advise` on the CPU: batch 16 was its answer


def studies_app(tmp_path, *opened):
    return build_app(runs_dir=str(tmp_path / "runs"), open_runs=list(opened),
                      settings_path=tmp_path / "settings.json")


async def type_command(app, pilot, command: str) -> None:
    field = app.query_one("#study-command")
    field.value = command
    field.focus()
    await pilot.press("enter")


async def wait_for_end(app, pilot, limit_s=240):
    pane = app.query_one("#pane-studies")
    for _ in range(int(limit_s / 0.5)):
        if not pane.study.running:
            break
        await pilot.pause(0.5)
    await workers_done(app)
    await pilot.pause()
    return pane


@pytest.mark.slow
async def test_a_study_started_in_the_app_runs_the_real_cli_and_shows_its_tables(tmp_path):
    app = studies_app(tmp_path)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot, "5", "6")  # Runs built (and empty) before the study exists
        await type_command(app, pilot, "study warmup --model tiny --device cpu --ctx 16 --steps 2 --warmups 0,2")
        pane = await wait_for_end(app, pilot)
        assert pane.study.stage == "finished" and (pane.study.done, pane.study.pending) == (2, 2)
        assert list(pane.tables) == ["warm-up study", "cells"]
        assert "warm-up study (1/2, t: next)" in text(app)
        assert "warmup · finished · 2/2 runs done · 2 cells" in text(app)
        await settle(app, pilot, "5")
        assert "warmup 2/2" in text(app)  # listed without g
        await settle(app, pilot, "6")
        await settle(app, pilot, "t")
        assert "cells (2/2" in text(app)
        await settle(app, pilot, "e")
        field = app.screen.query_one("#export-path")
        assert field.value == str(Path(pane.study.directory) / "exports" / "cells.md")
        await settle(app, pilot, "enter")
        exported = (Path(pane.study.directory) / "exports" / "cells.md").read_text().splitlines()
        assert exported[0].startswith("| model | ctx | warmup | status |") and len(exported) == 4


@pytest.mark.slow
async def test_refused_commands_say_why_in_one_line(tmp_path):
    app = studies_app(tmp_path)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot, "6")
        await type_command(app, pilot, "sweep --model tiny --device cpu --ctx 16,abc")
        pane = await wait_for_end(app, pilot, limit_s=60)
        assert pane.study.stage == "failed" and pane.study.message == "--ctx takes integers; got '16,abc'"
        assert "--ctx takes integers" in text(app) and "Traceback" not in text(app)
        assert app.screen.focused is app.query_one("#study-command")  # the line to fix, not the table
        await settle(app, pilot, "2")
        assert app.query_one("#panes").active == "studies" and app.query_one("#study-command").value.endswith("2")
        await type_command(app, pilot, "train --model tiny")
        await pilot.pause()
        assert pane.study.stage == "failed"  # nothing started
        assert any("start with `sweep`" in str(n.message) for n in app._notifications)


async def test_saved_attention_study_opens_offline_with_its_memory_accounting(tmp_path):
    app = studies_app(tmp_path, ATTENTION)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        pane = app.query_one("#pane-studies")
        assert pane.study.stage == "opened" and (pane.study.done, pane.study.cells) == (60, 60)
        rows = next(model.rows for title, model in pane.tables.items() if title.startswith("attention memory"))
        longest = {row["impl"]: row for row in rows if row["d"] == 64 and row["seq"] == 16384}
        assert longest["eager"]["T×T tensors saved"] == 1.03 and longest["sdpa"]["T×T tensors saved"] == 0
        assert "attention · opened · 60/60 cells run" in text(app)


@pytest.mark.slow
async def test_runs_screen_lists_a_study_and_opens_it_in_studies(tmp_path):
    shutil.copytree(WARMUP, tmp_path / "runs" / WARMUP.name)
    app = studies_app(tmp_path)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot, "5")
        assert "warmup 4/4" in text(app)
        await settle(app, pilot, "enter")
        await settle(app, pilot)
        pane = app.query_one("#pane-studies")
        first = pane.tables["warm-up study"].rows[0]
        assert first["warm-up steps"] == 0 and first["step first / mean"] > 5  # the H200's cold first step


def test_study_state_counts_cells_and_keeps_what_did_not_finish():
    state = StudyState(stage="running")
    for event in ({"event": "study", "kind": "sweep", "dir": "runs/s", "cells": 3, "pending": 2},
                  {"event": "cell", "index": 1, "label": "ctx=64", "done": 0, "pending": 2, "eta_s": None},
                  {"event": "cell_done", "index": 1, "label": "ctx=64", "status": "oom", "done": 1, "pending": 2,
                   "eta_s": 30.0}):
        state = state.apply(event)
    assert state.unfinished == ("ctx=64: oom",) and state.done == 1
    line = state.progress_line()
    assert "1/2 runs done · 3 cells" in line and "ETA 30 s" in line and "ctx=64: oom" in line
    assert state.ended(1, "").stage == "finished" and state.ended(130, "sysprof: interrupted").stage == "failed"
    assert StudyState(stage="running").ended(2, "bad").message == "bad"  # refused before a directory existed


def test_study_argv_adds_the_runs_root_and_the_event_stream(tmp_path):
    argv = study_argv("sweep --model 'small,medium' --ctx 128", tmp_path)
    assert argv[1:] == ["-P", "-m", "sysprof.profiler_core", "sweep", "--model", "small,medium", "--ctx", "128",
                        "--runs-dir", str(tmp_path), "--events"]


def test_tui_command_line_opens_a_study_directory(tmp_path):
    from sysprof.tui.cli import parse_args

    assert parse_args([str(ATTENTION)]).run_dirs == [ATTENTION]
    result = subprocess.run([sys.executable, "-c",
                             "from sysprof.tui.cli import parse_args; parse_args(['" + str(tmp_path) + "'])"],
                            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 2 and "nor a sweep or study directory" in result.stderr


def test_attention_fixture_is_the_real_h200_grid():
    plan = json.loads((ATTENTION / "study.json").read_text())
    assert (plan["batch"], plan["iters"], plan["dtype"], len(plan["cells"])) == (8, 100, "fp32", 60)


def test_an_oom_cell_is_a_row_and_the_study_still_counts_as_done():
    """Real H200 run: eager attention at T = 65536 needs a 128 GiB T×T tensor; SDPA runs it in 1.5 GiB."""
    from sysprof.profiler_core.studies.results import all_cells_done, study_tables

    tables = study_tables(ATTENTION_OOM)
    rows = {(row["impl"], row["seq"]): row for row in next(iter(tables.values()))}
    assert rows[("eager", 65536)]["status"] == "oom" and rows[("eager", 65536)]["fwd mean ms"] is None
    assert rows[("sdpa", 65536)]["status"] == "ok" and rows[("sdpa", 65536)]["peak MiB"] < 2048
    assert all_cells_done(tables)


@pytest.mark.slow
async def test_two_marked_runs_rerun_interleaved_from_runs_and_their_comparison_shows_on_studies(tmp_path):
    """Runs → a: the two marked runs' configs again as `sysprof ab` (a real CPU process, A B B A …), followed on
    Studies, whose first table is B against A, every row from processes that interleaved."""
    runs = tmp_path / "runs"
    for name in ("tiny-ctx32", "tiny-ctx64"):
        shutil.copytree(DATA / "runs" / name, runs / name)
    app = studies_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "5")
        await settle(app, pilot, "space", "down", "space", "a")
        command = app.query_one("#study-command").value
        assert command.startswith("ab --a=") and "--ctx 32" in command and "--ctx 64" in command
        pane = await wait_for_end(app, pilot)
        assert pane.study.stage == "finished", pane.study.message
        title, model = next(iter(pane.tables.items()))
        rows = model.rows
        assert title == "B against A"
        assert [row["phase"] for row in rows][:2] == ["forward", "backward"]
        assert {row["interleaved"] for row in rows} == {True} and all(row["n A/B"] == "4/4" for row in rows)


def test_ab_is_a_command_the_studies_line_takes():
    argv = study_argv("ab --a '--ctx 32' --b '--ctx 64'", Path("runs"))
    assert argv[4:9] == ["ab", "--a", "--ctx 32", "--b", "--ctx 64"] and argv[-1] == "--events"


def test_the_form_is_a_and_the_ab_field_b_in_the_command_ab_runs():
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.base.options import OneLineParser
    from sysprof.profiler_core.cli.ab import add_ab_options
    from sysprof.profiler_core.studies.kinds.ab.sides import ab_configs
    from sysprof.tui.panes.configure_form import ab_from_form

    form = RunConfig(model="tiny", device="cpu", ctx=32, batch=2, repeats=3)
    command = ab_from_form(form, " --optimizer-impl fused ")
    parser = OneLineParser(prog="sysprof ab")
    add_ab_options(parser)
    cfg_a, cfg_b = ab_configs(parser.parse_args(study_argv(command, Path("runs"))[5:]))
    assert cfg_a == RunConfig(model="tiny", device="cpu", ctx=32, batch=2, repeats=4)  # ab's repeats, not the form's
    assert cfg_b == RunConfig(model="tiny", device="cpu", ctx=32, batch=2, repeats=4, optimizer_impl="fused")


@pytest.mark.slow  # about 5 s on a 2-core machine: not for the fast tier
async def test_ab_from_configure_starts_on_studies_and_a_b_that_changes_nothing_is_one_line(tmp_path):
    app = studies_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        app.action_show_pane("configure")  # not the key "1": a field that has the focus would take it as text
        await settle(app, pilot)
        assert app.query_one("#pane-configure").checked is not None  # the form's config, A
        field = app.query_one("#ab-options")
        field.value = "--model tiny"
        await settle(app, pilot, "ctrl+t")
        command = app.query_one("#study-command")  # the Studies pane takes it after its first refresh
        await wait_until(pilot, lambda: command.value.startswith("ab --model "), f"not started: {command.value!r}")
        pane = await wait_for_end(app, pilot, limit_s=60)
        assert pane.study.stage == "failed" and "A and B are the same config" in pane.study.message


@pytest.mark.slow  # about 5 s on a 2-core machine: not for the fast tier
async def test_advise_from_configure_starts_the_advisor_on_the_forms_config_within_the_budget(tmp_path):
    app = studies_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        app.action_show_pane("configure")
        await settle(app, pilot)
        budget = app.query_one("#advise-budget")
        budget.value = "-3"
        await settle(app, pilot, "ctrl+y")
        assert app.query_one("#panes").active == "configure" and app.focused is budget  # back to fix it, not started
        budget.value = "0.01"  # too little for any candidate: the CLI says so before it runs anything
        await settle(app, pilot, "ctrl+y")
        command = app.query_one("#study-command")
        await wait_until(pilot, lambda: command.value.startswith("study advise --model "), f"not: {command.value!r}")
        assert command.value.endswith(" --budget 0.01") and " --repeats" not in command.value
        pane = await wait_for_end(app, pilot, limit_s=120)
        assert pane.study.stage == "failed" and "over the budget" in pane.study.message


@pytest.mark.slow  # about 5 s on a 2-core machine: not for the fast tier
@pytest.mark.parametrize("configure_shown_before", [False, True])
async def test_u_puts_the_advisors_answer_into_configure_keeping_the_forms_repeats(tmp_path, configure_shown_before):
    app = studies_app(tmp_path, ADVISE)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot, *(("1", "6") if configure_shown_before else ()))
        pane = app.query_one("#pane-studies")
        assert pane.study.stage == "opened" and "recommended" in pane.tables
        await settle(app, pilot, "u")
        assert app.query_one("#panes").active == "configure"
        form = {name: app.query_one(f"#{name}").value for name in ("ctx", "batch", "warmup", "steps", "repeats")}
        assert form == {"ctx": "64", "batch": "16", "warmup": "2", "steps": "5", "repeats": "3"}
        assert app.query_one("#model").value == "tiny" and app.query_one("#device").value == "cpu"
        assert not app.query_one("#run").disabled


async def test_u_on_a_study_without_an_answer_says_so(tmp_path):
    app = studies_app(tmp_path, WARMUP)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot, "u")
        assert app.query_one("#panes").active == "studies"
        assert any("No answer here" in str(n.message) for n in app._notifications)


@pytest.mark.slow  # about 5 s on a 2-core machine: not for the fast tier
async def test_picking_another_template_fills_the_command_line_and_its_first_value_does_not(tmp_path):
    app = studies_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "6")
        command, choice = app.query_one("#study-command"), app.query_one("#study-template")
        command.value = "sweep --model tiny --device cpu --ctx 16"  # as if given from Configure
        values = list(app.query_one("#pane-studies").templates.values())
        choice.value = values[0]  # the list's own first value again: the line keeps its command
        await settle(app, pilot)
        assert command.value == "sweep --model tiny --device cpu --ctx 16"
        choice.value = values[1]  # a pick of another template
        await wait_until(pilot, lambda: command.value == values[1], f"not filled: {command.value!r}")


async def test_the_advisors_answer_is_shown_whole_whichever_table_is_up(tmp_path):
    """In an 80-column terminal the answer, the advisor's point, wraps above the tables: its interval is never
    cut at the screen's edge, and it stays while t goes through the tables."""
    app = studies_app(tmp_path, ADVISE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        pane, line = app.query_one("#pane-studies"), app.query_one("#study-answer")
        shown = str(line.render())
        assert pane.has_class("-answered") and line.display
        assert "batch 16: tokens/s 1.24× [1.18–1.32] of the baseline's, measured twice" in shown.replace("\n", " ")
        assert "u: use it in Configure" in shown
        await settle(app, pilot, "t", "t")
        assert line.display and str(line.render()) == shown
    app = studies_app(tmp_path, WARMUP)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert not app.query_one("#pane-studies").has_class("-answered")
        assert not app.query_one("#study-answer").display


async def test_a_long_table_title_wraps_at_80_columns_and_keeps_its_keys(tmp_path):
    app = studies_app(tmp_path, ATTENTION)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await settle(app, pilot, "t")  # the memory table: its title is longer than the screen is wide
        title = str(app.query_one("#study-table-title").render())
        assert title.startswith("attention memory (MiB;") and "t: next" in title
        assert "t: next" in " ".join(text(app).split())  # on screen, over two lines


async def test_in_80_columns_why_a_candidate_was_not_run_is_read_under_the_table(tmp_path):
    """The advisor's reason sits in the table's last column, past the edge of an 80-column view: the line under
    the table shows the highlighted row's cells the view leaves out."""
    app = studies_app(tmp_path, ADVISE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        pane, table, more = app.query_one("#pane-studies"), app.query_one("#study-table"), app.query_one("#study-more")
        records = pane.current_table().rows
        row = next(index for index, record in enumerate(records) if record.get("why") == "needs CUDA")
        table.move_cursor(row=row)
        await settle(app, pilot)
        assert "why: needs CUDA" in str(more.render()) and more.display, str(more.render())
