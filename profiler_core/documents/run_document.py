"""A run directory loaded once: manifest, summary, steps, and on demand its analyses and its profiled pass,
each file read at most once (HTA's parse-once trace is the model).

The tables, exports, compare and the app take a `Run` instead of a path, and ask it typed questions
(`run.median_ms("forward")`, `run.analysis(KERNELS)`) instead of chaining `.get("phases")` over a dict.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.errors import RunDirError
from sysprof.profiler_core.base.records import PhaseStats, RunSummary, StepRecord, median_ms, phases_of

KERNELS, MEMORY = rundir.KERNELS_DIR, rundir.MEMORY_DIR  # the analyses a run may hold, by kind


@dataclass
class Run:
    path: Path
    manifest: dict = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    summary: RunSummary | None = None
    problems: dict[str, str] = field(default_factory=dict)  # file name → why it was not read (tolerant loads)
    _analyses: dict[str, dict | None] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: Path, tolerant: bool = False, *, need_manifest: bool = True) -> Run:
        """The run's files. tolerant: a damaged manifest or summary is left out, with the reason in .problems,
        so that what is intact (its steps, its analyses) still opens. need_manifest=False: a directory that
        may not have started yet (a sweep cell) loads as an empty run instead of failing."""
        path = Path(path)
        if need_manifest and not (path / rundir.MANIFEST).is_file():
            raise RunDirError(f"{path} is not a run directory (no {rundir.MANIFEST})")
        steps, damaged = rundir.jsonl_records(path / rundir.STEPS)
        run = cls(path, steps=cast("list[StepRecord]", steps))
        if damaged:
            run.problems[rundir.STEPS] = f"{path / rundir.STEPS}: {damaged} damaged line(s) skipped"
        for name in (rundir.MANIFEST, rundir.SUMMARY):
            try:
                document = rundir.read_json(path / name)
            except RunDirError as exc:
                if not tolerant:
                    raise
                run.problems[name], document = str(exc), None
            if name == rundir.MANIFEST:
                run.manifest = document or {}
            else:
                run.summary = cast("RunSummary | None", document)
        return run

    def damage_notes(self) -> tuple[str, ...]:
        """Each damaged file a load or a read of an analysis met, why, and what the run shows instead."""
        instead = {rundir.SUMMARY: "the statistics are from steps.jsonl", rundir.STEPS: "the steps shown are the rest",
                   rundir.MANIFEST: "left out"}
        return tuple(f"{problem}; " + instead.get(name, "only its whole rows are shown" if name.endswith(".csv")
                                                  else "its tables are left out")
                     for name, problem in self.problems.items())

    @property
    def status(self) -> str:
        return self.summary.get("status", events.INCOMPLETE) if self.summary else events.INCOMPLETE

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.get("config") or {}

    @property
    def env(self) -> dict[str, Any]:
        return self.manifest.get("env") or {}

    @property
    def phases(self) -> dict[str, PhaseStats]:
        return phases_of(self.summary)

    def median_ms(self, phase: str = "step") -> float | None:
        return median_ms(self.summary, phase)

    @property
    def measured_steps(self) -> list[StepRecord]:
        """The clean pass's measured steps (a profiled or memory pass's steps are kept apart)."""
        return [s for s in self.steps if s.get("kind") == "measured" and not s.get("pass")]

    @property
    def measured_count(self) -> int:
        """Measured steps that finished: the summary's count (every process of a group), else steps.jsonl's."""
        step = self.phases.get("step")
        return step["n"] if step and step["n"] else len(self.measured_steps)

    def analysis(self, kind: str) -> dict | None:
        """kind's analysis.json (KERNELS | MEMORY), read once; None where that pass did not run or left a damaged file
        (then said in .problems)."""
        if kind not in self._analyses:
            try:
                self._analyses[kind] = rundir.read_json(self.path / kind / rundir.ANALYSIS)
            except RunDirError as exc:
                self._analyses[kind] = None
                self.problems[f"{kind}/{rundir.ANALYSIS}"] = str(exc)
        return self._analyses[kind]

    @cached_property
    def profiled(self) -> Run | None:
        """The profiled pass's own run (profiled/), if the run had one."""
        directory = self.path / rundir.PROFILED_DIR
        return Run.load(directory, tolerant=True, need_manifest=False) if directory.is_dir() else None

