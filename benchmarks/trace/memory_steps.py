"""The memory analysis of `sysprof trace --memory-steps` against a `sysprof run --memory` of the same model and
batch: the peak of allocated memory, the peak's largest categories, and how much recording slowed the recorded
steps. The loop traced is preset_train.py, a plain loop over the preset the run builds. Fresh processes, the two
commands alternating, ROUNDS of each; the median and range over rounds, and the ratio of the peaks' medians
(pass: within 5%).

    python3 -m benchmarks.trace.memory_steps --model small --ctx 256 --batch 4 --rounds 3 --out DIR
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from benchmarks.trace.profile_steps import TRAIN, alternated, parsed_args, spread

LIMIT = 0.05


def run_argv(args, runs: Path) -> list[str]:
    return [sys.executable, "-m", "sysprof.profiler_core", "run", "--model", args.model, "--ctx", str(args.ctx),
            "--batch", str(args.batch), "--mode", "train", "--dtype", "fp32", "--warmup", "5", "--steps", "10",
            "--memory", "--runs-dir", str(runs), "--json"]


def trace_argv(args, runs: Path) -> list[str]:
    return [sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(runs), "--warmup", "5",
            "--memory-steps", "10-11", "--", sys.executable, str(TRAIN), "--model", args.model, "--ctx",
            str(args.ctx), "--batch", str(args.batch), "--steps", "25"]


def memory_figures(runs: Path) -> dict:
    """The newest run's peak, its largest categories at their maxima, and the recorded steps' slowdown."""
    newest = max(runs.iterdir(), key=lambda p: p.stat().st_mtime)
    summary = json.loads((newest / "summary.json").read_text())
    record = summary["memory"]
    analysis = json.loads((newest / record["analysis"]).read_text())
    return {"peak_mib": analysis["peak_allocated_bytes"] / 2**20, "inflation": record.get("inflation"),
            "by_category_mib": {k: v / 2**20 for k, v in (analysis.get("max_by_category") or {}).items()}}


def main() -> int:
    args = parsed_args("the memory analysis of `sysprof trace --memory-steps` against a `sysprof run --memory`")
    figures = alternated(args, {"run": run_argv, "trace": trace_argv}, memory_figures)
    (args.out / "memory_steps.json").write_text(json.dumps(figures, indent=1))
    return report(figures, args)


def report(figures: dict[str, list[dict]], args) -> int:
    print(f"{args.model}, ctx {args.ctx}, batch {args.batch}, fp32 train; {args.rounds} rounds of each\n")
    print("| figure | run --memory | trace --memory-steps | trace/run |")
    print("|---|---|---|---|")
    peaks = {kind: [f["peak_mib"] for f in figures[kind]] for kind in figures}
    ratio = statistics.median(peaks["trace"]) / statistics.median(peaks["run"])
    print(f"| peak allocated MiB | {spread(peaks['run'])} | {spread(peaks['trace'])} | {ratio:.3f} |")
    for category in figures["run"][0]["by_category_mib"]:
        run = [f["by_category_mib"].get(category, 0.0) for f in figures["run"]]
        traced = [f["by_category_mib"].get(category, 0.0) for f in figures["trace"]]
        share = f"{statistics.median(traced) / statistics.median(run):.3f}" if statistics.median(run) else "—"
        print(f"| {category} MiB at its max | {spread(run)} | {spread(traced)} | {share} |")
    slowed = {kind: [f["inflation"] for f in figures[kind] if f["inflation"]] for kind in figures}
    print(f"| recorded steps' slowdown × | {spread(slowed['run'])} | {spread(slowed['trace'])} | |")
    worst = abs(ratio - 1)
    print(f"\npeaks differ by {worst:.1%}: {'pass' if worst <= LIMIT else 'FAIL'} (limit {LIMIT:.0%})")
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
