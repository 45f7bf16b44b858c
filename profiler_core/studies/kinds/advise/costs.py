"""What an advise study's stages cost and have spent: its budget left, its processes' seconds (a shared process's
start-up once, its arms' own shares), each first-stage cell's cost, and what a combination's steps will cost, planned
from those (study.py plans and runs the stages)."""
from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.arms import SHARED_RECORD, shared_seconds, shared_window
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.candidates import COMPILE_PREFIX, SAME_COMPILED_GRAPHS
from sysprof.profiler_core.studies.kinds.advise.cell_verdicts import candidate_cells
from sysprof.profiler_core.studies.kinds.advise.gpus import union_s
from sysprof.profiler_core.studies.shared_rounds import SHARED_DIR

DEFAULT_BUDGET_MIN = 20.0


def budget_left_of(study_dir: Path) -> float:
    """Seconds left of the study's own budget: it less what its processes took by their own clocks (the
    diagnosis's profiled pass and the advisor's own work are not counted)."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    return float(advice.get("budget_s") or _budget_typed_s(study_dir)) - spent_s(study_dir)


def _budget_typed_s(study_dir: Path) -> float:
    """The budget a study saved before its budget was kept was started with: its command's --budget, else the
    default (a study started with --budget 5 must not resume with 15 minutes)."""
    try:
        command = str((rundir.read_json(study_dir / rundir.SWEEP_PLAN) or {}).get("command") or "")
        words = [part for word in shlex.split(command) for part in word.split("=", 1)]  # --budget=5 as --budget 5
        return float(words[words.index("--budget") + 1]) * 60
    except (ValueError, IndexError, rundir.RunDirError):
        return DEFAULT_BUDGET_MIN * 60


def spent_s(study_dir: Path) -> float:
    """What the study's processes took: each process directory's clean pass window (summary["ran"]; a group's
    summary carries its first process's, the later ones are in repeats/NN), whatever its status (a process cut
    short spent its time too, until a resume runs it again in its place); a shared process's whole window once
    (its arms' summaries each carry it), and shared processes side by side on several GPUs as the clock saw them."""
    total = union_s(window for folder in _shared_folders(study_dir) if (window := shared_window(folder)))
    for path in (study_dir / rundir.SWEEP_CELLS_DIR).glob(f"**/{rundir.SUMMARY}"):
        try:
            summary = rundir.read_json(path) or {}
        except rundir.RunDirError:
            continue  # a torn summary: that process runs again, and counts then
        ran = summary.get("ran") or {}
        if "start" in ran and "end" in ran and "shared_process" not in summary:
            total += ran["end"] - ran["start"]
    return total


def _shared_folders(study_dir: Path) -> list[Path]:
    root = study_dir / SHARED_DIR
    return sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []


def shared_start_s(study_dir: Path) -> float | None:
    """A shared process's seconds beyond its arms' own (imports, the CUDA context, the arms' bookkeeping), the
    mean over the study's shared processes; None before one ended."""
    starts = [start for folder in _shared_folders(study_dir) if (start := _start_of(folder)) is not None]
    return sum(starts) / len(starts) if starts else None


def _start_of(folder: Path) -> float | None:
    wall = shared_seconds(folder)
    record = rundir.read_json(folder / SHARED_RECORD) or {}
    own = [((rundir.read_json(folder / arm / rundir.SUMMARY) or {}).get("shared_process") or {}).get("own_s")
           for arm in record.get("arms", [])]
    if not wall or not own or any(value is None for value in own):
        return None
    return max(wall - sum(float(value) for value in own if value is not None), 0.0)


def timed_cell_s(study: Study, advice: dict) -> float | None:
    """The mean time of the first stage's whole cells: what the budget counts a cell at when the stage was stopped
    before it could time itself (a resumed study). A cell at 2.7B's scale is minutes where the start-up estimate
    says one: a combination planned with the estimate ran four cells in a budget for one."""
    times = list(cell_times(study, advice).values())
    return sum(times) / len(times) if times else None


def cell_times(study: Study, advice: dict) -> dict[str, float]:
    """Seconds each first-stage cell took, its baseline's as "baseline": the sum of its processes' own clocks
    (summary["ran"]); a cell with a process missing or untimed is left out."""
    return {name: cost.total_s for name, cost in cell_costs(study, advice).items()}


@dataclasses.dataclass(frozen=True)
class CellCost:
    """What a first-stage cell took: in all, and the part of it that is not its steps (start-up, compile)."""
    total_s: float
    overhead_s: float
    step_s: float | None  # its step median; None where it has none (the overhead is then the whole cell)
    # the overhead had every process found its compiled graphs cached, as its later ones did (one process: overhead_s)
    warm_overhead_s: float


def cell_costs(study: Study, advice: dict) -> dict[str, CellCost]:
    baseline, measured = candidate_cells(study, advice)
    names = ["baseline", *(described["name"] for described in advice.get("candidates", []))]
    costs = {}
    for name, cell in zip(names, [baseline, *measured] if baseline is not None else []):
        records = ((cell.summary or {}).get("repeats") or {}).get("processes") or []
        timed = [_own_seconds(record) for record in records]
        times = [t for t in timed if t is not None]
        if len(records) != cell.config.repeats or len(times) != len(timed):
            continue
        step_s = step_s_of(cell)
        process_steps_s = 0.0 if step_s is None else _steps_run(cell.config) * step_s / len(times)
        overhead = max(sum(times) - process_steps_s * len(times), 0.0)
        later = [max(t - process_steps_s, 0.0) for t in times[1:]]
        warm = min(overhead, len(times) * sum(later) / len(later)) if later else overhead
        costs[name] = CellCost(sum(times), overhead, step_s, warm)
    return costs


def _own_seconds(record: dict) -> float | None:
    """A process's seconds: its clean pass's window, or an arm's own share of a shared process."""
    shared = record.get("shared_process") or {}
    if "own_s" in shared:
        return float(shared["own_s"])
    window = record.get("ran") or {}
    return window["end"] - window["start"] if "start" in window and "end" in window else None


def step_s_of(cell: Any) -> float | None:
    step = ((cell.summary or {}).get("phases") or {}).get("step") or {}
    return step["median_ms"] / 1e3 if step.get("median_ms") else None


def _steps_run(cfg: RunConfig) -> int:
    """The steps a cell's processes run, warm-up included (a compiling config's compile pass is counted in its
    overhead)."""
    return cfg.repeats * (cfg.warmup + cfg.steps)


def _step_cost_s(parts: list[str], costs: dict[str, CellCost], per_cell_s: float, steps_run: int,
                 warm: bool = False) -> float:
    """One combination step's cell: the most start-up and compile any of its parts' cells spent (as their later
    processes spent it, when warm: finds_its_graphs_cached), plus its own steps at the step the parts predict
    together (the baseline's × each part's step over the baseline's: bf16 0.22 × batch 16's 3.54). Without every
    part and the baseline timed, its costliest part's whole cell (the mean cell for a part not timed): "bf16 + batch
    16" was then charged fp32 batch 16's 129 s and took 36 s."""
    known = [costs[part] for part in parts if part in costs]
    base = costs.get("baseline")
    if len(known) < len(parts) or base is None or base.step_s is None or any(c.step_s is None for c in known):
        return max((costs[part].total_s if part in costs else per_cell_s) for part in parts)
    step_s = base.step_s
    for cost in known:
        step_s *= (cost.step_s or base.step_s) / base.step_s
    return max(cost.warm_overhead_s if warm else cost.overhead_s for cost in known) + steps_run * step_s


def finds_its_graphs_cached(parts: list[str], before: list[str]) -> bool:
    """A compiled step that adds to the step before only parts leaving its compiled graphs as they were: its first
    process loads them from inductor's cache as later processes do (2.7B on an H200: "+ fused optimizer step" on the
    reduce-overhead step took 48 and 51 s a process where that step's took 94 and 52; charged cold, 170 s for 99).
    It rests on the step before's first process running just before this one's, as a sweep's first round does
    (the advisor runs one cell at a time), and on that step having run; a step before that failed first is the
    one case it charges too little."""
    added = [part for part in parts if part not in before]
    compiled = [part for part in before if part.startswith(COMPILE_PREFIX)]
    keeps_graphs = all(part in SAME_COMPILED_GRAPHS for part in added)
    return bool(added) and bool(compiled) and set(before) <= set(parts) and keeps_graphs


def affordable_steps(study: Study, advice: dict, steps: list[tuple[str, Any]], per_cell_s: float,
                     budget_left_s: float, shared: bool) -> tuple[int, float]:
    """(steps the budget affords after a fresh baseline, seconds all of them would take), each step costed by
    _step_cost_s from the first stage's cells, warm where it finds the step before's graphs cached. shared: the
    combination's cells are arms of shared processes (a round's start-up once); a first stage that shared its
    processes timed its cells without a start-up, which fresh processes each pay again."""
    costs = cell_costs(study, advice)
    baseline, _ = candidate_cells(study, advice)
    steps_run = _steps_run(baseline.config) if baseline is not None else 0
    spent = costs["baseline"].total_s if "baseline" in costs else per_cell_s
    rounds = baseline.config.repeats if baseline is not None else 0
    start_s = (shared_start_s(study.path) or 0.0) if advice.get("shared") else 0.0
    spent += rounds * start_s
    before: list[str] = []  # the parts of the step before
    affordable = 0
    for name, _ in steps:
        parts = name.split(" + ")
        spent += 0.0 if shared else rounds * start_s
        spent += _step_cost_s(parts, costs, per_cell_s, steps_run, finds_its_graphs_cached(parts, before))
        affordable += spent <= budget_left_s
        before = parts
    return affordable, spent


def cut_by_the_budget(study: Study, advice: dict, per_cell_s: float, budget_left_s: float) -> bool:
    """A combination the budget stopped short (not run, or steps left out) and a budget that affords more steps than
    it ran (counted as combine counts them; a step left out may hold against the last that held even where the one
    before it did not): resumed, it runs again whole, so each step is measured interleaved with the ones before it
    and a fresh baseline (steps added to the old cells alone would be compared across time). A resume without more
    budget leaves it as it is. One the budget skipped whole has no steps on record: combine plans it again, and
    skips it again where it still cannot pay."""
    combination = advice["combination"]
    if "skipped" in combination:
        return True
    planned = [(step["name"], None) for step in combination.get("steps", []) + combination.get("left_out", [])]
    affordable, _ = affordable_steps(study, advice, planned, per_cell_s, budget_left_s, bool(combination.get("shared")))
    return affordable > len(combination.get("steps", []))
