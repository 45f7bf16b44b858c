"""`sysprof advise`: which change makes this config's step faster on this node, answered by running it.

First the diagnosis: one process of the config as given, profiled on a GPU (diagnosis.py), whose
launch verdicts and kernel shares order the plan a budget cuts. Then the baseline and every candidate that applies
(candidates.py) are the cells of one sweep, so their fresh processes run round-robin, every other round
reversed: each candidate is interleaved with the baseline, and drift on a shared node hits all alike. Each candidate
is then compared with the baseline as `sysprof compare` does (the two-gate verdict on tokens/s and on the phase it
should move), with its memory, its compile time and a numerics check: its loss against the baseline's after as many
weight updates (the same seed, so the same data; another batch is other data and is judged on tokens/s alone). A
candidate passes when tokens/s is faster beyond noise and its loss agrees; it is recommended only when that gain
holds measured again against a fresh baseline, where the others that passed are added to it one by one (_combine).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.code_specs import code_location_problems
from sysprof.profiler_core.base.config import RunConfig, validate
from sysprof.profiler_core.base.errors import ConfigError, UsageError
from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.session.arms import BLOCKS, shareable
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, run_configs
from sysprof.profiler_core.studies.kinds.advise import ceiling as advise_ceiling
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise import gpus as advise_gpus
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.kinds.advise.candidates import (
    ARM_S,
    COMPILED_PROCESSES,
    PROCESS_S,
    SHARED_START_S,
    Candidate,
    Plan,
    by_expected_gain,
    candidates,
    chain,
    options_text,
    plan,
    with_processes,
)
from sysprof.profiler_core.studies.kinds.advise.ceiling import CEILING_S
from sysprof.profiler_core.studies.kinds.advise.costs import (
    DEFAULT_BUDGET_MIN,
    affordable_steps,
    budget_left_of,
    cut_by_the_budget,
    shared_start_s,
    spent_s,
    step_s_of,
    timed_cell_s,
)
from sysprof.profiler_core.studies.kinds.advise.goal import GOALS, SPEED, goal_of, goal_problem, within_noise
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, seen_of, sharing_problem
from sysprof.profiler_core.studies.kinds.advise.together import together
from sysprof.profiler_core.studies.progress import Progress

DEFAULT_REPEATS = 4  # fresh processes per cell: the fewest a verdict between processes can rest on (Mann–Whitney)
DIAGNOSIS_CELL = 0  # the profiled process of the config as given; the plan's cells come after it


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.set_defaults(repeats=DEFAULT_REPEATS)
    parser.add_argument("--resume", type=Path, metavar="DIR", help="continue an advise study: its cells that did "
                        "not finish, then its combination (the run options are the study's own)")
    parser.add_argument("--fresh-processes", action="store_true",
                        help="a fresh process for every candidate's every repeat, as a sweep runs them (by default "
                             "the candidates are arms of shared processes, measured in interleaved blocks, where "
                             "their models fit on the device together)")
    parser.add_argument("--budget", type=float, metavar="MINUTES",
                        help=f"candidates in order of their usual gain while the estimate fits (default "
                             f"{DEFAULT_BUDGET_MIN:.0f}); the plan names the ones left out. With --resume: minutes "
                             "more (default: what is left of the study's own budget)")
    parser.add_argument("--goal", choices=sorted(GOALS), default=SPEED.name,
                        help="what the answer is best at: speed (tokens/s, the default) or energy (tokens per joule "
                             "from NVML's energy counter, on a GPU; each arm's block then lasts 1.5 s or more)")
    parser.add_argument("--gpus", metavar="IDS", help="idle GPUs to measure on side by side (0,1,2,3, or `idle`: every "
                        "idle one): each takes a round of the shared processes at once, each round measuring the "
                        "baseline beside every candidate; the budget stays minutes on the clock. With --resume: "
                        "in place of the study's own")


def run(args: argparse.Namespace) -> Path:
    if args.budget is not None and not args.budget > 0:
        raise UsageError(f"--budget must be a positive number of minutes; got {args.budget:g}")
    if args.resume:
        return resume(args, args.resume)
    args.budget = DEFAULT_BUDGET_MIN if args.budget is None else args.budget
    base = validate(config_from_args(args))
    if base.repeats < 2:
        raise UsageError(f"--repeats {base.repeats}: the advisor needs at least 2 processes per cell (the spread "
                         f"between them is what a verdict is judged against); the default is {DEFAULT_REPEATS}")
    limit = device_memory(base.device)
    if fit_problem(base, limit):
        raise ConfigError(f"the baseline itself: {str(fit_problem(base, limit)).split(' (--force')[0]}")
    device = "cuda" if _on_gpu(base) else "cpu"
    if goal_problem(GOALS[args.goal], device == "cuda"):
        raise UsageError(str(goal_problem(GOALS[args.goal], device == "cuda")))
    gpus = _gpus_of(args, device)
    first_look = plan(candidates(base, device == "cuda", limit), args.budget * 60 - PROCESS_S[device], base,
                      device, shared=not args.fresh_processes)  # before the diagnosis: anything to measure at all?
    if not first_look.chosen:
        reasons = "; ".join(f"{c.name}: {why}" for c, why in first_look.skipped)
        raise ConfigError(f"no change the advisor knows applies to this config ({reasons})")
    started = time.monotonic()
    if not args.events:
        Console(stderr=True, highlight=False).print(
            "[bold]diagnosis[/]: one process of the config as given" + (", profiled" if device == "cuda" else ""))
    study_dir = run_configs(args, "advise", [diagnosis_config(base, device == "cuda")], [],
                            lambda study_dir: rundir.write_json(study_dir / rundir.ADVICE_PLAN, {
                                "baseline": base.to_dict(), "diagnosis_cell": DIAGNOSIS_CELL,
                                "budget_s": args.budget * 60, "gpus": gpus, "goal": args.goal}))
    _measure(args, study_dir, base, args.budget * 60 - (time.monotonic() - started) - CEILING_S[device])
    _ceiling(args, study_dir)
    return study_dir


def _gpus_of(args: argparse.Namespace, device: str, saved: list[str] | None = None) -> list[str]:
    """The GPUs the rounds run on (gpus.py), checked; the first one runs everything else."""
    gpus = advise_gpus.chosen(args.gpus) if args.gpus else list(saved or [])
    if gpus and device != "cuda":
        raise UsageError("--gpus measures on GPUs; this config runs on the CPU")
    if gpus and args.fresh_processes:
        raise UsageError("--gpus runs the rounds of shared processes side by side; --fresh-processes runs a "
                         "process per cell, one at a time: leave one of them out")
    advise_gpus.run_diagnosis_on(gpus)
    return gpus


def _wall_share(study_dir: Path, base: RunConfig, shared: bool) -> float:
    """What a later stage's process-seconds take on the clock: all of them on one GPU; on several, the share of a
    compiled cell's (its fewer processes gain least from running side by side)."""
    gpus = (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}).get("gpus") or []
    return advise_gpus.wall_share(min(base.repeats, COMPILED_PROCESSES), len(gpus) if shared else 1)


