"""Scaling over the GPUs of one host: step time, tokens/s and scaling efficiency per GPU count, communication per
rank, a slowed rank, nsys on every rank, and no process left on any GPU afterwards.

    python3 -m benchmarks.scaling [--gpus 1,2,4,8] [--models small,xl,2.7B] [--fsdp 2.7B@4,8] [--repeats 3]
                                  [--straggler-gpus 8] [--nsys-gpus 8] [--out DIR]

Every cell is `sysprof run` in a fresh launch: bf16 autocast, SDPA attention, ctx 512, a full train step with the
fused AdamW (the fastest optimizer setting without a compile; benchmarks/README.md), --batch per rank. One GPU is the
plain single-process run, the reference of the efficiency: tokens/s per GPU divided by one GPU's median tokens/s.
The rounds interleave the cells, so a slow spell of the shared host lands on every GPU count rather than on one. The
first launch of every multi-GPU cell runs under nsys (its clean pass counts as a sample like any other) for the
communication per rank. A GPU count this host lacks is listed as not run, with the reason. Prints Markdown;
--out also keeps it (scaling.md) and every launch's record (launches.jsonl).

On the CPU (--device cpu) the ranks use gloo: the same tables without a GPU, which is how the tests run it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SLOW_RANK_ENV = "SYSPROF_TEST_SLOW_RANK"  # rank:ms, read by the runner (profiler_core.runner.distributed)


@dataclass(frozen=True)
class Cell:
    model: str
    nproc: int
    parallel: str  # "single" for the one-GPU reference

    @property
    def label(self) -> str:
        return f"{self.model} {self.parallel} ×{self.nproc}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="1,2,4,8", help="GPU counts of the DDP rows")
    parser.add_argument("--models", default="small,xl,2.7B")
    parser.add_argument("--fsdp", default="2.7B@4,8", help="MODEL@COUNTS run with FSDP as well ('' for none)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh launches per cell")
    parser.add_argument("--batch", type=int, default=4, help="batch per rank")
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--straggler-gpus", type=int, default=8, help="ranks of the slowed-rank run (0: none)")
    parser.add_argument("--straggler-delay-ms", type=float, default=30.0)
    parser.add_argument("--nsys-gpus", type=int, default=8, help="ranks of the nsys-per-rank run (0: none)")
    parser.add_argument("--small-model", default="small", help="model of the straggler and nsys runs")
    parser.add_argument("--out", type=Path, help="also write scaling.md and launches.jsonl here")
    parser.add_argument("--runs-dir", type=Path, help="keep the run directories here (default: a temporary one)")
    parser.add_argument("--launch-timeout-s", type=float, default=1800.0, help="a launch running longer fails")
    return parser.parse_args(argv)


def counts(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n.strip()]


def usable_ranks(device: str) -> int:
    """GPUs a rank can take; on the CPU any number of gloo ranks can share the cores."""
    if device == "cpu":
        return os.cpu_count() or 1
    from sysprof.profiler_core.nvml import visible_gpu_count

    return visible_gpu_count()


def grid(args: argparse.Namespace) -> list[Cell]:
    cells = [Cell(model, n, "single" if n == 1 else "ddp")
             for model in args.models.split(",") for n in counts(args.gpus)]
    if args.fsdp:
        model, _, fsdp_counts = args.fsdp.partition("@")
        cells += [Cell(model, n, "fsdp") for n in counts(fsdp_counts)]
    return cells


def run_argv(args: argparse.Namespace, cell: Cell, profiler: str, runs_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", "sysprof.profiler_core", "run", "--model", cell.model, "--dtype", "bf16",
            "--attention", "sdpa", "--ctx", str(args.ctx), "--batch", str(args.batch), "--mode", "train",
            "--warmup", str(args.warmup), "--steps", str(args.steps), "--device", args.device,
            "--profiler", profiler, "--runs-dir", str(runs_dir), "--json"]
    argv += ["--optimizer-impl", "fused"] if args.device == "cuda" else []  # fused AdamW is CUDA's
    return argv + (["--nproc", str(cell.nproc), "--parallel", cell.parallel] if cell.nproc > 1 else [])


def launch(args: argparse.Namespace, argv: list[str], extra_env: dict[str, str] | None = None) -> tuple[dict, float]:
    """One fresh `sysprof run`: its summary (or why there is none) and the seconds from command to exit."""
    env = {**os.environ, **(extra_env or {})}
    if args.device == "cpu":  # torchrun gives each CPU rank one thread; the one-process reference gets the same
        env.setdefault("OMP_NUM_THREADS", "1")
    started = time.monotonic()
    # its own process group, so a launch that runs too long is stopped whole: CLI, session, torchrun and ranks
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=args.launch_timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)  # stops like Ctrl-C: the run keeps its summary
        process.communicate()
        message = f"ran past --launch-timeout-s {args.launch_timeout_s:g} and was stopped"
        return {"status": "failed", "error": {"message": message}}, time.monotonic() - started
    seconds = time.monotonic() - started
    try:
        return json.loads(stdout), seconds
    except json.JSONDecodeError:
        last = (stderr.strip().splitlines() or [f"exit {process.returncode}"])[-1]
        return {"status": "failed", "error": {"message": last}}, seconds


def record(cell: Cell, summary: dict, seconds: float, profiler: str) -> dict:
    """The figures of one launch: the job's step (its slowest rank's median), tokens/s over all ranks, and the
    communication per rank when nsys ran."""
    ranks = summary.get("ranks") or {}
    rows = ranks.get("rows") or []
    steps = ([(row.get("median_ms") or {}).get("step") for row in rows] if rows
             else [((summary.get("phases") or {}).get("step") or {}).get("median_ms")])
    step = max((ms for ms in steps if ms is not None), default=None)  # a rank that died early has none
    comm = [{key: row.get(key) for key in ("rank", "comm_ms", "comm_share_pct", "exposed_comm_ms", "overlap_pct")}
            for row in (summary.get("profile") or {}).get("ranks") or []]
    return {"cell": cell.label, "model": cell.model, "nproc": cell.nproc, "parallel": cell.parallel,
            "profiler": profiler, "status": summary.get("status"), "seconds": round(seconds, 1),
            "error": (summary.get("error") or {}).get("message"), "step_ms": step,
            "tokens_per_s": ranks.get("tokens_per_s_all_ranks", summary.get("tokens_per_s")),
            "peak_gib": _gib(_peak_bytes(summary, rows)), "comm": comm,
            "run_dir": summary.get("run_dir"), "findings": ranks.get("findings") or []}


def _peak_bytes(summary: dict, rank_rows: list[dict]) -> int | None:
    """The highest allocated peak of any rank (of any phase when there are no ranks)."""
    peaks = ([row.get("peak_allocated_bytes") for row in rank_rows] if rank_rows
             else list((summary.get("peak_memory_bytes") or {}).values()))
    return max((peak for peak in peaks if peak), default=None)


def _gib(nbytes: int | None) -> float | None:
    return round(nbytes / 2**30, 2) if nbytes else None


def measure_grid(args: argparse.Namespace, cells: list[Cell], runs_dir: Path, log) -> list[dict]:
    """Every cell `repeats` times in fresh launches; each round starts at a different cell (interleaved)."""
    launches: list[dict] = []
    for round_index in range(args.repeats if cells else 0):
        shift = round_index % len(cells)
        for cell in cells[shift:] + cells[:shift]:
            profiler = "nsys" if round_index == 0 and cell.nproc > 1 and args.device == "cuda" else "none"
            summary, seconds = launch(args, run_argv(args, cell, profiler, runs_dir))
            launches.append(record(cell, summary, seconds, profiler))
            log(launches[-1])
    return launches


def spread(values: list[float | None]) -> str:
    values = [value for value in values if value is not None]
    if not values:
        return "—"
    middle = statistics.median(values)
    return f"{middle:.1f}" if len(values) == 1 else f"{middle:.1f} ({min(values):.1f}–{max(values):.1f})"


def scaling_table(cells: list[Cell], launches: list[dict], skipped: dict[Cell, str]) -> list[str]:
    lines = ["| model | parallel | GPUs | launches ok | step ms, median (min–max) | tokens/s, all GPUs "
             "| tokens/s per GPU | scaling efficiency | peak GiB per GPU |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for cell in cells:
        if cell in skipped:
            lines.append(f"| {cell.model} | {cell.parallel} | {cell.nproc} | — | {skipped[cell]} | | | | |")
            continue
        ok = [row for row in launches if row["cell"] == cell.label and row["status"] == "ok"]
        tokens = _tokens(ok)
        base = _tokens([row for row in launches if row["cell"] == Cell(cell.model, 1, "single").label
                        and row["status"] == "ok"])
        efficiency = f"{efficiency_of(tokens, base, cell.nproc):.2f}" if tokens and base else "—"
        per_gpu = spread([t / cell.nproc for t in tokens])
        peak = max((row["peak_gib"] or 0 for row in ok), default=None)
        total = len([row for row in launches if row["cell"] == cell.label])
        lines.append(f"| {cell.model} | {cell.parallel} | {cell.nproc} | {len(ok)} of {total} "
                     f"| {spread([row['step_ms'] for row in ok])} | {spread(tokens)} | {per_gpu} | {efficiency} "
                     f"| {peak if peak else '—'} |")
    return lines


def _tokens(rows: list[dict]) -> list[float]:
    return [row["tokens_per_s"] for row in rows if row["tokens_per_s"]]


def efficiency_of(tokens: list[float], base: list[float], nproc: int) -> float:
    """Tokens/s per GPU over one GPU's, each the median of its launches."""
    return statistics.median(tokens) / nproc / statistics.median(base)


