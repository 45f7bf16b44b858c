"""Human-readable tables for the terminal (rich); the JSON form is the summary itself."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from sysprof.models.presets import PRESETS, count_params, forward_flops, human_count
from sysprof.profiler_core.analysis.energy import energy_line
from sysprof.profiler_core.analysis.metrics import mfu_missing
from sysprof.profiler_core.base.config import DTYPE_BYTES
from sysprof.profiler_core.base.events import OK, end_reason, run_state
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.base.units import format_bytes, format_ms, optional
from sysprof.profiler_core.render.rows import paint_model
from sysprof.profiler_core.tables.run_tables import phase_model, ranks_model, run_title


def phase_table(summary: RunSummary) -> Table:
    """Per-phase statistics in milliseconds (render/table_models.phase_model): every number whole at 80 columns."""
    return paint_model(phase_model(summary))


def between_table(summary: RunSummary) -> Table:
    """A group's phases: the median of the per-process medians, the spread between processes (range, IQR, CV)
    next to the within-process std, which alone cannot see run-to-run noise."""
    repeats = summary["repeats"]
    table = Table(title=f"{run_title(summary)}\nms over {repeats['ok']} of {repeats['n']} processes: the "
                        "median of their medians, its spread between them, and the std within one",
                  title_justify="left")
    table.add_column("phase", no_wrap=True)
    for column in ("median", "range", "IQR", "CV", "std in run", "procs"):
        table.add_column(column, justify="right", no_wrap=True)
    for phase, stats in summary.get("phases", {}).items():
        between = (summary.get("between") or {}).get(phase)
        if not between:
            continue
        spread = (f"{between['min']:.2f}–{between['max']:.2f}" if between["min"] is not None else "—")
        table.add_row(phase, optional(between["median"], ".2f"), spread, optional(between["iqr"], ".2f"),
                      optional(None if between["cv_pct"] is None else between["cv_pct"] / 100, ".1%"),
                      optional(stats["std_ms"], ".2f"), str(between["n"]))
    return table


def rank_kernels_table(profile: Mapping[str, Any]) -> Table:
    """--nproc with a profiler: each rank's own report, per measured step: GPU kernel time, communication kernel time
    and its share, the part no compute kernel hid (exposed) and the overlap (a rank without tables:
    rank_pass_errors)."""
    table = Table(title=f"kernels per rank ({profile['backend']}, profiled pass; ms per measured step; exposed: "
                        "communication while no compute kernel runs)", title_justify="left")
    for column in ("rank", "GPU ms", "comm ms", "comm %", "exposed ms", "overlap %"):
        table.add_column(column, justify="left" if column == "rank" else "right", no_wrap=True)
    for row in (row for row in profile["ranks"] if not row.get("error")):
        table.add_row(str(row["rank"]), optional(row["gpu_ms_per_step"], ".1f"), optional(row["comm_ms"], ".1f"),
                      optional(row["comm_share_pct"], ".0f"), optional(row["exposed_comm_ms"], ".1f"),
                      optional(row["overlap_pct"], ".0f"))
    return table


def memory_ranks_line(memory: Mapping[str, Any]) -> str:
    """--nproc with --memory: the peak each rank's allocator history shows (the Memory screen shows the first's)."""
    read = [row for row in memory["ranks"] if not row.get("error")]
    return "memory pass, peak allocated: " + " · ".join(
        f"rank {row['rank']} {format_bytes(row['peak_allocated_bytes'])}" for row in read)


def rank_pass_errors(summary: RunSummary) -> list[str]:
    """Why a rank of the profiled or memory pass has no tables (no report, a report nsys could not read, …)."""
    rows = [*((summary.get("profile") or {}).get("ranks") or []), *((summary.get("memory") or {}).get("ranks") or [])]
    return [row["error"] for row in rows if row.get("error")]


def gpu_readings_line(rows: Sequence[dict[str, Any]]) -> str | None:
    """Each rank's median SM clock and power over the measured steps (NVML, sampled by the session), when read."""
    read = [row for row in rows if row.get("sm_clock_mhz") is not None or row.get("power_w") is not None]
    if not read:
        return None
    return "SM clock, power: " + " · ".join(
        f"rank {row['rank']} {optional(row.get('sm_clock_mhz'), '.0f')} MHz {optional(row.get('power_w'), '.0f')} W"
        for row in read)


