"""What a reader of one input format is: it says whether a path is its kind (`claims`) and turns it into the
analysis document `sysprof analyze` prints (`read`). Kernel readers also give the labelled kernels themselves
(`attribute`), which the profiled pass turns into a run's kernel tables."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution


@dataclass(frozen=True)
class ReadOptions:
    nsys: str | None = None  # the nsys that exports a .nsys-rep (else found as the profiled pass finds it)
    prefix: str | None = None  # which `nsys stats` set of a directory holding several
    phase_names: dict[str, str] | None = None  # each phase's NVTX range, where a profile's are not names we know


class Reader(Protocol):
    name: str  # the analysis's source_kind
    what: str  # the input in words, for the error that lists what `analyze` takes

    def claims(self, path: Path) -> bool: ...

    def read(self, path: Path, options: ReadOptions) -> dict: ...


class KernelReader(Reader, Protocol):
    def attribute(self, path: Path, phase_names: dict[str, str] | None = None) -> KernelAttribution: ...
