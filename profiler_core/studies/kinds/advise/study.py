"""`sysprof advise`: which change makes this config's step faster on this node, answered by running it.

First the diagnosis: one process of the config as given, profiled on a GPU (diagnosis.py), whose
launch verdicts and kernel shares order the plan a budget cuts. Then the baseline and every candidate that applies
(candidates.py) are the cells of one sweep, so their fresh processes run round-robin, every other round
reversed: each candidate is interleaved with the baseline, and drift on a shared node hits all alike. Each candidate
is then compared with the baseline as `sysprof compare` does (the two-gate verdict on tokens/s and on the phase it
should move), with its memory, its compile time and a numerics check: its loss against the baseline's after as many
weight updates (the same seed, so the same data; another batch is other data and is judged on tokens/s alone). A
candidate passes when tokens/s is faster beyond noise and its loss agrees; it is recommended only when that gain
holds measured again against a fresh baseline, where the others that passed are added to it one by one
(combination.py); then the candidates not in the answer are tried on top of it (refine_plan.py, refine.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.code_specs import code_location_problems
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import ConfigError, UsageError
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.session.arms import BLOCKS
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, run_configs
from sysprof.profiler_core.studies.kinds.advise import ceiling as advise_ceiling
from sysprof.profiler_core.studies.kinds.advise import combination as advise_combination
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise import gpus as advise_gpus
from sysprof.profiler_core.studies.kinds.advise import refine_plan as advise_refine_plan
from sysprof.profiler_core.studies.kinds.advise.budget_plan import PROCESS_S, plan, with_processes
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.ceiling import CEILING_S
from sysprof.profiler_core.studies.kinds.advise.costs import (
    DEFAULT_BUDGET_MIN,
    budget_left_of,
    cut_by_the_budget,
    spent_s,
    timed_cell_s,
)
from sysprof.profiler_core.studies.kinds.advise.goal import GOALS, SPEED, goal_of, goal_problem
from sysprof.profiler_core.studies.kinds.advise.plan_record import save_plan
from sysprof.profiler_core.studies.kinds.advise.stages import (
    DIAGNOSIS_CELL,
    after_the_diagnosis,
    diagnosis_seen,
    on_gpu,
    run_cells,
    update_advice,
    wall_share,
    why_not_shared,
)
from sysprof.profiler_core.studies.kinds.advise.together import together
from sysprof.profiler_core.studies.lock import study_lock

DEFAULT_REPEATS = 4  # fresh processes per cell: the fewest a verdict between processes can rest on (Mann–Whitney)


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
    if args.budget is not None and not 0 < args.budget < float("inf"):
        raise UsageError(f"--budget must be a positive, finite number of minutes; got {args.budget:g}")
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
    device = "cuda" if on_gpu(base) else "cpu"
    if goal_problem(GOALS[args.goal], device == "cuda"):
        raise UsageError(str(goal_problem(GOALS[args.goal], device == "cuda")))
    gpus = advise_gpus.gpus_for(args, device)
    first_look = plan(candidates(base, device == "cuda", limit), args.budget * 60 - PROCESS_S[device], base,
                      device, shared=not args.fresh_processes)  # before the diagnosis: anything to measure at all?
    if not first_look.chosen:
        reasons = "; ".join(f"{c.name}: {why}" for c, why in first_look.skipped)
        over = any(why.startswith("over the budget") for _, why in first_look.skipped)
        raise ConfigError(f"no change fits a --budget of {args.budget:g} min; a larger one measures those over it "
                          f"({reasons})" if over else f"no change the advisor knows applies to this config ({reasons})")
    started = time.monotonic()
    if not args.events:
        Console(stderr=True, highlight=False).print(
            "[bold]diagnosis[/]: one process of the config as given" + (", profiled" if device == "cuda" else ""))
    study_dir = run_configs(args, "advise", [diagnosis_config(base, device == "cuda")], [],
                            lambda study_dir: rundir.write_json(study_dir / rundir.ADVICE_PLAN, {
                                "baseline": base.to_dict(), "diagnosis_cell": DIAGNOSIS_CELL,
                                "budget_s": args.budget * 60, "gpus": gpus, "goal": args.goal}))
    with study_lock(study_dir):  # every stage, not only their cells: a resume must not plan in between
        after_the_diagnosis(study_dir)
        _measure(args, study_dir, base, args.budget * 60 - (time.monotonic() - started) - CEILING_S[device])
        _ceiling(args, study_dir)
    return study_dir


def _ceiling(args: argparse.Namespace, study_dir: Path) -> None:
    """The answer's matmuls timed alone (ceiling.py), after every other stage."""
    err = Console(stderr=True, highlight=False)
    advise_ceiling.measure(study_dir, lambda name: None if args.events else err.print(
        f"[bold]ceiling[/]: the matmuls of {escape(name)}, timed alone", soft_wrap=True))


