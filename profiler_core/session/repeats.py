"""Repeats: one config measured in N fresh runner processes.

A within-run std cannot see what changes from one process to the next on a shared node (clocks, other tenants,
allocator and autotuning state): six processes of the same small bf16 step gave medians from 36 to 50 ms while
each one's own std was small. So a config is a group of processes, and its numbers are statistics over them
(metrics.aggregate_processes); compare judges the per-process medians.

Layout: the first process is the run directory itself, with the profiled and memory passes it asks for, so every
viewer reads it as it reads a single run; processes 2..N are clean timing passes in repeats/02 … repeats/NN, each
an ordinary run directory. summary.json is the group's: the first process's summary with phases, between,
repeats and the throughput replaced by statistics over the processes that finished; the first process's own is
kept beside it (first_process_summary.json), so a group stopped in a later process resumes from what finished.

A process that does not finish ok (an OOM, a crash, a cancel) ends the group: the next one would fail the same
way, or the user asked to stop. The group keeps what finished and takes that process's status and error.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import cast

from sysprof.profiler_core.analysis.metrics import aggregate_processes
from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import BackendUnavailable
from sysprof.profiler_core.base.events import finish_event, with_state
from sysprof.profiler_core.base.records import RunSummary, median_ms
from sysprof.profiler_core.base.stop_signals import on_stop_signals
from sysprof.profiler_core.documents.liveness import RUN
from sysprof.profiler_core.session.backends import Backend, choose_backend
from sysprof.profiler_core.session.live import EventLog, recorded
from sysprof.profiler_core.session.passes import Session

EventSink = Callable[[dict], None]


def process_dir(run_dir: Path, index: int) -> Path:
    """Where process `index` (0-based) of a group writes: the run directory itself for the first."""
    return run_dir if index == 0 else run_dir / rundir.REPEATS_DIR / f"{index + 1:02d}"


def clean_only(cfg: RunConfig) -> RunConfig:
    """A later repeat times the steps again; the profiled and memory passes ran once, with the first process."""
    return dataclasses.replace(cfg, profiler="none", memory=False)


class RepeatedRun:
    """cfg.repeats processes of one config; run() does them in a row, run_process(i) lets a sweep interleave."""

    def __init__(self, cfg: RunConfig, run_dir: Path, on_event: EventSink, backend: Backend | None = None):
        self.cfg, self.run_dir, self.on_event, self.backend = cfg, run_dir, on_event, backend
        self.summaries: list[RunSummary] = []

    def resume(self) -> RepeatedRun:
        """Take the processes an interrupted group finished (each with its own ok summary) as done."""
        for index in range(self.cfg.repeats):
            summary = _finished_process(self.run_dir, index)
            if summary is None:
                break
            self.summaries.append(summary)
        for index in range(len(self.summaries), self.cfg.repeats):  # a torn later process starts clean
            if index:
                shutil.rmtree(process_dir(self.run_dir, index), ignore_errors=True)
        return self

    @property
    def stopped(self) -> bool:
        """True once a process did not finish ok: the group ends there."""
        return any(summary["status"] != events.OK for summary in self.summaries)

    @property
    def complete(self) -> bool:
        return self.stopped or len(self.summaries) >= self.cfg.repeats

    def run(self) -> RunSummary:
        try:
            while not self.complete:
                self.run_process(len(self.summaries))
        except KeyboardInterrupt:  # between two processes: what finished is the result
            if not self.summaries:
                raise  # nothing finished: the caller's own handling applies
            self.notice("cancelled: the processes that finished are kept")
            return self.write_summary(cancelled=True)
        return self.write_summary()

    def run_process(self, index: int) -> RunSummary:
        disk_space.reserve_space(self.run_dir)  # if this process fills the disk, its summaries still fit
        try:
            return self._run_process(index)
        finally:
            disk_space.release_space(self.run_dir)

    def _run_process(self, index: int) -> RunSummary:
        if index == 0:
            summary = Session(self.cfg, self.run_dir, self.on_event, self.backend).run()
        else:
            self.notice(f"repeat {index + 1}/{self.cfg.repeats}: a fresh process")
            path = process_dir(self.run_dir, index)
            path.mkdir(parents=True, exist_ok=True)
            summary = Session(clean_only(self.cfg), path, self._quiet).run()
            step = median_ms(summary)
            self.notice(f"repeat {index + 1}/{self.cfg.repeats} {summary['status']}"
                        + (f": step median {step:.2f} ms" if step is not None else ""))
        self.summaries.append(summary)
        return summary

    def write_summary(self, cancelled: bool = False) -> RunSummary:
        """The group's summary.json (a single process's summary, unchanged, when only one was asked for)."""
        group = group_summary(self.summaries, self.cfg.repeats, cancelled)
        if self.cfg.repeats > 1:
            self._keep_first_process_summary()
            rundir.write_json(self.run_dir / rundir.SUMMARY, group)
        return group

    def _keep_first_process_summary(self) -> None:
        """The group's summary takes the first process's file: its own is kept, or a group cancelled in its second
        process would run its first again when resumed (a 2.7B cell lost 40 s of an advise so). Written each time:
        a first process run again in the same directory replaces what an earlier attempt kept."""
        rundir.write_json(self.run_dir / rundir.FIRST_PROCESS_SUMMARY, self.summaries[0])

    def notice(self, message: str) -> None:
        self.on_event({"event": events.NOTICE, "message": message})

    def _quiet(self, event: dict) -> None:
        """A later repeat's notices still matter (a failure's reason); its steps and stages would move Live."""
        if event.get("event") == events.NOTICE:
            self.on_event(event)


def _finished_process(run_dir: Path, index: int) -> RunSummary | None:
    try:
        summary = rundir.read_summary(process_dir(run_dir, index))
        if index == 0 and summary and "repeats" in summary:  # the group's, written when a later process stopped it
            summary = cast("RunSummary | None", rundir.read_json(run_dir / rundir.FIRST_PROCESS_SUMMARY))
    except rundir.RunDirError:
        return None  # a torn summary: that process runs again
    if not summary or summary.get("status") != events.OK or "repeats" in summary:
        return None
    return summary


def group_summary(summaries: list[RunSummary], requested: int, cancelled: bool = False) -> RunSummary:
    """The first process's summary with the statistics of all of them; the status of the one that ended it."""
    first = summaries[0]
    if requested <= 1:
        return first
    group = RunSummary(**first)  # a copy: the first process's own stays intact
    group.update(aggregate_processes(summaries, requested))  # type: ignore[typeddict-item]
    ended = next((s for s in summaries if s["status"] != events.OK), None)
    if ended is not None:
        group["status"] = ended["status"]
        if ended.get("error"):
            group["error"] = ended["error"]
    elif cancelled:
        group["status"] = events.FAILED_STATUS
        group["error"] = {"kind": events.CANCELLED, "message": f"stopped after {len(summaries)} of {requested} "
                          "processes", "phase": None, "peak_allocated_bytes": None}
    group["repeats"]["dirs"] = [str(process_dir(Path("."), i)) for i in range(len(summaries))]
    group["warnings"] = _every_warning(summaries)
    return with_state(group)


