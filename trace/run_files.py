"""A traced loop's run directory, in the format `sysprof run` writes: manifest.json with what ran and where,
steps.jsonl as the steps are read, session_events.jsonl for whoever follows it live (the app, `sysprof attach`),
live.json while the loop runs, summary.json at its end. Every write is best effort: the user's job never fails
because its run directory cannot be written; the first failure is said once on stderr and tracing stops."""
from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.events import SCHEMA_VERSION
from sysprof.profiler_core.documents.liveness import RUN
from sysprof.profiler_core.session.live import EventLog, Heartbeat
from sysprof.trace.summary import loop_summary

ERROR_LOG = "trace-error.log"  # the full traceback of the exception that ended the user's loop
FLUSH_S = 0.25


class TraceRun:
    """settled_by_launcher: under `sysprof trace`, which marks the directory live for the whole job and writes the
    last event itself once it has completed the run (settle.py): the Live screen then follows the run through the
    reading of its profiled and memory steps, to the summary every reader ends with."""

    def __init__(self, run_dir: Path, config: dict[str, Any], env: dict[str, Any],
                 rank: dict[str, int] | None = None, settled_by_launcher: bool = False):
        self.run_dir, self.config, self.env = run_dir, config, env
        self.settled_by_launcher = settled_by_launcher
        self.rank = rank  # under torchrun: this process's rank, local rank and world size
        self.extra: dict[str, Any] = {}  # added to the summary as it is (the steps nsys captured)
        self.steps: list[dict[str, Any]] = []
        self.notes: list[dict[str, str]] = []  # findings from outside the steps (what automatic tracing found)
        self.written, self.flushed_at = 0, time.monotonic()
        self.started = time.time()
        self.log = EventLog(run_dir, to_stdout=False)
        self.heartbeat = None if settled_by_launcher else Heartbeat(run_dir, RUN, config).start()
        self._write_manifest()

    def _write_manifest(self) -> None:
        rundir.write_json(self.run_dir / rundir.MANIFEST, {
            "schema": SCHEMA_VERSION, "config": self.config, "env": self.env, "command": " ".join(sys.argv),
            "argv": list(sys.argv), "capture": "trace", "started": self.started})

    def started_on(self, device: str, env: dict[str, Any]) -> None:
        """The first step: where the loop runs is known now (its model is on its device), so the manifest says it
        and whoever follows the run gets its first event."""
        self.config, self.env = self.config | {"device": device}, env
        self._write_manifest()
        self.log({"event": events.HELLO, "schema": SCHEMA_VERSION, "env": env, "config": self.config,
                  "run_dir": str(self.run_dir)})
        self.log({"event": events.STAGE, "name": "measured", "total": None})

    def write_step(self, record: dict[str, Any]) -> None:
        """Kept, and written with the steps before it at most every FLUSH_S (the app reads at 4 Hz): a file opened
        per step would cost a short step more than its timing does."""
        self.steps.append(record)
        if time.monotonic() - self.flushed_at >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        for record in self.steps[self.written:]:
            rundir.append_jsonl(self.run_dir / rundir.STEPS, record)
            kind = events.WARMUP_STEP if record["kind"] == "warmup" else events.STEP
            self.log({"event": kind, **record})
        self.written, self.flushed_at = len(self.steps), time.monotonic()

    def finish(self, error: BaseException | None = None) -> dict[str, Any]:
        """summary.json from the steps read, the error that ended the loop (its traceback in the run), the last
        event; the directory no longer marked live."""
        self.flush()
        failure = self._failure(error) if error is not None else None
        summary = loop_summary(self.config, self.env, self.steps, str(self.run_dir), failure)
        summary["ran"] = {"start": self.started, "end": time.time()}  # compare: did two jobs run at once?
        if self.rank is not None:
            summary["rank"] = self.rank
        summary |= self.extra
        summary["findings"] = [*self.notes, *summary["findings"]]
        try:
            rundir.write_json(self.run_dir / rundir.SUMMARY, summary)
            if not self.settled_by_launcher:
                self.log(dict(events.finish_event(summary)))  # type: ignore[arg-type]
        finally:
            if self.heartbeat is not None:
                self.heartbeat.stop()
            self.log.close()
        return summary

    def _failure(self, error: BaseException) -> dict[str, Any]:
        (self.run_dir / ERROR_LOG).write_text("".join(traceback.format_exception(error)))
        kind = events.CANCELLED if isinstance(error, KeyboardInterrupt) else events.FAILED_STATUS
        message = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
        return {"kind": kind, "message": f"{message} (traceback: {ERROR_LOG})", "phase": None,
                "peak_allocated_bytes": None}


def environment(torch: Any, cuda: bool) -> dict[str, Any]:
    if torch is None:
        return {"device_type": "cpu", "python_version": sys.version.split()[0]}
    from sysprof.profiler_core.runner.environment import collect_env

    return collect_env(torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu"))
