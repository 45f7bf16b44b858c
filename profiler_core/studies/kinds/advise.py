"""`sysprof advise`: which change makes this config's step faster on this node, answered by running it.

The baseline and every candidate that applies (studies/advice.py) are the cells of one sweep, so their fresh
processes run round-robin, every other round reversed: each candidate is interleaved with the baseline, and drift
on a shared node hits all alike. Each candidate is then compared with the baseline as `sysprof compare` does (the
two-gate verdict on tokens/s and on the phase it should move), with its memory, its compile time and a numerics
check: its loss against the baseline's after as many weight updates (the same seed, so the same data; another
batch is other data and is judged on tokens/s alone). A candidate is recommended only when tokens/s is faster
beyond noise and its loss agrees. The candidates that passed are then combined and measured again (_combine).
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

from sysprof.profiler_core import events, rundir
from sysprof.profiler_core.code_specs import code_location_problems
from sysprof.profiler_core.compare import FASTER, THROUGHPUT_ROW, compare_summaries
from sysprof.profiler_core.config import validate
from sysprof.profiler_core.errors import ConfigError, UsageError
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.metrics import THROUGHPUT
from sysprof.profiler_core.nvml import visible_gpu_count
from sysprof.profiler_core.options import add_config_options, config_from_args, config_to_args
from sysprof.profiler_core.render.compare_report import ratio_text
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.advice import (
    PROCESS_S,
    Candidate,
    Plan,
    candidates,
    chain,
    options_text,
    plan,
)
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, Tables, run_configs
from sysprof.profiler_core.studies.progress import Progress
from sysprof.profiler_core.study_plans import RECOMMENDED_TABLE, study_kind

DEFAULT_REPEATS = 4  # fresh processes per cell: the fewest a verdict between processes can rest on (Mann–Whitney)
DEFAULT_BUDGET_MIN = 20.0
LOSS_TOLERANCE = 0.05  # relative: bf16 or a compile moves the loss by far less; a broken change by far more


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.set_defaults(repeats=DEFAULT_REPEATS)
    parser.add_argument("--resume", type=Path, metavar="DIR", help="continue an advise study: its cells that did "
                        "not finish, then its combination (the run options are the study's own)")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_MIN, metavar="MINUTES",
                        help=f"candidates in order of their usual gain while the estimate fits (default "
                             f"{DEFAULT_BUDGET_MIN:.0f}); the plan names the ones left out")


def run(args: argparse.Namespace) -> Path:
    if not args.budget > 0:
        raise UsageError(f"--budget must be a positive number of minutes; got {args.budget:g}")
    if args.resume:
        return resume(args, args.resume)
    base = validate(config_from_args(args))
    if base.repeats < 2:
        raise UsageError(f"--repeats {base.repeats}: the advisor needs at least 2 processes per cell (the spread "
                         f"between them is what a verdict is judged against); the default is {DEFAULT_REPEATS}")
    limit = device_memory(base.device)
    if fit_problem(base, limit):
        raise ConfigError(f"the baseline itself: {str(fit_problem(base, limit)).split(' (--force')[0]}")
    on_gpu = base.device == "cuda" or (base.device == "auto" and visible_gpu_count() > 0)
    chosen = plan(candidates(base, on_gpu, limit), args.budget * 60, base.repeats, "cuda" if on_gpu else "cpu")
    if not chosen.chosen:
        reasons = "; ".join(f"{c.name}: {why}" for c, why in chosen.skipped)
        raise ConfigError(f"no change the advisor knows applies to this config ({reasons})")
    configs = [base, *(c.config for c in chosen.chosen if c.config is not None)]
    varied = sorted({name for c in chosen.chosen for name in c.changes})
    started = time.monotonic()
    study_dir = run_configs(args, "advise", configs, varied,
                            lambda study_dir: _save_plan(study_dir, base, chosen, args))
    per_cell_s = (time.monotonic() - started) / len(configs)  # every process of a cell, start-up included
    _combine(args, study_dir, base, limit, per_cell_s, args.budget * 60 - per_cell_s * len(configs))
    return study_dir


def resume(args: argparse.Namespace, study_dir: Path) -> Path:
    """Run an advise study's cells that did not finish, then its combination if it never started; --budget is
    what the combination may still take."""
    if study_kind(study_dir) != "advise":
        raise UsageError(f"{study_dir} is not an advise study directory (`sysprof sweep --resume` continues others)")
    configs, _ = sweep.load_plan(study_dir)
    for cfg in configs:  # the plan was read without it: its cells are about to run here
        for problem in code_location_problems(cfg).values():
            raise UsageError(f"{study_dir}: {problem}")
    started = time.monotonic()
    with Progress(args.events).recorded(study_dir) as progress:
        sweep.run(study_dir, progress.sweep_listener("advise", study_dir))
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    if "combination" not in advice:
        base = configs[0]
        per_cell_s = sum(PROCESS_S.values()) / 2 * base.repeats  # no cell timed here: the plan's estimate
        _combine(args, study_dir, base, device_memory(base.device), per_cell_s,
                 args.budget * 60 - (time.monotonic() - started))
    return study_dir


def _combine(args: argparse.Namespace, study_dir: Path, base: Any, limit: tuple[int, str] | None,
             per_cell_s: float, budget_left_s: float) -> None:
    """The second stage: the candidates that passed, added one by one to the best, measured again as new cells
    interleaved with a fresh baseline (each step against the one before it), as far as the budget left allows."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    rows = [candidate_row(d, study.cells[0], cell) for d, cell in zip(advice["candidates"], study.cells[1:])]
    passed = sorted((row["_speedup"] or 0.0, d["name"], d["changes"])
                    for d, row in zip(advice["candidates"], rows) if row.get("why") == "recommended" and "changes" in d)
    steps = chain(base, [(name, changes) for _, name, changes in reversed(passed)], limit)
    if len(steps) < 2:
        return
    affordable = int(budget_left_s // per_cell_s) - 1 if per_cell_s > 0 else len(steps)  # a fresh baseline first
    if affordable < 2:
        advice["combination"] = {"skipped": f"over the budget: about {per_cell_s * (len(steps) + 1) / 60:.1f} min "
                                            f"more for {len(steps)} steps"}
        rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
        return
    steps = steps[:affordable]
    first = sweep.extend(study_dir, [base, *(dataclasses.replace(base, **changes) for _, changes in steps)])
    advice["combination"] = {"first_cell": first, "steps": [{"name": name, "options": options_text(changes)}
                                                            for name, changes in steps]}
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
    with Progress(args.events).recorded(study_dir) as progress:
        sweep.run(study_dir, progress.sweep_listener("advise", study_dir))



def _print_plan(chosen: Plan) -> None:
    err = Console(stderr=True, highlight=False)
    err.print(f"[bold]plan[/]: the baseline and {len(chosen.chosen)} candidates, interleaved; about "
              f"{chosen.estimate_s / 60:.1f} min", soft_wrap=True)
    for candidate in chosen.chosen:
        err.print(f"  try   {escape(candidate.name)} ({escape(candidate.options)})", soft_wrap=True)
    for candidate, why in chosen.skipped:
        err.print(f"[dim]  skip  {escape(candidate.name)}: {escape(why)}[/]", soft_wrap=True)


def _save_plan(study_dir: Path, base: Any, chosen: Plan, args: argparse.Namespace) -> None:
    """Once the study's directory exists (nothing printed for a command refused before): the plan, kept and said."""
    if not args.events:
        _print_plan(chosen)
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, {
        "baseline": base.to_dict(), "estimate_s": chosen.estimate_s,
        "candidates": [_described(c) for c in chosen.chosen],
        "skipped": [_described(c) | {"reason": why} for c, why in chosen.skipped]})