def _ceiling(args: argparse.Namespace, study_dir: Path) -> None:
    """The answer's matmuls timed alone (ceiling.py), after every other stage."""
    err = Console(stderr=True, highlight=False)
    advise_ceiling.measure(study_dir, lambda name: None if args.events else err.print(
        f"[bold]ceiling[/]: the matmuls of {escape(name)}, timed alone", soft_wrap=True))


def diagnosis_config(base: RunConfig, on_gpu: bool) -> RunConfig:
    """The baseline once, with its profiled pass where there are CUDA kernels to profile."""
    return dataclasses.replace(base, repeats=1, profiler="auto" if on_gpu else "none")


def _on_gpu(base: RunConfig) -> bool:
    return base.device == "cuda" or (base.device == "auto" and visible_gpu_count() > 0)


def _measure(args: argparse.Namespace, study_dir: Path, base: RunConfig, budget_left_s: float) -> None:
    """After the diagnosis: the plan it orders, its candidates measured against the baseline (new cells,
    interleaved), then the last stage (_combine)."""
    on_gpu, limit = _on_gpu(base), device_memory(base.device)
    diagnosis = Study.load(study_dir).cells[DIAGNOSIS_CELL]
    hint = advise_diagnosis.hints(diagnosis.summary, diagnosis.run.analysis(rundir.KERNELS_DIR))
    step = ((diagnosis.summary or {}).get("phases") or {}).get("step") or {}
    step_s = step["median_ms"] / 1e3 if step.get("median_ms") else None
    seen = _seen(diagnosis, base)
    found = advise_diagnosis.weighted(candidates(base, on_gpu, limit, seen), hint)
    at_once = together(base, found, limit, seen)
    found = [at_once, *found] if at_once else found
    shared = _sharing(args, [base, *(c.config for c in found if c.config is not None)], limit, seen)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    chosen = plan(found, budget_left_s, base, "cuda" if on_gpu else "cpu", step_s, shared=shared is None,
                  min_steps_s=BLOCKS * goal_of(advice).min_block_s, lanes=len(advice.get("gpus") or []))
    if not chosen.chosen:
        _save_plan(study_dir, base, chosen, hint, args, first_cell=None)
        return
    started = time.monotonic()
    configs = [base, *(with_processes(c.config, base, shared is None) for c in chosen.chosen if c.config is not None)]
    first = sweep.extend(study_dir, configs)
    _save_plan(study_dir, base, chosen, hint, args, first_cell=first)
    _update_advice(study_dir, shared=shared is None, **({"not_shared": shared} if shared else {}))
    _run_cells(args, study_dir, shared is None)
    per_cell_s = (time.monotonic() - started) / len(configs)  # every process of a cell, start-up included
    _update_advice(study_dir, per_cell_s=per_cell_s)  # what a resumed combination is planned with
    if len(chosen.chosen) == 1:
        _adopt_the_lone_candidate(study_dir, shared is None)
    else:
        _combine(args, study_dir, base, limit, per_cell_s, budget_left_s - per_cell_s * len(configs))
    _refine(args, study_dir, base, limit, budget_left_s - (time.monotonic() - started))


