"""--hold: a runner started beside the clean pass, ready but idle until the session releases it.

The profiled pass is a second process (under nsys, a second program too): starting nsys, Python, torch and the CUDA
context takes longer than its steps do. Started at the same moment as the clean pass and held here, that start-up
overlaps the clean pass's own, and the held process does nothing at all (blocked reading its stdin) while the clean
steps are measured."""
from __future__ import annotations

import sys

import torch

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.events import emit


class NotNeeded(Exception):
    """The session closed our stdin without releasing us: the clean pass failed or was cancelled."""


def wait_for_release(device: torch.device) -> None:
    if device.type == "cuda":
        torch.zeros(1, device=device)  # the CUDA context, made now rather than when the clean pass has ended
    emit(events.STAGE, name="held")
    if sys.stdin.readline().strip() != events.RELEASE_LINE:
        raise NotNeeded