def _described(candidate: Candidate) -> dict[str, Any]:
    return {"name": candidate.name, "options": candidate.options, "moves": candidate.moves,
            "changes": candidate.changes}


def tables(study: Study) -> Tables:
    """The candidates against the baseline, the best first, then those not run with why; and the answer."""
    advice = rundir.read_json(study.path / rundir.ADVICE_PLAN) or {"candidates": [], "skipped": []}
    baseline = study.cells[0]
    measured = [candidate_row(described, baseline, cell)
                for described, cell in zip(advice["candidates"], study.cells[1:])]
    measured.sort(key=lambda row: -(row.pop("_speedup") or 0.0))
    not_run = [{"candidate": s["name"], "status": "not run", "why": s["reason"]} for s in advice["skipped"]]
    combined = combination_rows(study, advice.get("combination") or {})
    return {"advice: each candidate against the baseline, interleaved": measured + not_run,
            **({"combination: each step against the one before, interleaved": combined} if combined else {}),
            RECOMMENDED_TABLE: _recommendation(study, measured, combined)}


def combination_rows(study: Study, combination: dict) -> list[dict]:
    """The baseline, then each step of the combination: tokens/s against the baseline and over the step before."""
    if "skipped" in combination:
        return [{"step": "combination not run", "why": combination["skipped"]}]
    first = combination.get("first_cell")
    if first is None or len(study.cells) < first + 1 + len(combination["steps"]):
        return []
    baseline = study.cells[first]
    rows = [_step_row("baseline", baseline, baseline, baseline)]
    for index, step in enumerate(combination["steps"]):
        cell, before = study.cells[first + 1 + index], study.cells[first + index]
        rows.append(_step_row(step["name"], baseline, before, cell) | {"options": step["options"]})
    return rows