def _sharing(args: argparse.Namespace, configs: list[RunConfig], limit: tuple[int, str] | None,
             seen: Seen) -> str | None:
    """Why the cells cannot be arms of shared processes (None: they are): --fresh-processes, a pass or device they
    cannot share, or memory their models together would not fit in."""
    if args.fresh_processes:
        return "--fresh-processes"
    return shareable(configs) or sharing_problem(configs, limit, seen)


def _run_cells(args: argparse.Namespace, study_dir: Path, shared: bool) -> None:
    """The plan's cells not done: each round one shared process measuring all of them, else a fresh process each."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    gpus = advice.get("gpus") or []
    with Progress(args.events).recorded(study_dir) as progress:
        sweep.run(study_dir, progress.sweep_listener("advise", study_dir), shared=shared, gpus=gpus if shared else (),
                  min_block_s=goal_of(advice).min_block_s)


def _seen(diagnosis: Any, base: RunConfig) -> Seen:
    """What the diagnosis's process showed: its measured peak per phase (of a process that ended ok: an OOM's peak
    is not what the config needs), the arguments a user's factory was given, the GPU's compute capability."""
    summary = diagnosis.summary or {}
    peaks = (summary.get("peak_memory_bytes") or {}) if summary.get("status") == events.OK else {}
    kwargs = (diagnosis.run.manifest.get("model") or {}).get("kwargs") if base.model_factory else None
    capability = (diagnosis.run.manifest.get("env") or {}).get("capability")
    return seen_of(base, {phase: int(peak) for phase, peak in peaks.items() if peak}, kwargs, capability)


def resume(args: argparse.Namespace, study_dir: Path) -> Path:
    """The stages left (_resume_stages), then the answer's ceiling where the answer is new."""
    _resume_stages(args, study_dir)
    _ceiling(args, study_dir)
    return study_dir


