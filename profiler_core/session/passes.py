"""One run as the user sees it: the clean timing pass, then the profiled and memory passes it asked for.

Every pass is a fresh runner process writing its own run directory (the clean one is the run directory
itself; the others are sub-directories), so a profiler or allocator history never touches the clean timing,
and a crash in a later pass keeps everything before it. (`python -m sysprof.profiler_core.session` runs one, with its
repeats: session/repeats.py.)
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from sysprof.profiler_core.analysis.rank_readings import with_communication, with_gpu_readings
from sysprof.profiler_core.analysis.ranks import local_ranks, with_findings
from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.records import PassRecord, RunSummary, median_ms
from sysprof.profiler_core.session.analysis import (
    analyze_kernels,
    analyze_memory,
    analyze_rank_kernels,
    analyze_rank_memory,
    attention_shape,
)
from sysprof.profiler_core.session.backends import Backend
from sysprof.profiler_core.session.clock import PassClock, profiled_breakdown
from sysprof.profiler_core.session.prestart import HeldPass, can_prestart
from sysprof.profiler_core.session.process import RunnerProcess, mark_killed, runner_argv
from sysprof.profiler_core.session.rank_checks import surviving_ranks, with_rank_failure
from sysprof.profiler_core.session.watch import MeasuredWatch

EventSink = Callable[[dict], None]


class SessionCancelled(Exception):
    """The user interrupted a pass: stop after it, keep what it saved."""


class Session:
    def __init__(self, cfg: RunConfig, run_dir: Path, on_event: EventSink, backend: Backend | None = None):
        self.cfg, self.run_dir, self.on_event, self.backend = cfg, run_dir, on_event, backend
        self.pass_seconds: dict[str, dict[str, float]] = {}  # by pass name ("clean" for the timing pass): PassClock

    def run(self) -> RunSummary:
        if self.cfg.nvtx_modules and not self.backend and not self.cfg.memory:
            self.notice("--nvtx-modules adds ranges in the profiled and memory passes only: add --profiler or --memory")
        watch = MeasuredWatch(self.cfg.device, self.cfg.nproc)
        held = self.prestart_profiled()
        try:
            started = time.time()
            summary = self.run_pass(None, self.run_dir, "none", watch=watch)
            summary["ran"] = {"start": started, "end": time.time()}  # wall clock: other processes' windows compare
            try:
                if self.backend and summary["status"] == events.OK:
                    summary["profile"] = self.profile_pass(summary, held)
                if self.cfg.memory and summary["status"] in events.DONE_STATUSES:
                    summary["memory"] = self.memory_pass(summary)
            except (SessionCancelled, KeyboardInterrupt):  # also during nsys export/stats or snapshot analysis
                self.notice("cancelled: later passes skipped; the clean timing is kept")
        finally:
            if held:
                held.discard()
        summary["warnings"] = watch.warnings(summary, rundir.read_steps(self.run_dir))
        if self.cfg.distributed and summary["status"] != events.OK and not summary.get("ranks") and (
                survivors := surviving_ranks(self.run_dir, dict(summary), self.cfg)):
            summary["ranks"] = survivors
        if summary.get("ranks"):
            ranks = with_gpu_readings(summary["ranks"], watch.per_gpu_medians(), summary.get("rank"))
            summary["ranks"] = with_findings(with_communication(ranks, (summary.get("profile") or {}).get("ranks")))
        try:
            watch.save(self.run_dir)
        except OSError as exc:
            if not disk_space.is_disk_full(exc):
                raise  # telemetry is a detail: the summary, written next from the reserve, is what counts
        rundir.write_json(self.run_dir / rundir.SUMMARY, summary)
        return summary

    def prestart_profiled(self) -> HeldPass | None:
        """The profiled pass's runner, started now and held until the clean pass has ended (session/prestart.py)."""
        if not self.backend or not can_prestart(self.cfg):
            return None
        pass_dir = self.run_dir / rundir.PROFILED_DIR
        try:
            return HeldPass(self.cfg, pass_dir, self.backend.capture, self.backend.launcher(pass_dir, ranks=False))
        except OSError:  # the profiler would not start: the profiled pass, started in turn, reports why
            return None

    def run_pass(self, pass_name: str | None, pass_dir: Path, capture: str, cfg: RunConfig | None = None,
                 launcher: Sequence[str] = (), watch: MeasuredWatch | None = None,
                 held: HeldPass | None = None) -> RunSummary:
        """One runner process (or torchrun's ranks), under `launcher` if any; its events go to on_event (tagged with
        the pass), its summary is returned; watch samples the node from the runner's measured stage to its end.
        held: the pass's runner started earlier (prestart_profiled), released now; its clock starts here."""
        cfg = cfg or self.cfg
        pass_dir.mkdir(exist_ok=True)
        held_s = 0.0
        if held:
            process, held_s = held.take()
        else:
            process = RunnerProcess(runner_argv(cfg, pass_dir, capture, launcher), pass_dir)
        clock = PassClock()
        summary: RunSummary | None = None
        try:
            for event in process.events():
                clock.saw(event)
                if watch and event["event"] == events.STAGE and event.get("name") == "measured":
                    watch.start(process.proc.pid)
                if watch and event["event"] in events.END_EVENTS:
                    watch.stop()
                if event["event"] in events.END_EVENTS:
                    summary = event.get("summary")
                    continue  # the session reports the end itself, once
                self.on_event({**event, "pass": pass_name} if pass_name else event)
        except KeyboardInterrupt:
            if watch:
                watch.stop()
            process.interrupt()  # SIGINT (a terminal's Ctrl-C already sent one): it saves its steps and stops
            summary = rundir.read_summary(pass_dir) or mark_killed(pass_dir, cfg, process.proc.returncode)
            if pass_name is None:
                return summary
            raise SessionCancelled from None
        self.pass_seconds[pass_name or "clean"] = clock.stop() | ({"started_early": held_s} if held else {})
        summary = summary or rundir.read_summary(pass_dir) or mark_killed(pass_dir, cfg, process.proc.returncode)
        if cfg.distributed:
            summary = cast("RunSummary", with_rank_failure(dict(summary), pass_dir, cfg.nproc))
            rundir.write_json(pass_dir / rundir.SUMMARY, summary)
        return summary

    def notice(self, message: str) -> None:
        self.on_event({"event": events.NOTICE, "message": message})

    def profile_pass(self, clean: RunSummary, held: HeldPass | None = None) -> PassRecord:
        backend = self.backend
        assert backend is not None  # run() starts a profiled pass only when there is a backend
        self.on_event({"event": events.STAGE, "name": "profiling", "backend": backend.name})
        pass_dir = self.run_dir / rundir.PROFILED_DIR
        launcher = backend.launcher(pass_dir, ranks=self.cfg.distributed)
        profiled = self.run_pass("profiled", pass_dir, backend.capture, launcher=launcher, held=held)
        profile = _inflation(backend, clean, profiled)
        if profiled["status"] != events.OK:
            error = profiled.get("error")
            profile["error"] = error.get("message", profiled["status"]) if error else profiled["status"]
            self.notice(f"profiled pass {profiled['status']}: {profile['error']}")
            return profile
        self.on_event({"event": events.STAGE, "name": "analysing"})
        analysis_started = time.monotonic()
        if self.cfg.distributed:
            profile |= analyze_rank_kernels(backend, pass_dir, self.run_dir, local_ranks(clean, self.cfg.nproc),
                                            attention_shape(self.cfg))
            for row in profile["ranks"][1:]:
                if row.get("error"):
                    self.notice(f"kernel tables unavailable for {row['error']}")
        else:
            profile |= analyze_kernels(backend, pass_dir, self.run_dir, shape=attention_shape(self.cfg))
        analysis_s = time.monotonic() - analysis_started
        profile["seconds"] = profiled_breakdown(self.pass_seconds.get("clean", {}),
                                                self.pass_seconds.get("profiled", {}), backend.finish(), analysis_s)
        if profile.get("error"):
            self.notice(f"kernel tables unavailable: {profile['error']}")
        else:
            self.on_event({"event": events.ANALYSIS, "kind": "kernels", "path": profile["kernels"]})
        return profile

    def memory_pass(self, clean: RunSummary) -> PassRecord:
        self.on_event({"event": events.STAGE, "name": "memory"})
        # After an OOM, one step from a cold start: the recording then covers the step that failed.
        cfg = dataclasses.replace(self.cfg, warmup=0, steps=1) if clean["status"] == events.OOM else self.cfg
        pass_dir = self.run_dir / rundir.MEMORY_DIR
        recorded = self.run_pass("memory", pass_dir, "memory", cfg=cfg)
        memory = PassRecord(status=recorded["status"], dir=rundir.MEMORY_DIR,
                            note="allocator history is recorded in its own pass: it slows the steps it records",
                            **_slowdown(clean, recorded))
        memory |= analyze_memory(cfg, pass_dir, recorded)
        if cfg.distributed:  # the first rank's analysis is the pass's own; the others' in their directories
            (first, _), *others = local_ranks(clean, cfg.nproc)
            own = {"error": f"rank {first}: {memory['error']}"} if memory.get("error") else \
                {"peak_allocated_bytes": memory.get("peak_allocated_bytes"), "analysis": memory.get("analysis")}
            memory["ranks"] = [{"rank": first, **own}, *analyze_rank_memory(cfg, pass_dir, others)]
        if memory.get("error") and recorded.get("error"):  # say why the pass wrote no snapshot
            memory["error"] = f"{memory['error']}: {recorded['error']['message']}"
        if memory.get("error"):
            self.notice(f"memory analysis unavailable: {memory['error']}")
        else:
            self.on_event({"event": events.ANALYSIS, "kind": "memory", "path": memory["analysis"]})
        return memory


def _slowdown(clean: RunSummary, recorded: RunSummary) -> PassRecord:
    """How much a recording pass stretched the median step, against the clean pass."""
    clean_ms, recorded_ms = median_ms(clean), median_ms(recorded)
    return {"clean_median_ms": clean_ms, "recorded_median_ms": recorded_ms,
            "inflation": recorded_ms / clean_ms if clean_ms and recorded_ms else None}


def _inflation(backend: Backend, clean: RunSummary, profiled: RunSummary) -> PassRecord:
    slowdown = _slowdown(clean, profiled)
    return {"backend": backend.name, "version": backend.version(), "dir": rundir.PROFILED_DIR,
            "status": profiled["status"], "clean_median_ms": slowdown["clean_median_ms"],
            "profiled_median_ms": slowdown["recorded_median_ms"], "inflation": slowdown["inflation"]}