def failures(launches: list[dict]) -> list[str]:
    return [f"- {row['cell']}: {row['status']}: {row['error']}" for row in launches if row["status"] != "ok"]


def communication_table(launches: list[dict]) -> list[str]:
    lines = ["| model | parallel | GPUs | rank | NCCL ms per step | NCCL share of kernel time | exposed ms "
             "| overlap |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in launches:
        for rank in row["comm"]:
            lines.append(f"| {row['model']} | {row['parallel']} | {row['nproc']} | {rank['rank']} "
                         f"| {_fmt(rank['comm_ms'])} | {_fmt(rank['comm_share_pct'], '%')} "
                         f"| {_fmt(rank['exposed_comm_ms'])} | {_fmt(rank['overlap_pct'], '%')} |")
    return lines if len(lines) > 2 else ["No multi-GPU cell ran under nsys, so there is no communication table."]


def _fmt(value: float | None, unit: str = "") -> str:
    return "—" if value is None else f"{value:.1f}{unit}"


def straggler_run(args: argparse.Namespace, runs_dir: Path) -> list[str]:
    """One run whose last rank's forward is delayed: the findings should name it and its victim."""
    slowed = args.straggler_gpus - 1
    cell = Cell(args.small_model, args.straggler_gpus, "ddp")
    summary, _ = launch(args, run_argv(args, cell, "none", runs_dir),
                        {SLOW_RANK_ENV: f"{slowed}:{args.straggler_delay_ms:g}"})
    said = (summary.get("ranks") or {}).get("findings") or []
    head = (f"{cell.label}, rank {slowed}'s forward delayed by {args.straggler_delay_ms:g} ms: "
            f"{summary.get('status')}; the straggler named: {'yes' if _names(said, slowed) else 'no'}")
    return [head, *[f"- {line}" for line in said]]


def _names(findings: list[str], rank: int) -> bool:
    return any(line.startswith(f"rank {rank} is the straggler") for line in findings)


def nsys_run(args: argparse.Namespace, runs_dir: Path) -> list[str]:
    """nsys on every rank: seconds from the command to the per-rank kernel tables (the clean pass before the
    profiled one included), and the reports' size."""
    cell = Cell(args.small_model, args.nsys_gpus, "ddp" if args.nsys_gpus > 1 else "single")
    summary, seconds = launch(args, run_argv(args, cell, "nsys", runs_dir))
    profile = summary.get("profile") or {}
    rank_rows = profile.get("ranks") or []
    tables = (len([row for row in rank_rows if not row.get("error")]) if rank_rows
              else int(profile.get("status") == "ok"))
    reports = list(Path(summary["run_dir"]).rglob("*.nsys-rep")) if summary.get("run_dir") else []
    size = sum(path.stat().st_size for path in reports) / 2**20
    return [f"{cell.label} under nsys: {summary.get('status')}, {seconds:.1f} s from command to the kernel tables "
            f"of {tables} of {cell.nproc} ranks (the clean pass included); {len(reports)} reports, {size:.1f} MiB "
            "in all", f"- where the time went (profile.seconds): {json.dumps(profile.get('seconds'))}"]


def _not_run(ranks: int, have: int, least: int = 1) -> str:
    if ranks < least:
        return f"not run: {ranks} ranks asked for, it needs {least} or more"
    return f"not run: needs {ranks} GPUs, this host has {have}"


def compute_pids() -> dict[int, set[int]] | str:
    """The compute processes on every GPU by NVML (anyone's), or why NVML could not say."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no nvidia-ml-py, no driver: the report says so and keeps the tables
        return f"NVML unavailable ({type(exc).__name__}: {exc})"
    try:
        return {index: {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(
                    pynvml.nvmlDeviceGetHandleByIndex(index))} for index in range(pynvml.nvmlDeviceGetCount())}
    finally:
        pynvml.nvmlShutdown()


def processes_left(before: dict[int, set[int]] | str) -> list[str]:
    """Processes on each GPU that were not there before the runs; the ranks' contexts take a moment to go."""
    for _ in range(20):
        after = compute_pids()
        if isinstance(before, str) or isinstance(after, str):
            return [before if isinstance(before, str) else str(after)]
        left = {index: pids - before.get(index, set()) for index, pids in after.items()}
        if not any(left.values()):
            break
        time.sleep(0.5)
    return [f"GPU {index}: {len(pids)} processes left that were not there before the runs"
            + (f" (pids {sorted(pids)})" if pids else "") for index, pids in left.items()]


def report(args: argparse.Namespace, cells, launches, skipped, extra: list[str]) -> str:
    setup = (f"bf16 autocast, SDPA, ctx {args.ctx}, batch {args.batch} per rank, train step"
             f"{' with fused AdamW' if args.device == 'cuda' else ''}, {args.warmup} + {args.steps} steps, "
             f"{args.repeats} fresh launches per cell, interleaved; device {args.device}")
    parts = [f"## Scaling ({setup})", "", *scaling_table(cells, launches, skipped), ""]
    parts += ["Launches that failed:", *failures(launches), ""] if failures(launches) else []
    parts += ["## Communication per rank (the first launch of each multi-GPU cell, under nsys)", "",
              *communication_table(launches), "", *extra]
    return "\n".join(parts) + "\n"


class LaunchLog:
    """Each launch's record as it ends: a JSON line on stderr and, with --out, in launches.jsonl (begun afresh)."""

    def __init__(self, out: Path | None):
        self.path = out / "launches.jsonl" if out else None
        if self.path:
            out.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")

    def __call__(self, row: dict) -> None:
        print(json.dumps(row), file=sys.stderr, flush=True)
        if self.path:
            with self.path.open("a") as out:
                out.write(json.dumps(row) + "\n")


def single_runs(args: argparse.Namespace, have: int, runs_dir: Path) -> list[str]:
    """The slowed-rank run and the nsys-on-every-rank run, or why each did not run."""
    lines = ["## A slowed rank", ""]
    lines += (straggler_run(args, runs_dir) if 1 < args.straggler_gpus <= have
              else [_not_run(args.straggler_gpus, have, least=2)])
    lines += ["", "## nsys on every rank", ""]
    if args.device != "cuda":
        return [*lines, "not run: nsys needs --device cuda", ""]
    return [*lines, *(nsys_run(args, runs_dir) if 0 < args.nsys_gpus <= have else [_not_run(args.nsys_gpus, have)]),
            ""]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    have = usable_ranks(args.device)
    cells = grid(args)
    skipped = {cell: _not_run(cell.nproc, have) for cell in cells if cell.nproc > have}
    log = LaunchLog(args.out)
    before = compute_pids() if args.device == "cuda" else None
    with tempfile.TemporaryDirectory(prefix="sysprof-scaling-") as scratch:
        runs_dir = args.runs_dir or Path(scratch)
        launches = measure_grid(args, [cell for cell in cells if cell not in skipped], runs_dir, log)
        extra = single_runs(args, have, runs_dir)
    extra += ["## Processes left on the GPUs", ""]
    extra += processes_left(before) if before is not None else ["CPU run: no GPU to check."]
    text = report(args, cells, launches, skipped, extra)
    print(text)
    if args.out:
        (args.out / "scaling.md").write_text(text)


if __name__ == "__main__":
    main()