def _resume_stages(args: argparse.Namespace, study_dir: Path) -> None:
    """Run an advise study's cells that did not finish, then the stages that never started (the plan after the
    diagnosis, the combination after the candidates), within --budget more minutes, else what is left of the
    study's own budget."""
    if study_kind(study_dir) != "advise":
        raise UsageError(f"{study_dir} is not an advise study directory (`sysprof sweep --resume` continues others)")
    configs, _ = sweep.load_plan(study_dir)
    for cfg in configs:  # the plan was read without it: its cells are about to run here
        for problem in code_location_problems(cfg).values():
            raise UsageError(f"{study_dir}: {problem}")
    saved = (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}).get("gpus")
    _update_advice(study_dir, gpus=_gpus_of(args, "cuda" if _on_gpu(configs[0]) else "cpu", saved))
    if args.budget is not None:  # minutes more: the study's budget grows by them, so a later resume keeps the rest
        _update_advice(study_dir, budget_s=spent_s(study_dir) + args.budget * 60)
    budget_s = budget_left_of(study_dir)
    if not args.events:
        Console(stderr=True, highlight=False).print(_resume_budget_line(args.budget, budget_s))
    budget_s -= CEILING_S["cuda" if _on_gpu(configs[0]) else "cpu"]
    started = time.monotonic()
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    latest = advice.get("refine") or advice.get("combination") or advice  # its cells are the ones left to run
    _run_cells(args, study_dir, bool(latest.get("shared")) and not args.fresh_processes)
    base = RunConfig.from_dict(advice["baseline"]) if "baseline" in advice else configs[0]
    budget_left_s = budget_s - (time.monotonic() - started)
    if "candidates" not in advice:
        _measure(args, study_dir, base, budget_left_s)
        return
    # the candidates' cells as timed when they ran (compiles and steps included), else the plan's start-up estimate
    per_cell_s = (advice.get("per_cell_s") or timed_cell_s(Study.load(study_dir), advice)
                  or PROCESS_S["cuda" if _on_gpu(base) else "cpu"] * base.repeats)
    study = Study.load(study_dir)
    share = _wall_share(study_dir, base, bool((advice.get("combination") or advice).get("shared")))
    if "combination" not in advice and len(advice["candidates"]) == 1:
        _adopt_the_lone_candidate(study_dir, bool(advice.get("shared")))
    elif "combination" not in advice or cut_by_the_budget(study, advice, per_cell_s, budget_left_s / share):
        _combine(args, study_dir, base, device_memory(base.device), per_cell_s, budget_left_s)
    _refine(args, study_dir, base, device_memory(base.device), budget_s - (time.monotonic() - started))


def _resume_budget_line(asked_min: float | None, budget_s: float) -> str:
    if asked_min is not None:
        return f"budget: {asked_min:g} min more"
    if budget_s > 0:
        return f"budget: {budget_s / 60:.1f} min left of the study's own (--budget MINUTES for more)"
    return "budget: the study's own is spent: only its unfinished cells run (--budget MINUTES for more)"


def _combine(args: argparse.Namespace, study_dir: Path, base: Any, limit: tuple[int, str] | None,
             per_cell_s: float, budget_left_s: float) -> None:
    """The last stage: the best candidate that passed measured again, then the others added one by one, as new
    cells interleaved with a fresh baseline (each step against the one before it), as far as the budget left
    allows. A gain that does not hold here is not recommended: one lucky stage (a neighbour that slowed the
    baseline's processes) must not become the answer."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    baseline, measured = advise_tables.candidate_cells(study, advice)
    rows = [advise_tables.candidate_row(d, baseline, cell, goal_of(advice))
            for d, cell in zip(advice["candidates"], measured)]
    ranked = _ranked_for_combination(advice, rows)
    diagnosis = study.cells[advice.get("diagnosis_cell", DIAGNOSIS_CELL)]
    steps = chain(base, ranked, limit, _seen(diagnosis, base))
    if not steps:
        return
    steps += [(f"{steps[-1][0]} + {name}", changes)  # a batch the steps before freed memory and launch gaps for
              for name, changes in advise_refine.larger_batch(base, steps[-1][1], limit, _seen(diagnosis, base))]
    shared = _sharing(args, [base, *(dataclasses.replace(base, **changes) for _, changes in steps)], limit,
                      _seen(diagnosis, base))  # decided first: fresh processes cost a start-up each
    share = _wall_share(study_dir, base, shared is None)
    affordable, all_steps_s = affordable_steps(study, advice, steps, per_cell_s, budget_left_s / share, shared is None)
    all_steps_s *= share
    if affordable < 1:
        _replace_combination(advice, {"skipped": f"over the budget: about {all_steps_s / 60:.1f} min more for "
                                                 f"{len(steps)} steps"})
        rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
        return
    steps, left_out = steps[:affordable], steps[affordable:]
    first = sweep.extend(study_dir, [base, *(with_processes(dataclasses.replace(base, **changes), base, shared is None)
                                             for _, changes in steps)])
    described = lambda part: [{"name": name, "options": options_text(changes), "changes": changes}  # noqa: E731
                              for name, changes in part]
    _replace_combination(advice, {"first_cell": first, "steps": described(steps), "left_out": described(left_out),
                                  "shared": shared is None})
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
    _run_cells(args, study_dir, shared is None)


def _adopt_the_lone_candidate(study_dir: Path, shared: bool) -> None:
    """A plan of one candidate (2.7B's change at once, whose compile leaves a 10-minute budget room for nothing
    else) was chosen among none: no winner's curse to measure away, so its cells beside the baseline are the
    combination's one step, judged as any step is, and the budget goes to the steps on top of it (_refine)."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    lone = advice["candidates"][0]
    _replace_combination(advice, {"first_cell": advice["first_cell"], "adopted": True, "shared": shared,
                                  "steps": [{key: lone[key] for key in ("name", "options", "changes")}],
                                  "left_out": []})
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)


