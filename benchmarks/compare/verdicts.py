"""Do compare's verdicts survive run-to-run noise? False verdicts on same-config pairs, and a real change found.

    python3 -m benchmarks.compare.verdicts [--groups 6] [--repeats 4] [--change batch|fused] [--no-launch-bound]
                                   [--runs-dir DIR] [--resume SWEEP_DIR] [--out FILE]

One sweep (so the processes go round-robin over every cell, each round in the same order) of up to three configs,
all bf16 train steps with SDPA: a launch-bound one (small, batch 4; --no-launch-bound leaves it out), a GPU-bound
one (xl, batch 4, torch's default foreach AdamW) and the GPU-bound one with a real change of known sign: batch 5
(25% more tokens per step: slower) or a fused AdamW (--change fused: faster). Each config is measured as --groups
groups of --repeats fresh processes (a group is what `sysprof run --repeats N` makes; seeds 0..groups-1 tell the
groups apart and change nothing that is timed). Then, with profiler_core.analysis.compare as `sysprof compare` uses it:

- false verdicts: every pair of groups of one config (15 pairs per config with 6 groups) — any "faster"/"slower"
  on the step is false;
- one process against a group: every process against every other group of its config (the prediction test);
- one process per side: every pair of single processes of one config. compare never says faster or slower there;
  "noise unknown" counts the pairs where the within-run rule alone would have, as it did before;
- a real change: every (base group, changed group) pair of the GPU-bound model — found when the verdict on the step
  (and on the phase the change acts on: forward for the batch, optimizer for fused AdamW) has the expected sign,
  and whether the ratio's interval covers the effect measured over all processes of both.

Resumable: a sweep directory stopped part-way (a call's time limit) continues with --resume; the report of
a finished sweep is recomputed with --resume and --report-only (no process runs).
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.progress import Progress

LAUNCH_BOUND, GPU_BOUND = "launch-bound", "GPU-bound"
# label, the fields that make the change, its sign, and the phase it acts on (besides the step)
CHANGES = {"batch": ("GPU-bound, batch 5", {"batch": 5}, "slower", "forward"),
           "fused": ("GPU-bound, fused AdamW", {"optimizer_impl": "fused"}, "faster", "optimizer")}


def variants(models: list[str], change: str, launch_bound: bool) -> list[tuple[str, dict]]:
    """(label, the fields that make its config) per config, in the order of a round."""
    label, fields, _, _ = CHANGES[change]
    base = {"model": models[1], "batch": 4}
    return ([(LAUNCH_BOUND, {"model": models[0], "batch": 4})] if launch_bound else []) + [
        (GPU_BOUND, base), (label, {**base, **fields})]


def plan(labelled: list[tuple[str, dict]], groups: int, repeats: int, warmup: int, steps: int, ctx: int,
         device: str) -> list[RunConfig]:
    return [RunConfig(ctx=ctx, dtype="bf16", attention="sdpa", mode="train", seed=seed, warmup=warmup, steps=steps,
                      repeats=repeats, device=device, **fields)
            for seed in range(groups) for _, fields in labelled]


def label_of(cfg: RunConfig, launch_model: str) -> str:
    """Which variant a planned config is (read back from the config, so --resume needs no other record)."""
    if cfg.batch == 5:
        return CHANGES["batch"][0]
    if cfg.optimizer_impl == "fused":
        return CHANGES["fused"][0]
    return LAUNCH_BOUND if cfg.model == launch_model else GPU_BOUND


def groups_by_variant(sweep_dir: Path, launch_model: str) -> dict[str, list[dict]]:
    """Each variant's finished groups."""
    configs, _ = sweep.load_plan(sweep_dir)
    found: dict[str, list[dict]] = {}
    for index, cfg in enumerate(configs):
        found.setdefault(label_of(cfg, launch_model), [])
        summary = sweep.cell_summary(sweep.cell_dir(sweep_dir, index, cfg))
        if summary and "repeats" in summary:
            found[label_of(cfg, launch_model)].append(summary)
    return found