def _step_row(name: str, baseline: Any, before: Any, cell: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"step": name}
    ended = _not_finished(baseline.summary, "the baseline") or _not_finished(cell.summary, "this step")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    summary = cell.summary
    row |= {"status": events.OK, "tokens/s": _rounded(summary.get(THROUGHPUT))}
    if cell is baseline:
        return row | {"MFU %": _percent(summary.get("mfu")), "peak GiB": _peak_gib(summary)}
    overall = {r["phase"]: r for r in compare_summaries(baseline.summary, summary)}.get(THROUGHPUT_ROW)
    step = {r["phase"]: r for r in compare_summaries(before.summary, summary)}.get(THROUGHPUT_ROW)
    loss = loss_change(baseline, cell)
    helps = _why_not(step, loss) if before is not baseline else _why_not(overall, loss)
    return row | {"× baseline": ratio_text(overall) if overall else None,
                  "over the step before": step["verdict_text"] if step else None,
                  "MFU %": _percent(summary.get("mfu")), "peak GiB": _peak_gib(summary),
                  "compile s": summary.get("compile_s"), "loss Δ %": _loss_text(loss),
                  "why": helps or "helps"}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value)


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)


def candidate_row(described: dict, baseline: Any, cell: Any) -> dict[str, Any]:
    """One measured candidate: tokens/s ×[interval] and its verdict, the phase it should move, memory, compile,
    the loss check, and whether it is recommended (and why not)."""
    row: dict[str, Any] = {"candidate": described["name"], "_speedup": None}
    ended = _not_finished(baseline.summary, "the baseline") or _not_finished(cell.summary, "this candidate")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    by_phase = {r["phase"]: r for r in compare_summaries(baseline.summary, cell.summary)}
    rate, moved = by_phase.get(THROUGHPUT_ROW), by_phase.get(described["moves"])
    loss = loss_change(baseline, cell)
    row |= {"status": events.OK, "tokens/s ×": ratio_text(rate) if rate else None,
            "tokens/s": rate["verdict_text"] if rate else "missing",
            "its phase": f"{moved['phase']} {moved['verdict_text']}" if moved and moved is not rate else None,
            "peak GiB": _peak_gib(cell.summary), "compile s": cell.summary.get("compile_s"),
            "loss Δ %": _loss_text(loss),
            "_speedup": rate.get("ratio_b_over_a") if rate else None}
    return row | {"why": _why_not(rate, loss) or "recommended"}


def _not_finished(summary: dict | None, what: str) -> tuple[str, str] | None:
    if summary is None:
        return events.PENDING, f"{what} has not run yet"
    if summary.get("status") != events.OK:
        return summary.get("status", "failed"), f"{what}: {events.cell_reason(summary) or summary.get('status')}"
    return None


