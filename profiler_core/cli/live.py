"""`sysprof ps` and `sysprof attach`: the runs and studies still going under a runs root, and one followed in
the terminal (a run the app started before the SSH session dropped, or one `sysprof run` runs in another shell)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.cli.event_lines import event_printer
from sysprof.profiler_core.documents.liveness import RUN, LiveProcess, in_progress, live_process
from sysprof.profiler_core.render.whole_tables import add_format_option, output_console
from sysprof.profiler_core.session.control import POLL_S, Attached, drain
from sysprof.profiler_core.session.live import EventFollower, settle_died


def add_live_parsers(commands) -> None:
    ps = commands.add_parser("ps", help="runs and studies still in progress under the runs root (and the ones "
                                        "whose process died, written down as such)")
    ps.add_argument("--runs-dir", help="root of run directories (default $SYSPROF_RUNS or ./runs)")
    ps.add_argument("--json", action="store_true")
    add_format_option(ps)
    attach = commands.add_parser("attach", help="follow a run or study in progress from its directory "
                                                "(Ctrl-C stops following; the run goes on)")
    attach.add_argument("directory", type=Path)


def progress_text(live: LiveProcess) -> str:
    """How far it got: measured steps for a run, finished cells for a study."""
    if live.kind == RUN:
        done = sum(1 for step in rundir.read_steps(live.directory) if step.get("kind") == "measured")
        return f"{done}/{(live.config or {}).get('steps', '?')} steps"
    from sysprof.profiler_core.studies.catalog import study_record

    record = study_record(live.directory) or {}
    return f"{record.get('finished', 0)}/{record.get('cells', '?')} cells"


PS_COLUMNS = ("dir", "state", "kind", "pid", "progress", "started")


def _inside(root: Path, directory: Path) -> bool:
    """Is the directory itself under the runs root (not a link from it to elsewhere)? ps writes only there."""
    return not directory.is_symlink() and directory.resolve().is_relative_to(root.resolve())


def command_ps(args) -> int:
    root = rundir.runs_root(args.runs_dir)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file, not a runs directory")
    if not root.exists() and args.runs_dir:  # $SYSPROF_RUNS or ./runs may not exist yet: nothing has run
        raise UsageError(f"no such runs directory {root}")
    found = in_progress(root)
    ours = [live for live in found if _inside(root, live.directory)]  # a link out of the root: someone else's
    ended = [(settle_died(live), ended_state(live)) for live in ours if not live.alive]
    ended += [(f"{live.directory}: its process is gone; left as it is (a link to {live.directory.resolve()}, outside "
               f"{root}: `sysprof ps --runs-dir {live.directory.resolve().parent}` settles it)", "not settled")
              for live in found if not live.alive and live not in ours]
    running = [live for live in found if live.alive]
    rows = [{"dir": str(live.directory), "state": events.RUNNING, "kind": live.kind, "pid": live.pid,
             "progress": progress_text(live),
             "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(live.started_at))} for live in running]
    if args.json:
        print(json.dumps({"running": rows, "died": [line for line, _ in ended]}))
        return 0
    console = output_console(args)
    for line, state in ended:
        console.print(f"[yellow]{state}:[/] {escape(line)}", soft_wrap=True)
    if not rows:
        console.print("nothing in progress")
        return 0
    table = Table(title="in progress (sysprof attach DIR follows one; sysprof-tui re-attaches from Runs)",
                  title_justify="left")
    for column in PS_COLUMNS:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(str(row[column])) for column in PS_COLUMNS))
    console.print(table)
    return 0


def ended_state(live: LiveProcess) -> str:
    """The state of a directory whose process is gone, once settled: a run's from the summary it has now (the run
    may have written its own end before its launcher vanished), a study's died."""
    if live.kind != RUN:
        return events.DIED
    try:
        return events.run_state(rundir.read_summary(live.directory))
    except rundir.RunDirError:
        return events.DIED


def command_attach(args) -> int:
    live = live_process(args.directory)
    if live is None:
        raise UsageError(f"{args.directory} has nothing in progress (no {rundir.LIVE}); open it with "
                         f"`sysprof-tui {args.directory}`")
    if not live.alive:
        raise UsageError(settle_died(live))
    console = Console(stderr=True, highlight=False)
    console.print(f"[dim]following {escape(str(args.directory))} (pid {live.pid}); "
                  "Ctrl-C stops following, the run goes on[/]", soft_wrap=True)
    try:
        follow(live)
    except KeyboardInterrupt:
        console.print(f"[dim]stopped following; it goes on: sysprof attach {escape(str(args.directory))}[/]",
                      soft_wrap=True)
        return 0
    return report_end(live, console)


def follow(live: LiveProcess) -> None:
    follower = EventFollower(live.directory / rundir.SESSION_EVENTS)
    print_event = event_printer()

    def print_events(batch: list[dict]) -> None:
        for event in batch:
            print_event(event)

    while drain(Attached(live), follower, print_events):
        time.sleep(POLL_S)


def report_end(live: LiveProcess, console: Console) -> int:
    """What the directory says now that its process is gone (a run that died gets its summary written first)."""
    still_marked = live_process(live.directory)
    if still_marked is not None:  # the process went away without removing its mark: it died
        console.print(f"[yellow]{escape(settle_died(still_marked))}[/]", soft_wrap=True)
    if live.kind != RUN:
        console.print(f"[dim]ended: `sysprof export {escape(str(live.directory))} --list` lists its tables[/]",
                      soft_wrap=True)
        return 0
    from sysprof.profiler_core.render.run_report import print_run

    summary = rundir.read_summary(live.directory)
    if summary is None:
        raise UsageError(f"{live.directory} ended without a summary")
    print_run(output_console(), summary)
    return 0 if summary["status"] == events.OK else 1
