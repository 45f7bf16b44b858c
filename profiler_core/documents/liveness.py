"""The liveness record: `live.json` in a run or study directory names the process that drives it (pid, process
group, host) and its mtime is the heartbeat. Reading it needs json and paths only, so the app, the CLI and the
session all judge "still running" the same way, below the session that writes it (session/live.py).
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from sysprof.profiler_core.base import rundir

HEARTBEAT_S = 2.0  # how often a live process touches live.json
STALE_S = 30.0  # a heartbeat older than this: the process is gone, whatever its pid says (a reused pid)
RUN, STUDY = "run", "study"


@dataclass(frozen=True)
class LiveProcess:
    """What live.json says about a directory's process, and whether that process is still there."""
    directory: Path
    pid: int
    pgid: int
    kind: str
    started_at: float
    heartbeat_age_s: float
    alive: bool
    config: dict | None
    here: bool  # on this host: its pid can be checked and signalled from here


def live_process(directory: Path) -> LiveProcess | None:
    """The directory's live process (alive or died), or None when nothing runs there (or ever ran)."""
    path = directory / rundir.LIVE
    try:
        record = json.loads(path.read_text())
        age = max(0.0, time.time() - path.stat().st_mtime)
        pid, pgid, started = int(record["pid"]), int(record["pgid"]), float(record.get("started_at") or 0)
        config = record.get("config") if isinstance(record.get("config"), dict) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # gone meanwhile, or torn: not ours to judge
    here = record.get("host") == socket.gethostname()
    alive = age < STALE_S and (not here or pid_exists(pid))
    return LiveProcess(directory, pid, pgid, str(record.get("kind")), started, age, alive, config, here)


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process has that pid now: ours is not there either
        return False
    return True


def in_progress(root: Path) -> list[LiveProcess]:
    """Every directory under the runs root with a live.json, newest first (the dead ones too: settle them)."""
    try:
        candidates = [path for path in root.iterdir() if (path / rundir.LIVE).exists()]
    except OSError:
        return []
    found = [live for live in map(live_process, candidates) if live is not None]
    return sorted(found, key=lambda live: live.started_at, reverse=True)
