"""Do compare's verdicts survive run-to-run noise? False verdicts on same-config pairs, and a real change found.

    python3 benchmarks/verdicts.py [--groups 6] [--repeats 4] [--runs-dir DIR] [--resume SWEEP_DIR] [--out FILE]

One sweep (so the processes go round-robin over every cell, each round in the same order) of three configs, all
bf16 train steps with SDPA: a launch-bound one (small, batch 4), a GPU-bound one (xl, batch 4) and the GPU-bound
one with batch 5 (a real change of known sign: 25% more tokens per step). Each config is measured as --groups
groups of --repeats fresh processes (a group is what `sysprof run --repeats N` makes; seeds 0..groups-1 tell the
groups apart and change nothing that is timed). Then, with profiler_core.compare as `sysprof compare` uses it:

- false verdicts: every pair of groups of one config (15 pairs per config with 6 groups) — any "faster"/"slower"
  on the step is false;
- the same with one process per side (every pair of single processes of one config, the within-run rule): what a
  comparison without repeats would have said;
- a real change: every (batch 4 group, batch 5 group) pair of the GPU-bound model — found when the step is
  "slower", and whether the ratio's interval covers the effect measured over all processes of both configs.

Resumable: a sweep directory stopped part-way (a device call's time limit) continues with --resume.
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path

from profiler_core import rundir
from profiler_core.compare import compare_summaries
from profiler_core.config import RunConfig
from profiler_core.studies import sweep
from profiler_core.studies.progress import Progress

LABELS = ("launch-bound", "GPU-bound", "GPU-bound, batch 5")


def variants(launch_model: str, bound_model: str) -> list[tuple[str, str, int]]:
    return [(LABELS[0], launch_model, 4), (LABELS[1], bound_model, 4), (LABELS[2], bound_model, 5)]


def plan(models: list[str], groups: int, repeats: int, warmup: int, steps: int, ctx: int,
         device: str) -> list[RunConfig]:
    return [RunConfig(model=model, batch=batch, ctx=ctx, dtype="bf16", attention="sdpa", mode="train", seed=seed,
                      warmup=warmup, steps=steps, repeats=repeats, device=device)
            for seed in range(groups) for _, model, batch in variants(*models)]


def groups_by_variant(sweep_dir: Path) -> dict[str, list[dict]]:
    """Each variant's finished groups; a cell's variant is its position in the round (plan's order)."""
    configs, _ = sweep.load_plan(sweep_dir)
    found: dict[str, list[dict]] = {label: [] for label in LABELS}
    for index, cfg in enumerate(configs):
        summary = sweep.cell_summary(sweep.cell_dir(sweep_dir, index, cfg))
        if summary and "repeats" in summary:
            found[LABELS[index % len(LABELS)]].append(summary)
    return found


def single_processes(group: dict) -> list[dict]:
    """Each process of a group as a one-process summary (its median and within-run std), for the old rule."""
    steps = group["config"]["steps"]
    return [{"phases": {"step": {"median_ms": p["phases"]["step"], "std_ms": p["std_ms"]["step"], "n": steps}}}
            for p in group["repeats"]["processes"] if p["status"] == "ok"]


def step_row(summary_a: dict, summary_b: dict) -> dict:
    return next(row for row in compare_summaries(summary_a, summary_b) if row["phase"] == "step")


def false_verdicts(groups: list[dict]) -> dict:
    pairs = [step_row(a, b) for a, b in itertools.combinations(groups, 2)]
    processes = [p for g in groups for p in single_processes(g)]
    single = [step_row(a, b) for a, b in itertools.combinations(processes, 2)]
    medians = [p["phases"]["step"]["median_ms"] for p in processes] or [float("nan")]
    return {"groups": len(groups), "pairs": len(pairs),
            "false": sum(r["verdict"] in ("faster", "slower") for r in pairs),
            "single_pairs": len(single), "single_false": sum(r["verdict"] in ("faster", "slower") for r in single),
            "process_median_min_ms": min(medians), "process_median_max_ms": max(medians),
            "reasons": sorted({r["reason"] for r in pairs if r["verdict"] in ("faster", "slower")})}


def real_change(groups_a: list[dict], groups_b: list[dict]) -> dict:
    if not groups_a or not groups_b:
        return {"comparisons": 0, "note": "not every group has finished (resume the sweep)"}
    medians = {name: [p["phases"]["step"] for g in groups for p in g["repeats"]["processes"] if p["status"] == "ok"]
               for name, groups in (("a", groups_a), ("b", groups_b))}
    effect = statistics.median(medians["b"]) / statistics.median(medians["a"])
    rows = [step_row(a, b) for a, b in itertools.product(groups_a, groups_b)]
    return {"comparisons": len(rows), "measured_effect": round(effect, 4),
            "found": sum(r["verdict"] == "slower" for r in rows),
            "wrong_sign": sum(r["verdict"] == "faster" for r in rows),
            "interval_covers": sum(r["ci_low"] is not None and r["ci_low"] <= effect <= r["ci_high"] for r in rows),
            "ratios": [r["ratio_b_over_a"] for r in rows]}


def report(sweep_dir: Path) -> dict:
    found = groups_by_variant(sweep_dir)
    result = {"sweep_dir": str(sweep_dir), "false_verdicts": {label: false_verdicts(found[label]) for label in LABELS}}
    result["real_change"] = real_change(found[LABELS[1]], found[LABELS[2]])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--models", default="small,xl", help="the launch-bound model, the GPU-bound model")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--resume", type=Path)
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args()
    sweep_dir = args.resume or sweep.create(Path(args.runs_dir), "verdicts",
                                            plan(args.models.split(","), args.groups, args.repeats, args.warmup,
                                                 args.steps, args.ctx, args.device),
                                            ["model", "batch", "seed"])
    started = time.perf_counter()
    sweep.run(sweep_dir, Progress(False).sweep_listener("verdicts", sweep_dir))
    result = report(sweep_dir) | {"elapsed_s": round(time.perf_counter() - started, 1)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    rundir.write_json(sweep_dir / "verdicts.json", result)


if __name__ == "__main__":
    main()
