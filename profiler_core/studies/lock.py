"""One process at a time runs a study directory's cells: two resumes of one study would run the same cells into the
same folders and leave steps that belong to neither. The lock is an flock on the directory's lock file, so it goes
with its process however that ends (a kill -9 included); the file names the holder for the message the second one
gets. A process takes it again freely (an advise's stages each run cells). On a file system shared between hosts
flock may not reach the other host: a resume there is not stopped by it."""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sysprof.profiler_core.base.errors import StudyError
from sysprof.profiler_core.documents.study_plans import study_kind

LOCK_FILE = ".running.lock"
_held: dict[Path, int] = {}  # directory → how many times this process holds it


@contextmanager
def study_lock(study_dir: Path) -> Iterator[None]:
    """Held while inside; StudyError when another process holds it, or when the directory holds no study (a lock
    file is written only into a study's own directory, never into whatever path was given)."""
    if study_kind(Path(study_dir)) is None:
        raise StudyError(f"{study_dir} is not a sweep or study directory")
    key = Path(study_dir).resolve()
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    with _locked(key):
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]


@contextmanager
def _locked(study_dir: Path) -> Iterator[None]:
    try:
        handle = (study_dir / LOCK_FILE).open("a+")
    except OSError as exc:
        raise StudyError(f"cannot lock {study_dir}: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyError(f"{study_dir} is being run by {_holder(handle)}: wait for it to end (sysprof ps lists "
                             f"it), or stop it first") from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _holder(handle) -> str:
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "{}")
    except ValueError:
        record = {}
    if not record.get("pid"):
        return "another process"
    since = time.strftime("%H:%M:%S", time.localtime(record.get("since", 0)))
    return f"process {record['pid']} on {record.get('host', '?')} (since {since})"
