"""What the Studies pane knows about the sweep or study it runs: a reducer over the `--events` stream."""
from __future__ import annotations

from dataclasses import dataclass, replace

from sysprof.profiler_core.api import events
from sysprof.profiler_core.base.units import duration


@dataclass(frozen=True)
class StudyState:
    stage: str = "idle"  # idle | running | finished | failed | opened
    kind: str | None = None
    directory: str | None = None
    cells: int = 0
    pending: int = 0
    done: int = 0
    current: str = ""
    eta_s: float | None = None
    unfinished: tuple[str, ...] = ()  # "label: status" of every cell that did not end ok
    message: str = ""

    @property
    def running(self) -> bool:
        return self.stage == "running"

    def apply(self, event: dict) -> StudyState:
        kind = event.get("event")
        if kind == events.STUDY:
            return replace(self, kind=event["kind"], directory=event["dir"], cells=event["cells"],
                           pending=event["pending"])
        if kind == events.CELL:
            return replace(self, current=event["label"], done=event["done"], eta_s=event.get("eta_s"))
        if kind == events.CELL_DONE:
            outcome = events.cell_outcome(event["label"], event["status"], event.get("reason", ""))
            unfinished = self.unfinished + ((outcome,) if event["status"] != "ok" else ())
            pending = event.get("pending", self.pending)  # fewer once an OOM ended a group
            return replace(self, done=event["done"], pending=pending, eta_s=event.get("eta_s"),
                           unfinished=unfinished, current="" if event["done"] >= pending else self.current)
        return self

    def ended(self, returncode: int | None, last_error: str) -> StudyState:
        """The process is gone: exit 0 finished everything, 1 left cells unfinished, anything else failed."""
        if returncode in (0, 1) and self.directory:
            return replace(self, stage="finished", current="",
                           message="" if returncode == 0 else "some cells did not finish")
        return replace(self, stage="failed", current="", message=last_error or f"exited with {returncode}")

    def _count(self) -> str:
        """An opened study counts its cells; a running one what its producer runs, beside its cells: a sweep's
        processes (a cell of --repeats 4 is four, a resume runs only what was left), a GPU pool's cells."""
        if self.stage == "opened":
            return f" · {self.done}/{self.cells} cells run"
        return f" · {self.done}/{self.pending} runs done · {self.cells} cell{'s' * (self.cells != 1)}"

    def progress_line(self) -> str:
        if self.stage == "idle":
            return "No study yet: pick one (or type a sweep) and press enter."
        head = f"[b]{self.kind or 'study'}[/b] · {self.stage}"
        if self.cells:
            head += self._count()
        if self.running and self.eta_s is not None:
            head += f" · ETA {duration(self.eta_s)}"
        if self.current:
            head += f"\nnow: {self.current}"
        if self.unfinished:
            head += "\n" + " · ".join(self.unfinished[-3:])
        if self.message:
            head += f"\n[b]{self.message}[/b]"
        return head