def _ranked_for_combination(advice: dict, rows: list[dict]) -> list[tuple[str, dict[str, Any]]]:
    """The candidates that passed, best first; then, where the cells share processes (a step costs its steps, not
    a start-up), those that were within noise alone: a gain the first bottleneck hid shows once a step before it
    has removed that bottleneck (bf16 on a launch-bound step, measured after CUDA graphs and a larger batch)."""
    described = [(d, row) for d, row in zip(advice["candidates"], rows) if "changes" in d]
    passed = sorted(((row["_speedup"] or 0.0, d["name"], d["changes"]) for d, row in described
                     if row.get("why") == advise_tables.passed(goal_of(advice))), key=lambda item: -item[0])
    ranked = [(name, changes) for _, name, changes in passed]
    if advice.get("shared"):
        ranked += [(d["name"], d["changes"]) for d, row in described
                   if within_noise(row.get("why"))]
    return ranked


def _refine(args: argparse.Namespace, study_dir: Path, base: RunConfig, limit: tuple[int, str] | None,
            budget_left_s: float) -> None:
    """The last stage (refine.py): the candidates not in the combination's answer, each added to it,
    as far as the budget left affords; once per study (a resume runs its unfinished cells)."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    answer = _answer_of(study, advice)
    if answer is None or ("refine" in advice and "skipped" not in advice["refine"]):
        return
    name, changes, step_s = answer
    diagnosis = study.cells[advice.get("diagnosis_cell", DIAGNOSIS_CELL)]
    seen = _seen(diagnosis, base)
    hint = advise_diagnosis.hints(diagnosis.summary, diagnosis.run.analysis(rundir.KERNELS_DIR))
    failed = _failed_alone(study, advice)
    ranked = [candidate for candidate in by_expected_gain(advise_diagnosis.weighted(
        candidates(base, _on_gpu(base), limit, seen), hint)) if candidate.changes not in failed]
    ran = [step.get("changes") for step in (advice.get("combination") or {}).get("steps", [])]
    proposed = [(added, step) for added, step in advise_refine.proposals(base, changes, ranked, limit, seen)
                if step not in ran]  # a step the combination measured (its batch doubled that did not help)
    configs = [base, *(dataclasses.replace(base, **step) for _, step in [(name, changes), *proposed])]
    shared = _sharing(args, configs, limit, seen) is None  # decided first: fresh processes cost a start-up each
    device = "cuda" if _on_gpu(base) else "cpu"
    start_s = (shared_start_s(study_dir) or SHARED_START_S[device]) if shared else PROCESS_S[device]
    share = _wall_share(study_dir, base, shared)
    costs = (base, (changes, step_s), (start_s, ARM_S[device], shared))
    chosen, left_out, _ = advise_refine.affordable(*costs, budget_left_s / share, proposed)
    if not chosen:
        if left_out:  # the answer says what trying them would have cost
            advise_refine.record_unaffordable(study_dir, name, left_out,
                                              advise_refine.affordable(*costs, math.inf, proposed)[2] * share)
        return
    advise_refine.run(study_dir, base, (name, changes), chosen, left_out, shared,
                      lambda shared_cells: _run_cells(args, study_dir, shared_cells))


def _failed_alone(study: Study, advice: dict) -> list[dict[str, Any]]:
    """The changes of the first stage's candidates whose cell failed (a smoke test that broke: FP8 on a model with a
    Linear class of its own, a user optimizer that cannot compile; an OOM): not tried again on top of the answer."""
    first = advice.get("first_cell")
    if first is None:
        return []
    cells = study.cells[first + 1:]
    return [candidate.get("changes") for candidate, cell in zip(advice.get("candidates") or [], cells, strict=False)
            if cell.summary and cell.summary.get("status") != events.OK]


def _answer_of(study: Study, advice: dict) -> tuple[str, dict[str, Any], float] | None:
    """(name, changes, measured step in seconds) of the combination's answer: its last step that helped."""
    found = advise_ceiling.combination_answer(study, advice.get("combination") or {})
    if found is None:
        return None
    index, step = found
    step_s = step_s_of(study.cells[index])
    if "changes" not in step or step_s is None:
        return None  # a study from before the changes were kept: its answer stands as it is
    return step["name"], step["changes"], step_s


