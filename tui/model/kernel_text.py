"""The Kernels screen's lines of text around its tables (pure): which profiler made them and what it cost, the
attention FLOPs argument, each rank's one-line report, the highlighted kernel's numbers."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape

from sysprof.profiler_core.base.units import NA, fixed, ns_as_ms, ns_as_us


def backend_line(profile: Mapping[str, Any] | None, analysis: dict) -> str:
    """Which profiler made the table and how much it slowed the step (profiled vs clean medians)."""
    profile = profile or {}
    backend = profile.get("backend") or analysis.get("source_kind") or "unknown"
    steps = len(analysis.get("steps") or [])
    line = f"backend [b]{backend}[/b]" + (f" · {steps} profiled steps" if steps else "")
    if profile.get("inflation") is not None:
        line += (f" · profiling inflation [b]×{profile['inflation']:.2f}[/b] (profiled median "
                 f"{profile['profiled_median_ms']:.1f} ms vs clean {profile['clean_median_ms']:.1f} ms)")
    else:
        line += " · profiling inflation N/A"
    return line + (f" · {analysis['source']}" if analysis.get("source") else "")


def attention_flops_line(analysis: dict) -> str:
    """The reports' argument in one line: the matmuls' FLOPs and time against the softmax's."""
    rows = {row["part"].split()[0]: row for row in (analysis.get("attention") or {}).get("flops") or []}
    matmul, softmax = rows.get("matmul"), rows.get("softmax")
    if not matmul or not softmax or not matmul["ms"] or not softmax["ms"]:
        return ""
    return (f"attention: QKᵀ+PV do ×{matmul['FLOPs ÷ softmax']} the softmax's FLOPs in ×{matmul['time ÷ softmax']} "
            f"its time ({matmul['TFLOP/s']} vs {softmax['TFLOP/s']} TFLOP/s)")


def rank_lines(profile: Mapping[str, Any] | None, shown: int | None) -> str:
    """--nproc: every rank's own report in one line each (GPU and communication ms per profiled step, exposed
    communication, overlap), the one on screen marked; r shows the next rank's tables."""
    rows = (profile or {}).get("ranks") or []
    if not rows:
        return ""
    lines = []
    for row in rows:
        mark = "▶" if row["rank"] == shown else " "
        if row.get("error"):
            lines.append(f"{mark} [red]{escape(row['error'])}[/red]")
            continue
        lines.append(f"{mark} rank {row['rank']}: GPU {_number(row['gpu_ms_per_step'], 'ms/step')} · comm "
                     f"{_number(row['comm_ms'], 'ms')} ({_number(row['comm_share_pct'], '%', 0)}) · exposed "
                     f"{_number(row['exposed_comm_ms'], 'ms')} · overlap {_number(row['overlap_pct'], '%', 0)}")
    return "\n".join([f"{len(rows)} ranks, one report each (r: next rank)", *lines])


def _number(value: float | None, unit: str, digits: int = 1) -> str:
    return NA if value is None else f"{value:,.{digits}f}{'' if unit == '%' else ' '}{unit}"


def rank_choices(profile: Mapping[str, Any] | None) -> list[tuple[int, str]]:
    """(rank, its kernels/analysis.json path in the run directory) of the ranks that have tables."""
    return [(row["rank"], row["kernels"]) for row in (profile or {}).get("ranks") or [] if not row.get("error")]


def kernel_details(record: dict | None) -> tuple[str, str]:
    """The highlighted kernel's numbers (wrapped whole), then its whole name (one line, … where the width ends)."""
    if not record:
        return "", ""
    numbers = (f"{record.get('class')} · {record.get('phase')} · {record.get('instances')} launches · total "
               f"{ns_as_ms(record.get('total_ns'))} ms · avg {ns_as_us(record.get('avg_ns'))} µs · min "
               f"{ns_as_us(record.get('min_ns'))} · max {ns_as_us(record.get('max_ns'))} µs · "
               f"{fixed(1)(record.get('pct_of_phase'))}% of phase")
    return numbers, f"[b]{escape(str(record.get('name')))}[/b]"