def diagnosis_config(base: RunConfig, on_gpu: bool) -> RunConfig:
    """The baseline once, with its profiled pass where there are CUDA kernels to profile."""
    return dataclasses.replace(base, repeats=1, profiler="auto" if on_gpu else "none")


def _measure(args: argparse.Namespace, study_dir: Path, base: RunConfig, budget_left_s: float) -> None:
    """After the diagnosis: the plan it orders, its candidates measured against the baseline (new cells,
    interleaved), then the stages after it (combination.py, refine_plan.py)."""
    gpu, limit = on_gpu(base), device_memory(base.device)
    diagnosis = Study.load(study_dir).cells[DIAGNOSIS_CELL]
    hint = advise_diagnosis.hints(diagnosis.summary, diagnosis.run.analysis(rundir.KERNELS_DIR))
    step = ((diagnosis.summary or {}).get("phases") or {}).get("step") or {}
    step_s = step["median_ms"] / 1e3 if step.get("median_ms") else None
    seen = diagnosis_seen(diagnosis, base)
    found = advise_diagnosis.weighted(candidates(base, gpu, limit, seen), hint)
    at_once = together(base, found, limit, seen)
    found = [at_once, *found] if at_once else found
    shared = why_not_shared(args, [base, *(c.config for c in found if c.config is not None)], limit, seen)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    chosen = plan(found, budget_left_s, base, "cuda" if gpu else "cpu", step_s, shared=shared is None,
                  min_steps_s=BLOCKS * goal_of(advice).min_block_s, lanes=len(advice.get("gpus") or []))
    if not chosen.chosen:
        save_plan(study_dir, base, chosen, hint, args, first_cell=None)
        return
    started = time.monotonic()
    configs = [base, *(with_processes(c.config, base, shared is None) for c in chosen.chosen if c.config is not None)]
    first = sweep.extend(study_dir, configs)
    save_plan(study_dir, base, chosen, hint, args, first_cell=first)
    update_advice(study_dir, shared=shared is None, **({"not_shared": shared} if shared else {}))
    run_cells(args, study_dir, shared is None)
    per_cell_s = (time.monotonic() - started) / len(configs)  # every process of a cell, start-up included
    update_advice(study_dir, per_cell_s=per_cell_s)  # what a resumed combination is planned with
    if len(chosen.chosen) == 1:
        advise_combination.adopt_the_lone_candidate(study_dir, shared is None)
    else:
        advise_combination.combine(args, study_dir, base, limit, per_cell_s, budget_left_s - per_cell_s * len(configs))
    advise_refine_plan.refine(args, study_dir, base, limit, budget_left_s - (time.monotonic() - started))


def resume(args: argparse.Namespace, study_dir: Path) -> Path:
    """The stages left (_resume_stages), then the answer's ceiling where the answer is new."""
    with study_lock(study_dir):
        _resume_stages(args, study_dir)
        _ceiling(args, study_dir)
    return study_dir


