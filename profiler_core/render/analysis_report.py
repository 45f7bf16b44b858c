"""Terminal tables for kernel and memory analyses (rich)."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from models.phases import ATTRIBUTED_PHASES
from profiler_core.kernels.attention_flops import sub_range_rows
from profiler_core.kernels.names import short_kernel_name
from profiler_core.kernels.whole_step import whole_step
from profiler_core.render.launch_report import print_launch_analysis
from profiler_core.render.module_tables import print_module_tables
from profiler_core.render.rows import print_rows
from profiler_core.render.units import NA, format_bytes, ns_to_ms


def phase_kernel_summary(analysis: dict) -> Table:
    table = Table(title=f"GPU kernels by phase ({analysis.get('source_kind')}: {analysis.get('source')})",
                  title_justify="left")
    for column in ("phase", "GPU ms", "kernels", "busy %", "GEMM %", "top classes"):
        table.add_column(column, justify="left" if column in ("phase", "top classes") else "right")
    for phase in ATTRIBUTED_PHASES:
        stats = analysis["phases"].get(phase) or {}
        by_class = sorted((stats.get("by_class") or {}).items(), key=lambda kv: -kv[1])[:3]
        busy = stats.get("busy_pct")
        table.add_row(phase, ns_to_ms(stats.get("gpu_ns")), str(stats.get("kernels", 0)),
                      NA if busy is None else f"{busy:.0f}", f"{analysis['gemm_fraction'].get(phase, 0):.0%}",
                      ", ".join(f"{name} {ns_to_ms(ns)}" for name, ns in by_class))
    step = whole_step(analysis["phases"])
    if step["kernels"]:
        by_class = sorted(step["by_class"].items(), key=lambda kv: -kv[1])[:3]
        table.add_row("step (f+b+o)", ns_to_ms(step["gpu_ns"]), str(step["kernels"]), "",
                      f"{step['gemm_fraction']:.0%}", ", ".join(f"{name} {ns_to_ms(ns)}" for name, ns in by_class))
    return table


def top_kernels(analysis: dict, limit: int = 15, full_names: bool = False) -> Table:
    title = f"Top {limit} kernels by total time" + ("" if full_names else " (short names; --full-names for all)")
    # The name takes what the numbers leave (one line, cut with …), so no row wraps at 80 columns
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("kernel", overflow="fold" if full_names else "ellipsis", no_wrap=not full_names, ratio=1)
    for column in ("class", "n", "total ms", "avg µs"):
        table.add_column(column, justify="left" if column == "class" else "right", no_wrap=True)
    for kernel in analysis["kernels"][:limit]:
        name = kernel["name"] if full_names else short_kernel_name(kernel["name"])
        table.add_row(Text(name), kernel["class"], str(kernel["instances"]), ns_to_ms(kernel["total_ns"]),
                      NA if kernel["avg_ns"] is None else f"{kernel['avg_ns'] / 1e3:.1f}")
    return table


def print_attention_tables(console, analysis: dict) -> None:
    """Naive attention: kernel time per sub-range and, for a run of a built-in model, FLOPs against time."""
    attention = analysis.get("attention") or {}
    if sub_range_rows(attention):
        print_rows(console, sub_range_rows(attention),
                   f"Attention sub-ranges (forward; {attention.get('ranges')} attention calls)")
    if attention.get("flops"):
        print_rows(console, attention["flops"], "Attention FLOPs vs kernel time (matmul: GEMM kernels of QKᵀ and PV)")


def print_kernel_analysis(console, analysis: dict, full_names: bool = False) -> None:
    console.print(phase_kernel_summary(analysis))
    print_launch_analysis(console, analysis)
    console.print(top_kernels(analysis, full_names=full_names))
    print_attention_tables(console, analysis)
    print_module_tables(console, analysis, "kernels")
    for note in analysis.get("notes", []):
        console.print(f"[yellow]note:[/] {note}")


def phase_mark_line(timeline: dict, width: int) -> str:
    """A line of phase initials (F, B, O, …) at the columns where each phase starts."""
    times = timeline.get("t") or [0]
    key = "t_ms" if timeline.get("t_unit") == "ms" else "event_index"
    span = (times[-1] - times[0]) or 1
    line = [" "] * max(width, 1)
    for mark in timeline.get("phase_marks") or []:
        if mark.get(key) is None:
            continue
        column = min(int((mark[key] - times[0]) / span * (width - 1)), width - 1)
        line[column] = (mark.get("phase") or "?")[0].upper()
    return "".join(line)



SPARK_LEVELS = " ▁▂▃▄▅▆▇█"


def timeline_sparkline(levels: list[int], width: int) -> str:
    """Active bytes as one line of block characters; each column shows the highest level in its slice."""
    if not levels:
        return ""
    top = max(levels) or 1
    slices = [levels[i * len(levels) // width:(i + 1) * len(levels) // width] or [0] for i in range(width)]
    return "".join(SPARK_LEVELS[round(max(s) / top * (len(SPARK_LEVELS) - 1))] for s in slices)


def print_memory_analysis(console, analysis: dict) -> None:
    console.print(f"peak allocated {format_bytes(analysis['peak_allocated_bytes'])}"
                  f" · reserved {format_bytes(analysis.get('peak_reserved_bytes'))}")
    timeline, width = analysis.get("timeline") or {}, 72
    if timeline.get("active_bytes"):
        console.print("active memory over the recorded steps (F forward, B backward, O optimizer):")
        console.print(timeline_sparkline(timeline["active_bytes"], width), highlight=False)
        console.print(phase_mark_line(timeline, width), highlight=False)
    if analysis.get("images"):
        console.print(f"the timeline as images, beside this analysis: {', '.join(analysis['images'])}")
    table = Table(title="Memory at the peak by category", title_justify="left")
    table.add_column("category")
    table.add_column("bytes", justify="right")
    for category, size in sorted(analysis["by_category"].items(), key=lambda kv: -kv[1]):
        table.add_row(category, format_bytes(size))
    console.print(table)
    top = Table(title="Largest allocations alive at the peak", title_justify="left")
    for column in ("size", "phase", "category", "where"):
        top.add_column(column, justify="right" if column == "size" else "left")
    for alloc in analysis["top_allocations"][:10]:
        top.add_row(format_bytes(alloc["size_bytes"]), str(alloc["phase"]), alloc["category"], str(alloc["frame"]))
    console.print(top)
    print_module_tables(console, analysis, "memory")


def print_analysis(console, analysis: dict, full_names: bool = False) -> None:
    if "phases" in analysis:
        print_kernel_analysis(console, analysis, full_names)
    memory = analysis.get("memory") if "phases" in analysis else analysis
    if memory and "peak_allocated_bytes" in memory:
        print_memory_analysis(console, memory)
