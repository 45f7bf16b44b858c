"""Every message between processes, and every status a run or a cell ends in: spelled here, nowhere else.

One JSON object per line on stdout, each with an "event" name. Anything else on stdout (nsys banners, CUDA
chatter) is not an event and is skipped by the reader. Large payloads never travel here: they go to files in
the run directory and the event names the path. Three pipes speak this protocol:

- a runner or session → its launcher (the session, the CLI, the app): RUN_EVENTS;
- `sysprof sweep|study --events` → the app's Studies screen: STUDY_EVENTS
  ({"event": "study", "kind", "dir", "cells", "pending"} once the directory exists; {"event": "cell", "index",
  "label", "done", "pending", "eta_s"} when a sweep cell starts; {"event": "cell_done", "index", "label",
  "status", "done", "pending", "eta_s"} when a cell ends);
- a study's helper process (attention benchmark, precision lab) → the study driver, and the model inspector
  (`runner.inspect_model`) → `sysprof inspect` and the Configure screen: HELPER_EVENTS.
"""
from __future__ import annotations

import json

from profiler_core.records import Event, RunSummary

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
HELPER_EVENTS = (CELL_RESULT, LAB_RESULT, INSPECT)

EVENT_KINDS = RUN_EVENTS + STUDY_EVENTS + HELPER_EVENTS

CAPTURES = ("none", "nsys", "torch", "memory")  # what a runner pass records besides timing

# How a run, a pass or a study cell ended. A cancel is a failed run whose error kind is "cancelled".
OK, OOM, FAILED_STATUS = "ok", "oom", "failed"
PENDING, INCOMPLETE = "pending", "incomplete"  # a cell not run yet; a run directory without a summary
DONE_STATUSES = (OK, OOM)  # a cell that need not run again: an OOM is a result, not a failure
# killed: the runner died under a session that saw it; died: the session itself vanished (no one saw the end).
# disk: the run's own files no longer fit (ENOSPC, quota).
FAILURE_KINDS = ("oom", "config", "cuda", "killed", "died", "cancelled", "disk", "error")
CANCELLED, KILLED, DIED, CONFIG, DISK_FULL = "cancelled", "killed", "died", "config", "disk"


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


def emit(event: str, **fields: object) -> None:
    """Write one event; flushed at once so a reader sees each step as it happens."""
    print(encode_event(event, **fields), flush=True)


def finish_event(summary: RunSummary) -> Event:
    """The last event of a run, rebuilt from its summary."""
    if summary["status"] == OK:
        return {"event": FINISHED, "summary": summary}
    error = summary.get("error")
    if not error:
        return {"event": FAILED, "kind": summary["status"], "message": summary["status"], "summary": summary}
    return {"event": FAILED, **error, "summary": summary}