def _replace_combination(advice: dict[str, Any], combination: dict[str, Any]) -> None:
    """The new combination in advice; one it replaces (a resume with more budget) stays on record, its cells kept
    (one the budget skipped has no cells)."""
    if "combination" in advice and "skipped" not in advice["combination"]:
        advice["earlier_combinations"] = [*advice.get("earlier_combinations", []), advice["combination"]]
    advice["combination"] = combination


def _update_advice(study_dir: Path, **fields: Any) -> None:
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}) | fields)


def _print_plan(chosen: Plan) -> None:
    err = Console(stderr=True, highlight=False)
    then = (f"then at least {chosen.second_s / 60:.1f} min to measure the best again" if chosen.second_s else
            "a lone candidate's measurement is its answer (nothing chosen among others to measure again)")
    err.print(f"[bold]plan[/]: the baseline and {len(chosen.chosen)} candidates, interleaved; about "
              f"{chosen.estimate_s / 60:.1f} min; {then}", soft_wrap=True)
    for candidate in chosen.chosen:
        err.print(f"  try   {escape(candidate.name)} ({escape(candidate.options)})", soft_wrap=True)
    for candidate, why in chosen.skipped:
        err.print(f"[dim]  skip  {escape(candidate.name)}: {escape(why)}[/]", soft_wrap=True)


def _save_plan(study_dir: Path, base: RunConfig, chosen: Plan, hint: advise_diagnosis.Hints,
               args: argparse.Namespace, first_cell: int | None) -> None:
    """Once the diagnosis ran: the plan, kept (with where the baseline's cell is) and said."""
    if not args.events:
        _print_plan(chosen)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {"baseline": base.to_dict()}
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice | {
        "hints": hint.to_dict(), "first_cell": first_cell, "estimate_s": chosen.estimate_s,
        "second_stage_s": chosen.second_s,
        "candidates": [_described(c) for c in chosen.chosen],
        "skipped": [_described(c) | {"reason": why} for c, why in chosen.skipped]})


def _described(candidate: Candidate) -> dict[str, Any]:
    return {"name": candidate.name, "options": candidate.options, "moves": candidate.moves,
            "changes": candidate.changes}


KIND = StudyKind("advise", "which change makes the step faster here: candidates measured against the config",
                 add_arguments, run, advise_ceiling.tables, order=5,
                 templates={"advise: what makes small bf16 faster": "study advise --model small --dtype bf16"},
                 cpu_templates={"advise (CPU)": "study advise --model tiny --device cpu --ctx 64 --steps 5 "
                                                "--warmup 2 --budget 3"})