def _why_not(reason: str | None) -> str:
    return f" ({reason})" if reason else ""


def throughput_line(summary: RunSummary) -> str:
    parts = [f"status {run_state(summary)}",
             f"tokens/s {optional(summary.get('tokens_per_s'), ',.0f')}",
             f"{optional(summary.get('tflops'), '.1f')} TFLOP/s ({summary.get('precision_used')})",
             f"MFU {optional(summary.get('mfu'), '.1%')}" + _why_not(mfu_missing(summary, summary.get("env") or {}))]
    if summary.get("compile_s") is not None:
        parts.append(f"compile {summary['compile_s']:.1f} s (not in step times)")
    if summary.get("compile"):
        parts.append(f"compile mode {summary['compile']['mode']}, CUDA graphs {summary['compile']['cuda_graphs']}")
    if summary.get("warmup_ms"):
        parts.append("warm-up " + ", ".join(format_ms(ms) for ms in summary["warmup_ms"]))
    return " · ".join(parts)


def state_line(summary: RunSummary) -> str:
    """How a run that did not finish ok ended: its state, the measured steps it kept, and why."""
    state = run_state(summary)
    step = summary.get("phases", {}).get("step")
    done = step["n"] if step else 0
    planned = (summary.get("config") or {}).get("steps")
    kept = "" if summary.get("repeats") else f" after {done} of {planned} measured steps"  # a group: its table says
    reason = end_reason(state, summary.get("error"))
    return f"[red]{state}[/]{kept}" + (f": {escape(reason)}" if reason else "")


def models_table() -> Table:
    table = Table(title="Model presets (vocab 10000)", title_justify="left")
    for column in ("name", "params", "d_model", "d_ff", "layers", "heads", "fwd GFLOP/token @ctx256"):
        table.add_column(column, justify="left" if column == "name" else "right")
    for spec in PRESETS.values():
        per_token = forward_flops(spec, 1, 256) / 256 / 1e9
        table.add_row(spec.name, f"{count_params(spec):,} ({human_count(count_params(spec))})", str(spec.d_model),
                      str(spec.d_ff), str(spec.layers), str(spec.heads), f"{per_token:.2f}")
    return table


def residual_rows(ctxs: list[int], batch: int, dtype: str) -> list[dict]:
    """Per preset: one layer's residual stream (B·T·d·bytes, the unit activations are counted in) at each ctx."""
    return [{"model": spec.name, "d_model": spec.d_model,
             **{f"ctx {ctx} MiB": batch * ctx * spec.d_model * DTYPE_BYTES[dtype] / 2**20 for ctx in ctxs}}
            for spec in PRESETS.values()]


def models_json() -> list[dict]:
    return [{"name": s.name, "params": count_params(s), "d_model": s.d_model, "d_ff": s.d_ff, "layers": s.layers,
             "heads": s.heads, "vocab": s.vocab, "forward_flops_per_token_ctx256": forward_flops(s, 1, 256) // 256}
            for s in PRESETS.values()]


def profile_line(summary: RunSummary) -> str | None:
    profile = summary.get("profile")
    if not profile:
        return None
    inflation = profile.get("inflation")
    backend = f"{profile['backend']} {profile.get('version') or ''}".strip()
    text = (f"profiled with {backend}: median step "
            f"{optional(profile.get('profiled_median_ms'), '.2f')} ms vs clean "
            f"{optional(profile.get('clean_median_ms'), '.2f')} ms"
            f" (×{optional(inflation, '.2f')} — profiled times are not the step times)")
    return text + (f"; [red]{profile['error']}[/]" if profile.get("error") else "")


def profiled_time_line(summary: RunSummary) -> str | None:
    """Where a profiled run's seconds went (session/clock.py): the clean pass, then the profiled part step by step."""
    seconds = (summary.get("profile") or {}).get("seconds")
    if not seconds:
        return None
    parts = ", ".join(f"{name.removeprefix('profiled_')} {value:.1f}" for name, value in seconds.items()
                      if name not in ("clean_pass", "profiled_total", "started_early"))
    early = (f"; its runner started {seconds['started_early']:.1f} s early, held beside the clean pass"
             if "started_early" in seconds else "")
    return (f"[dim]time: clean pass {seconds.get('clean_pass', 0):.1f} s; profiled part "
            f"{seconds.get('profiled_total', 0):.1f} s ({parts} s){early}[/]")


def print_warnings(console, warnings: Sequence[dict[str, Any]]) -> None:
    """Instability warnings (analysis/stability.py) under a run's numbers, one line each: cause and remedy."""
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning['message'])}")