def _every_warning(summaries: list[RunSummary]) -> list[dict]:
    """Each kind of warning once, from the first process that raised it (process k's readings say k)."""
    seen: dict[str, dict] = {}
    for index, summary in enumerate(summaries):
        for warning in summary.get("warnings") or []:
            if warning["code"] not in seen:
                where = f"process {index + 1}: " if index else ""
                seen[warning["code"]] = {**warning, "message": where + warning["message"]}
    return list(seen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.session")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--config-json", required=True)
    parser.add_argument("--nsys", help="path to nsys (else $SYSPROF_NSYS, PATH, usual install dirs)")
    parser.add_argument("--resume", action="store_true", help="keep the processes of the group that finished")
    args = parser.parse_args(argv)
    # a closing app (or a hang-up, unless under nohup) asks like Ctrl-C does
    on_stop_signals(signal.default_int_handler, (signal.SIGTERM, signal.SIGHUP))
    try:
        args.run_dir.mkdir(parents=True, exist_ok=True)
        cfg = validate(RunConfig.from_dict(json.loads(args.config_json)), locate_code=False)
        backend, notice = choose_backend(cfg.profiler, args.nsys)
    except (ConfigError, BackendUnavailable, ValueError, TypeError, OSError) as exc:
        log = EventLog(args.run_dir if args.run_dir.is_dir() else None)  # the app follows the file
        log({"event": events.FAILED, "kind": events.CONFIG, "message": str(exc), "phase": None,
             "peak_allocated_bytes": None})
        log.close()
        return 2
    with recorded(args.run_dir, RUN, config=cfg.to_dict()) as on_event:  # events to the file and stdout
        if notice:
            on_event({"event": events.NOTICE, "message": notice})
        group = RepeatedRun(cfg, args.run_dir, on_event, backend)
        summary = (group.resume() if args.resume else group).run()
        on_event(finish_event(summary))
    error = summary.get("error")
    return 0 if summary["status"] == events.OK else 2 if error and error.get("kind") == events.CONFIG else 1
