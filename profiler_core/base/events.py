"""Every message between processes, and every status a run or a cell ends in: spelled here, nowhere else.

One JSON object per line on stdout, each with an "event" name. Anything else on stdout (nsys banners, CUDA
chatter) is not an event and is skipped by the reader. Large payloads never travel here: they go to files in
the run directory and the event names the path. Three pipes speak this protocol:

- a runner or session → its launcher (the session, the CLI, the app): RUN_EVENTS;
- `sysprof sweep|study --events` → the app's Studies screen: STUDY_EVENTS
  ({"event": "study", "kind", "dir", "cells", "pending"} once the directory exists; {"event": "cell", "index",
  "label", "done", "pending", "eta_s"} when a sweep cell starts; {"event": "cell_done", "index", "label",
  "status", "done", "pending", "eta_s"} when a cell ends);
- a study's helper process (attention benchmark, precision lab, a shared runner process of several
  configurations) → the study driver, and the model inspector
  (`runner.inspect_model`) → `sysprof inspect` and the Configure screen: HELPER_EVENTS.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from sysprof.profiler_core.base.records import Event, RunSummary

SCHEMA_VERSION = 1

HELLO, STAGE, COMPILE, NOTICE, ANALYSIS = "hello", "stage", "compile", "notice", "analysis"
MODEL = "model"  # {"params", "flops_per_step"} of the model built (the user's: FLOPs counted on a meta copy)
WARMUP_STEP, STEP = "warmup_step", "step"
FINISHED, FAILED = "finished", "failed"  # the last event of a run: exactly one of them
RUN_EVENTS = (HELLO, STAGE, MODEL, COMPILE, WARMUP_STEP, STEP, NOTICE, ANALYSIS, FINISHED, FAILED)
END_EVENTS = (FINISHED, FAILED)
RELEASE_LINE = "go"  # what the session writes to a held runner's stdin to let it go on (runner/hold.py)

STUDY, CELL, CELL_DONE = "study", "cell", "cell_done"
STUDY_EVENTS = (STUDY, CELL, CELL_DONE)

CELL_RESULT, LAB_RESULT, INSPECT = "cell_result", "lab_result", "inspect"
# {"arm", "run_dir", "status"}: one configuration of a shared runner process ended (runner/arms.py)
ARM_DONE = "arm_done"
HELPER_EVENTS = (CELL_RESULT, LAB_RESULT, INSPECT, ARM_DONE)

EVENT_KINDS = RUN_EVENTS + STUDY_EVENTS + HELPER_EVENTS

CAPTURES = ("none", "nsys", "torch", "memory")  # what a runner pass records besides timing

# How a run, a pass or a study cell ended: summary.json's "status" (the contract's ok|oom|failed; a cancel is a
# failed run whose error kind is "cancelled"). What a person reads is the run's state (RUN_STATES, below).
OK, OOM, FAILED_STATUS = "ok", "oom", "failed"
PENDING, INCOMPLETE = "pending", "incomplete"  # a cell not run yet; a run directory without a summary
NOT_RUN = "not run"  # a row a study planned but this host cannot run (a GPU count it lacks): said, not failed
DONE_STATUSES = (OK, OOM)  # a cell that need not run again: an OOM is a result, not a failure
# killed: the runner died under a session that saw it; died: the session itself vanished (no one saw the end).
# disk: the run's own files no longer fit (ENOSPC, quota).
FAILURE_KINDS = ("oom", "config", "cuda", "killed", "died", "cancelled", "disk", "error")
CANCELLED, KILLED, DIED, CONFIG, DISK_FULL = "cancelled", "killed", "died", "config", "disk"
# A run's state in one word, the same in Live, Runs, `sysprof run|ps|attach` and summary.json's "state": the status
# with the failure's kind folded in. A stop asked for (Ctrl-C, the app's cancel, a launcher's SIGTERM, a terminal's
# SIGHUP: the runner saved its steps and its summary) is "cancelled", never "failed".
RUNNING = "running"
RUN_STATES = (RUNNING, OK, FAILED_STATUS, CANCELLED, KILLED, OOM, DIED)


def encode_event(event: str, **fields: object) -> str:
    if event not in EVENT_KINDS:
        raise ValueError(f"unknown event {event!r}")
    return json.dumps({"event": event, **fields}, separators=(",", ":"), default=str)


def decode_line(line: str | bytes, kinds: tuple[str, ...] = EVENT_KINDS) -> dict | None:
    """The event on this line, or None when the line is not one of ours."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        payload = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or payload.get("event") not in kinds:
        return None
    return payload


