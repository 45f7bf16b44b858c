"""The tracker of a loop that is not traced (SYSPROF_TRACE=0, or one that could not start): every call does nothing."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any


class NullTracker:
    """A tracker that does nothing, at the cost of entering an empty context."""

    run_dir = None

    @contextmanager
    def step(self):
        yield _NULL_STEP

    @contextmanager
    def phase(self, name: str):
        yield

    def finish(self, error: BaseException | None = None) -> None:
        return None


class _NullStep:
    def record(self, loss: Any = None, tokens: int | None = None) -> None:
        pass


_NULL_STEP = _NullStep()