def _why_not(rate: dict | None, loss: float | str | None) -> str | None:
    if loss is None or (isinstance(loss, float) and loss > LOSS_TOLERANCE):
        shown = "not finite" if loss is None else f"{loss:.1%} off"
        return f"its loss is {shown} against the baseline's (same seed): it changes what is computed"
    if rate is None or rate["verdict"] != FASTER:
        return "not faster beyond run-to-run noise" if rate else "no tokens/s to compare"
    return None


NOT_COMPARED = "not compared: another batch is other data"


def loss_change(baseline: Any, cell: Any) -> float | str | None:
    """|Δ| / |baseline's| loss after the same number of weight updates (a compiling config makes one more before
    its measured steps: its compile pass is a whole step); NOT_COMPARED for another batch; None when a loss is
    missing or not finite. baseline, cell: studies.document.Cell (config and steps)."""
    if baseline.config.batch != cell.config.batch:
        return NOT_COMPARED
    ahead = _updates_before_measuring(cell.config) - _updates_before_measuring(baseline.config)
    theirs, mine = _measured_losses(baseline.steps), _measured_losses(cell.steps)
    pair = (theirs[ahead:][:1], mine[:1]) if ahead >= 0 else (theirs[:1], mine[-ahead:][:1])
    first, other = (pair[0] or [None])[0], (pair[1] or [None])[0]
    if not _finite(first) or not _finite(other):
        return None
    return abs(other - first) / abs(first) if first else abs(other)


def _loss_text(loss: float | str | None) -> float | str | None:
    """The table's cell: a percentage, "other data" for another batch, or None (shown as not finite by why)."""
    if isinstance(loss, float):
        return round(loss * 100, 2)
    return "other data" if loss == NOT_COMPARED else None


def _updates_before_measuring(cfg: Any) -> int:
    return cfg.warmup + int(cfg.compiles) if cfg.mode == "train" else 0


def _measured_losses(steps: list[dict]) -> list[Any]:
    return [s.get("loss") for s in steps if s.get("kind") == "measured" and not s.get("pass")]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _peak_gib(summary: dict) -> float | None:
    peaks = summary.get("peak_memory_bytes") or {}
    return round(max(peaks.values()) / 2**30, 2) if peaks else None


def _recommendation(study: Study, measured: list[dict], combined: list[dict]) -> list[dict]:
    """The answer as the command line that runs it: the last step of the combination that still helped, else the
    best single candidate, else why there is none."""
    base = " ".join(config_to_args(dataclasses.replace(study.cells[0].config, repeats=1)))
    kept = _helping_steps(combined)
    if kept:
        return [{"answer": f"{kept[-1]['step']}: tokens/s {kept[-1]['× baseline']} of the baseline's",
                 "command": f"sysprof run {base} {kept[-1]['options']}"}]
    best = next((row for row in measured if row.get("why") == "recommended"), None)
    options = {c["name"]: c["options"] for c in (rundir.read_json(study.path / rundir.ADVICE_PLAN) or {}).get(
        "candidates", [])}
    if best is None:
        return [{"answer": "no candidate beat the baseline beyond noise with the same loss", "command": None}]
    return [{"answer": f"{best['candidate']}: tokens/s {best['tokens/s ×']} of the baseline's",
             "command": f"sysprof run {base} {options.get(best['candidate'], '')}".strip()}]


def _helping_steps(combined: list[dict]) -> list[dict]:
    """The combination's steps up to the first that did not help (the baseline row left out)."""
    kept = []
    for row in combined[1:]:
        if row.get("why") != "helps":
            break
        kept.append(row)
    return kept


KIND = StudyKind("advise", "which change makes the step faster here: candidates measured against the config",
                 add_arguments, run, tables, order=5,
                 templates={"advise: what makes small bf16 faster": "study advise --model small --dtype bf16"},
                 cpu_templates={"advise (CPU)": "study advise --model tiny --device cpu --ctx 64 --steps 5 "
                                                "--warmup 2 --budget 3"})