def decode_lines(text: str, kinds: tuple[str, ...] = EVENT_KINDS) -> list[dict]:
    """Every event in a captured stdout, in order."""
    return [event for event in map(lambda line: decode_line(line, kinds), text.splitlines()) if event is not None]


class ReaderGone(BrokenPipeError):
    """Nobody reads this process's events any more: the process that started it (and read its stdout) is gone."""


_reader_gone = False


def emit(event: str, **fields: object) -> None:
    """Write one event; flushed at once so a reader sees each step as it happens. Raises ReaderGone the first time
    the pipe is found closed; stdout then goes nowhere, so the events written while stopping (a runner's last one)
    and the flush at exit do not fail again."""
    global _reader_gone
    if _reader_gone:
        return
    try:
        print(encode_event(event, **fields), flush=True)
    except BrokenPipeError:
        _reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise ReaderGone(f"nobody reads the events: {event} not delivered") from None


def run_state(summary: Mapping[str, Any] | None, running: bool = False) -> str:
    """One of RUN_STATES. running: its process is alive (the app and `ps` know it; a summary cannot). No summary and
    nothing running: nobody wrote its end, so it died. Derived from status and error every time, so a summary written
    before "state" existed reads the same as a new one."""
    if running:
        return RUNNING
    if not summary:
        return DIED
    kind = (summary.get("error") or {}).get("kind")
    if summary.get("status") == OK:
        return OK
    if summary.get("status") == OOM or kind == OOM:
        return OOM
    return kind if kind in (CANCELLED, KILLED, DIED) else FAILED_STATUS


def with_state(summary: RunSummary) -> RunSummary:
    """The summary with its "state" written beside "status" (for scripts; readers derive it with run_state)."""
    summary["state"] = run_state(summary)
    return summary


def end_reason(state: str, error: Mapping[str, Any] | None) -> str:
    """What ended a run that did not finish ok, in words to follow its state ("stopped by SIGINT", "cuda in
    backward: CUDA error: …"): the error's kind only where the state does not say it already."""
    if not error:
        return ""
    message, phase, kind = error.get("message") or "", error.get("phase"), error.get("kind")
    if kind == state:
        return f"{message} (in {phase})" if phase else message
    return f"{kind} in {phase or 'run'}: {message}"


def cell_reason(summary: Mapping[str, Any]) -> str:
    """Why a sweep or study cell did not finish, in one line ("" for a cell that did: ok or oom)."""
    if summary.get("status") in DONE_STATUSES:
        return ""
    reason = end_reason(summary.get("status", ""), summary.get("error"))
    return reason.splitlines()[0] if reason else ""


def cell_outcome(label: str, status: str, reason: str = "") -> str:
    """A finished cell's line, with why it did not finish: "LABEL: failed: optimizer in run: …"."""
    return f"{label}: {status}" + (f": {reason}" if reason else "")


def finish_event(summary: RunSummary) -> Event:
    """The last event of a run, rebuilt from its summary."""
    if summary["status"] == OK:
        return {"event": FINISHED, "summary": summary}
    error = summary.get("error")
    if not error:
        return {"event": FAILED, "kind": summary["status"], "message": summary["status"], "summary": summary}
    return {"event": FAILED, **error, "summary": summary}