def print_ranks(console, summary: RunSummary) -> None:
    """--nproc: the per-rank table, the GPUs' readings, the findings and each rank's passes (rank 0's report)."""
    if summary.get("ranks"):
        model = ranks_model(summary["ranks"])
        console.print(paint_model(model))
        readings = gpu_readings_line(summary["ranks"]["rows"])
        if readings:
            console.print(readings)
        for finding in model.notes:
            console.print(f"[yellow]{escape(finding)}[/]")
        if (summary.get("profile") or {}).get("ranks"):
            console.print(rank_kernels_table(summary["profile"]))
        if (summary.get("memory") or {}).get("ranks"):
            console.print(memory_ranks_line(summary["memory"]))
        for reason in rank_pass_errors(summary):
            console.print(f"[red]{escape(reason)}[/]")
    elif summary.get("rank"):  # another node's share of a job: the table is with rank 0
        rank = summary["rank"]
        console.print(f"rank {rank['rank']} of {rank['world']}: the per-rank table is in rank 0's run directory, "
                      "on its node")


def print_findings(console, findings: Sequence[dict[str, Any]]) -> None:
    """A traced loop's findings (analysis/loop_findings.py), each with what it rests on."""
    for finding in findings:
        console.print(f"[bold]finding:[/] {escape(finding['text'])} [dim](rests on {escape(finding['rests_on'])})[/]")


def print_headline(console, summary: RunSummary, run_dir: Path) -> None:
    """A run's numbers with their spread, its ranks, throughput, state, profile and warnings: what `sysprof run`
    prints before the analyses, and what a report quotes.

    Warnings: those the run stored (with the host and GPU readings taken while it ran), else those its summary and
    steps alone show."""
    from sysprof.profiler_core.analysis.stability import warnings_for_summary
    from sysprof.profiler_core.base.rundir import read_steps

    console.print(between_table(summary) if summary.get("repeats") else phase_table(summary))
    print_ranks(console, summary)
    console.print(throughput_line(summary))
    energy = energy_line(summary)
    if energy:
        console.print(energy)
    if run_state(summary) != OK:
        console.print(state_line(summary))
    if profile_line(summary):
        console.print(profile_line(summary))
    if profiled_time_line(summary):
        console.print(profiled_time_line(summary))
    stored = summary.get("warnings")
    print_warnings(console, warnings_for_summary(summary, read_steps(run_dir)) if stored is None else stored)
    print_findings(console, summary.get("findings") or [])  # type: ignore[arg-type]


def print_run(console, summary: RunSummary, full_names: bool = False) -> None:
    """The human report of `sysprof run`: the headline (print_headline), then what the extra passes produced."""
    from sysprof.profiler_core.base.rundir import read_json
    from sysprof.profiler_core.render.analysis_report import print_kernel_analysis, print_memory_analysis

    run_dir = Path(summary["run_dir"])
    print_headline(console, summary, run_dir)
    kernels = partial(print_kernel_analysis, full_names=full_names)
    for path, printer in (((summary.get("profile") or {}).get("kernels"), kernels),
                          ((summary.get("memory") or {}).get("analysis"), print_memory_analysis)):
        analysis = read_json(run_dir / path) if path else None
        if analysis:
            printer(console, analysis)
    console.print(f"[dim]run directory: {escape(str(run_dir))}[/]")