def single_processes(group: dict) -> list[dict]:
    """Each process of a group as a one-process summary (its median and within-run std)."""
    steps = group["config"]["steps"]
    return [{"phases": {"step": {"median_ms": p["phases"]["step"], "std_ms": p["std_ms"]["step"], "n": steps}}}
            for p in group["repeats"]["processes"] if p["status"] == "ok"]


def directional(rows: list[dict]) -> int:
    return sum(r["verdict"] in ("faster", "slower") for r in rows)


def step_row(summary_a: dict, summary_b: dict, phase: str = "step") -> dict:
    return next(row for row in compare_summaries(summary_a, summary_b) if row["phase"] == phase)


def false_verdicts(groups: list[dict]) -> dict:
    pairs = [step_row(a, b) for a, b in itertools.combinations(groups, 2)]
    processes = [p for g in groups for p in single_processes(g)]
    single = [step_row(a, b) for a, b in itertools.combinations(processes, 2)]
    lone = [step_row(p, other) for i, g in enumerate(groups) for p in single_processes(g)
            for j, other in enumerate(groups) if j != i]
    medians = [p["phases"]["step"]["median_ms"] for p in processes] or [float("nan")]
    return {"groups": len(groups), "pairs": len(pairs), "false": directional(pairs),
            "lone_pairs": len(lone), "lone_false": directional(lone),
            "single_pairs": len(single), "single_false": directional(single),
            "single_noise_unknown": sum(r["verdict"] == "noise unknown" for r in single),
            "process_median_min_ms": min(medians), "process_median_max_ms": max(medians),
            "reasons": sorted({r["reason"] for r in pairs + lone if r["verdict"] in ("faster", "slower")})}


def real_change(groups_a: list[dict], groups_b: list[dict], expected: str, phase: str = "step") -> dict:
    if not groups_a or not groups_b:
        return {"comparisons": 0, "note": "not every group has finished (resume the sweep)"}
    medians = {name: [p["phases"][phase] for g in groups for p in g["repeats"]["processes"] if p["status"] == "ok"]
               for name, groups in (("a", groups_a), ("b", groups_b))}
    effect = statistics.median(medians["b"]) / statistics.median(medians["a"])
    rows = [step_row(a, b, phase) for a, b in itertools.product(groups_a, groups_b)]
    return {"phase": phase, "comparisons": len(rows), "expected": expected, "measured_effect": round(effect, 4),
            "found": sum(r["verdict"] == expected for r in rows),
            "wrong_sign": directional(rows) - sum(r["verdict"] == expected for r in rows),
            "interval_covers": sum(r["ci_low"] is not None and r["ci_low"] <= effect <= r["ci_high"] for r in rows),
            "ratios": [r["ratio_b_over_a"] for r in rows]}


def report(sweep_dir: Path, launch_model: str) -> dict:
    found = groups_by_variant(sweep_dir, launch_model)
    result = {"sweep_dir": str(sweep_dir), "false_verdicts": {label: false_verdicts(groups)
                                                              for label, groups in found.items()}}
    for label, _, expected, phase in CHANGES.values():
        if label in found:
            result["real_change"] = [{"change": label, **real_change(found[GPU_BOUND], found[label], expected, where)}
                                     for where in ("step", phase)]
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
    parser.add_argument("--change", choices=sorted(CHANGES), default="batch")
    parser.add_argument("--no-launch-bound", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="with --resume: the report, no process run")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--resume", type=Path)
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args()
    models = args.models.split(",")
    labelled = variants(models, args.change, not args.no_launch_bound)
    sweep_dir = args.resume or sweep.create(Path(args.runs_dir), "verdicts",
                                            plan(labelled, args.groups, args.repeats, args.warmup, args.steps,
                                                 args.ctx, args.device),
                                            ["model", "batch", "optimizer_impl", "seed"])
    started = time.perf_counter()
    if not args.report_only:
        sweep.run(sweep_dir, Progress(False).sweep_listener("verdicts", sweep_dir))
    result = report(sweep_dir, models[0]) | {"elapsed_s": round(time.perf_counter() - started, 1)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    rundir.write_json(sweep_dir / "verdicts.json", result)


if __name__ == "__main__":
    main()