def _resume_stages(args: argparse.Namespace, study_dir: Path) -> None:
    """Run an advise study's cells that did not finish, then the stages that never started (the plan after the
    diagnosis, the combination after the candidates), within --budget more minutes, else what is left of the
    study's own budget."""
    configs = _resumable(args, study_dir)
    budget_s = budget_left_of(study_dir)
    if not args.events:
        Console(stderr=True, highlight=False).print(_resume_budget_line(args.budget, budget_s))
    budget_s -= CEILING_S["cuda" if on_gpu(configs[0]) else "cpu"]
    started = time.monotonic()
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    latest = advice.get("refine") or advice.get("combination") or advice  # its cells are the ones left to run
    run_cells(args, study_dir, bool(latest.get("shared")) and not args.fresh_processes)
    base = RunConfig.from_dict(advice["baseline"]) if "baseline" in advice else configs[0]
    budget_left_s = budget_s - (time.monotonic() - started)
    if "candidates" not in advice:
        _measure(args, study_dir, base, budget_left_s)
        return
    # the candidates' cells as timed when they ran (compiles and steps included), else the plan's start-up estimate
    per_cell_s = (advice.get("per_cell_s") or timed_cell_s(Study.load(study_dir), advice)
                  or PROCESS_S["cuda" if on_gpu(base) else "cpu"] * base.repeats)
    study = Study.load(study_dir)
    share = wall_share(study_dir, base, bool((advice.get("combination") or advice).get("shared")))
    if "combination" not in advice and len(advice["candidates"]) == 1:
        advise_combination.adopt_the_lone_candidate(study_dir, bool(advice.get("shared")))
    elif "combination" not in advice or cut_by_the_budget(study, advice, per_cell_s, budget_left_s / share):
        advise_combination.combine(args, study_dir, base, device_memory(base.device), per_cell_s, budget_left_s)
    advise_refine_plan.refine(args, study_dir, base, device_memory(base.device),
                              budget_s - (time.monotonic() - started))


def _resumable(args: argparse.Namespace, study_dir: Path) -> list[RunConfig]:
    """The study's configs, checked before a cell runs (an advise study, each config's code where it says), with its
    GPUs (--gpus, else its own) and its budget (--budget: minutes more) kept in its advice."""
    if study_kind(study_dir) != "advise":
        raise UsageError(f"{study_dir} is not an advise study directory (`sysprof sweep --resume` continues others)")
    configs, _ = sweep.load_plan(study_dir)
    for cfg in configs:  # the plan was read without it: its cells are about to run here
        for problem in code_location_problems(cfg).values():
            raise UsageError(f"{study_dir}: {problem}")
    saved = (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}).get("gpus")
    update_advice(study_dir, gpus=advise_gpus.gpus_for(args, "cuda" if on_gpu(configs[0]) else "cpu", saved))
    if args.budget is not None:  # minutes more: the study's budget grows by them, so a later resume keeps the rest
        update_advice(study_dir, budget_s=spent_s(study_dir) + args.budget * 60)
    return configs


def _resume_budget_line(asked_min: float | None, budget_s: float) -> str:
    if asked_min is not None:
        return f"budget: {asked_min:g} min more"
    if budget_s > 0:
        return f"budget: {budget_s / 60:.1f} min left of the study's own (--budget MINUTES for more)"
    return "budget: the study's own is spent: only its unfinished cells run (--budget MINUTES for more)"


KIND = StudyKind("advise", "which change makes the step faster here: candidates measured against the config",
                 add_arguments, run, advise_ceiling.tables, order=5,
                 templates={"advise: what makes small bf16 faster": "study advise --model small --dtype bf16"},
                 cpu_templates={"advise (CPU)": "study advise --model tiny --device cpu --ctx 64 --steps 5 "
                                                "--warmup 2 --budget 3"})
