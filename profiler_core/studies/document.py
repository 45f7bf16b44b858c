"""A study directory loaded once: its plan, and for a sweep's cells each one's config, summary, steps and profiled
pass. The tables, the kinds and `sysprof sweep`'s report take this document instead of a path, so building every
table of a study reads each file once (it read sweep.json four to six times and every summary twice)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import cast

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.errors import StudyError
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.documents.study_plans import study_plan
from sysprof.profiler_core.studies.sweep import cell_dir, load_plan, plan_configs
from sysprof.profiler_core.studies.tables import cell_row


@dataclass(frozen=True)
class Cell:
    index: int
    config: RunConfig
    run: Run  # its run directory, loaded once (empty before the cell ran)

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def summary(self) -> dict | None:
        """None before it ran, and for a torn summary (the cell runs again)."""
        return cast("dict | None", self.run.summary)

    @property
    def steps(self) -> list[dict]:
        return cast("list[dict]", self.run.steps)

    @property
    def profiled(self) -> dict | None:
        """The summary of its profiled pass, if it had one."""
        return cast("dict | None", self.run.profiled.summary) if self.run.profiled else None


@dataclass(frozen=True)
class Study:
    path: Path
    kind: str
    plan: dict
    varied: list[str] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)  # a sweep's cells in plan order; none for the attention study

    def damage_notes(self) -> list[str]:
        """What a damaged file left out of the study's tables: a cell's (its run's notes, named by its folder) or
        the lines of the attention study's cells.jsonl that are no record."""
        notes = [note for cell in self.cells for note in cell.run.damage_notes()]
        damaged = rundir.jsonl_records(self.path / rundir.ATTENTION_CELLS)[1]
        if damaged:
            notes.append(f"{self.path / rundir.ATTENTION_CELLS}: {damaged} damaged line(s) skipped; those cells are "
                         "left out (a resume runs them again)")
        return notes

    @classmethod
    def load(cls, path: Path) -> Study:
        found = study_plan(path)
        if found is None:
            raise StudyError(f"{path} is not a sweep or study directory")
        kind, plan = found
        if not (path / rundir.SWEEP_PLAN).is_file():
            if not plan:  # a torn plan: not an empty study
                raise StudyError(f"{path / rundir.ATTENTION_PLAN} is damaged (not a readable plan): the study cannot "
                                 "be read")
            return cls(path, kind, plan)
        # a torn plan reads as empty there: load_plan says why, as it always has
        configs, varied = plan_configs(path, plan) if plan else load_plan(path)
        return cls(path, kind, plan, varied, [_cell(path, index, cfg) for index, cfg in enumerate(configs)])

    @cached_property
    def rows(self) -> list[dict]:
        """One table row per cell (studies/tables.cell_row), in plan order."""
        return [cell_row(c.config.to_dict(), c.summary, c.steps, c.profiled) for c in self.cells]

    @property
    def summaries(self) -> list[dict | None]:
        return [cell.summary for cell in self.cells]

    @property
    def run_dirs(self) -> list[Path]:
        return [cell.path for cell in self.cells]

    @property
    def runs(self) -> list[Run]:
        return [cell.run for cell in self.cells]


def _cell(study_dir: Path, index: int, cfg: RunConfig) -> Cell:
    return Cell(index, cfg, Run.load(cell_dir(study_dir, index, cfg), tolerant=True, need_manifest=False))


def sweep_rows(sweep_dir: Path) -> list[dict]:
    """The rows of a sweep directory (it reads the directory: for several tables, load one Study)."""
    return Study.load(sweep_dir).rows
