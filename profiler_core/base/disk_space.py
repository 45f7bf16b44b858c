"""A full disk: telling it from other write errors, and the reserve a run sets aside while it runs so that its
summary still fits when the disk fills mid-run. Apart from rundir.py, which names a run's files and writes them:
this is what those writes, the runner and the session fall back on when space runs out.
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

RESERVE, RESERVE_BYTES = ".reserve", 256 * 1024  # set aside while a run runs: its summary fits on a full disk


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def reserve_space(directory: Path) -> None:
    """Set RESERVE_BYTES aside in directory for the summaries written when the disk fills mid-run; on a disk with
    less free than that, half of what is free (a summary needs kilobytes, and no reserve at all would cost the run
    its summary). Best effort: on a disk already full there is nothing to set aside, and the run's first write
    says so."""
    path = directory / RESERVE
    for size in (RESERVE_BYTES, min(RESERVE_BYTES, _free_bytes(directory) // 2)):  # a quota, not the disk, may refuse
        if size > 0 and _set_aside(path, size):
            return


def _set_aside(path: Path, size: int) -> bool:
    try:
        with path.open("wb") as handle:
            try:
                os.posix_fallocate(handle.fileno(), 0, size)
            except OSError as exc:
                if is_disk_full(exc):
                    raise
                handle.write(bytes(size))  # a file system without fallocate: blocks written out
    except OSError:
        path.unlink(missing_ok=True)  # what did go in is given back before the next, smaller try
        return False
    return True


def _free_bytes(directory: Path) -> int:
    """What an ordinary user may still write on directory's file system (0 when it cannot be told)."""
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return 0


def release_space(directory: Path) -> bool:
    """Give the reserve back (from directory or the run directory above a pass's); False when there was none."""
    for folder in (directory, *list(directory.parents)[:2]):
        reserve = folder / RESERVE
        if reserve.exists():
            reserve.unlink(missing_ok=True)
            return True
    return False
