"""Kernel tables of `sysprof trace --profile-steps` against a `sysprof run --profiler nsys` of the same model and
batch: GPU time and kernels per step in each phase both have (forward, backward, optimizer). The loop traced is
preset_train.py, a plain loop over the preset the run builds. Fresh processes, the two commands alternating,
ROUNDS of each; per phase the median and range over rounds, and the ratio of medians (pass: within 5%).

    python3 -m benchmarks.trace.profile_steps --model small --ctx 256 --batch 4 --rounds 3 --out DIR
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "benchmarks" / "trace" / "preset_train.py"
PHASES = ("forward", "backward", "optimizer")
LIMIT = 0.05


def run_argv(args, runs: Path) -> list[str]:
    return [sys.executable, "-m", "sysprof.profiler_core", "run", "--model", args.model, "--ctx", str(args.ctx),
            "--batch", str(args.batch), "--mode", "train", "--dtype", "fp32", "--warmup", "5", "--steps", "10",
            "--profiler", "nsys", "--runs-dir", str(runs), "--json"]


def trace_argv(args, runs: Path) -> list[str]:
    return [sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(runs), "--warmup", "5",
            "--profile-steps", "10-19", "--", sys.executable, str(TRAIN), "--model", args.model, "--ctx",
            str(args.ctx), "--batch", str(args.batch), "--steps", "25"]


def phase_figures(runs: Path) -> dict[str, dict[str, float]]:
    """The newest run's GPU ms and kernels per step by phase, from its kernel analysis."""
    newest = max(runs.iterdir(), key=lambda p: p.stat().st_mtime)
    analysis = json.loads((newest / "kernels" / "analysis.json").read_text())
    return {phase: {"gpu_ms": analysis["phases"][phase]["gpu_ns_per_step"] / 1e6,
                    "kernels": analysis["phases"][phase]["kernels_per_step"]}
            for phase in PHASES if phase in analysis["phases"]}


def parsed_args(description: str):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default="small")
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args()


def alternated(args, argvs: dict, figures_of) -> dict[str, list[dict]]:
    """ROUNDS fresh processes of each command ({"run": argv(args, runs), "trace": …}), their order reversed every
    other round; figures_of(runs) read after each. Saved as NAME.json beside the runs."""
    figures: dict[str, list[dict]] = {kind: [] for kind in argvs}
    for round_ in range(args.rounds):
        for kind in list(argvs) if round_ % 2 == 0 else list(argvs)[::-1]:
            runs = args.out / kind
            runs.mkdir(parents=True, exist_ok=True)
            subprocess.run(argvs[kind](args, runs), check=True, stdout=subprocess.DEVNULL)
            figures[kind].append(figures_of(runs))
    return figures


def main() -> int:
    args = parsed_args("kernel tables of `sysprof trace --profile-steps` against a `sysprof run --profiler nsys`")
    figures = alternated(args, {"run": run_argv, "trace": trace_argv}, phase_figures)
    (args.out / "profile_steps.json").write_text(json.dumps(figures, indent=1))
    return report(figures, args)


def report(figures: dict[str, list[dict]], args) -> int:
    print(f"{args.model}, ctx {args.ctx}, batch {args.batch}, fp32 train; {args.rounds} rounds of each\n")
    print("| phase | run GPU ms/step | trace GPU ms/step | trace/run | kernels/step run, trace |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for phase in PHASES:
        run = [f[phase]["gpu_ms"] for f in figures["run"] if phase in f]
        traced = [f[phase]["gpu_ms"] for f in figures["trace"] if phase in f]
        if not run or not traced:
            print(f"| {phase} | {'—' if not run else ''} | {'—' if not traced else ''} | | |")
            continue
        ratio = statistics.median(traced) / statistics.median(run)
        worst = max(worst, abs(ratio - 1))
        kernels = (figures["run"][0][phase]["kernels"], figures["trace"][0][phase]["kernels"])
        print(f"| {phase} | {spread(run)} | {spread(traced)} | {ratio:.3f} | {kernels[0]:g}, {kernels[1]:g} |")
    print(f"\nlargest difference {worst:.1%}: {'pass' if worst <= LIMIT else 'FAIL'} (limit {LIMIT:.0%})")
    return 0 if worst <= LIMIT else 1


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]"


if __name__ == "__main__":
    sys.exit(main())
