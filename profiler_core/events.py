"""The runner protocol: one JSON object per line on stdout, each with an "event" name.

Anything else on stdout (nsys banners, CUDA chatter) is not an event and is skipped by the reader.
Large payloads never travel here: they go to files in the run directory and the event names the path.
"""
from __future__ import annotations

import json

SCHEMA_VERSION = 1
EVENT_KINDS = ("hello", "stage", "compile", "warmup_step", "step", "notice", "analysis", "finished", "failed")
CAPTURES = ("none", "nsys", "torch", "memory")  # what a runner pass records besides timing
FAILURE_KINDS = ("oom", "config", "cuda", "killed", "cancelled", "error")


def encode_event(event: str, **fields: object) -> str:
    if event not in EVENT_KINDS:
        raise ValueError(f"unknown event {event!r}")
    return json.dumps({"event": event, **fields}, separators=(",", ":"))


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


def emit(event: str, **fields: object) -> None:
    """Write one event; flushed at once so a reader sees each step as it happens."""
    print(encode_event(event, **fields), flush=True)


def finish_event(summary: dict) -> dict:
    """The last event of a run, rebuilt from its summary."""
    if summary["status"] == "ok":
        return {"event": "finished", "summary": summary}
    error = summary.get("error") or {"kind": summary["status"], "message": summary["status"]}
    return {"event": "failed", **error, "summary": summary}
