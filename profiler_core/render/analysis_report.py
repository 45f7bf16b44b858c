"""Terminal tables for kernel and memory analyses (rich).

Text that is not ours (kernel names, paths, user range and module names, stack frames, notes quoting them) never
reaches Rich as markup: it is escaped inside markup strings, a Text in table cells, or printed with markup off. A real
kernel name holds `[lambda() (instance 3)]`, which Rich would otherwise take for a style tag and drop.
"""
from __future__ import annotations

from rich.markup import escape

from sysprof.profiler_core.base.units import exact_bytes, format_bytes, format_ms
from sysprof.profiler_core.kernels.attention_flops import sub_range_rows
from sysprof.profiler_core.memory.phases import step_words
from sysprof.profiler_core.render.launch_report import print_launch_analysis
from sysprof.profiler_core.render.module_tables import print_module_tables
from sysprof.profiler_core.render.rows import paint_model, print_rows
from sysprof.profiler_core.tables.kernel_tables import top_kernels_model
from sysprof.profiler_core.tables.memory_tables import memory_model
from sysprof.profiler_core.tables.run_tables import phase_kernel_model

TOP_CLASSES = "top classes, GPU ms"  # the unit of the numbers in its cells


def print_attention_tables(console, analysis: dict) -> None:
    """Naive attention: kernel time per sub-range and, for a run of a built-in model, FLOPs against time."""
    attention = analysis.get("attention") or {}
    if sub_range_rows(attention):
        print_rows(console, sub_range_rows(attention),
                   f"Attention sub-ranges (forward; {attention.get('ranges')} attention calls)")
    if attention.get("flops"):
        print_rows(console, attention["flops"], "Attention FLOPs vs kernel time (matmul: GEMM kernels of QKᵀ and PV)")


def print_kernel_analysis(console, analysis: dict, full_names: bool = False) -> None:
    console.print(paint_model(phase_kernel_model(analysis)))
    print_launch_analysis(console, analysis)
    console.print(paint_model(top_kernels_model(analysis, full_names=full_names)))
    print_attention_tables(console, analysis)
    print_module_tables(console, analysis, "kernels")
    for note in analysis.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(str(note))}")


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


def _allocator_peak(analysis: dict) -> dict:
    """The allocator-block peak; an analysis that predates the block replay has only the 512-B rounding."""
    if analysis.get("allocator_peak"):
        return analysis["allocator_peak"]
    return {**(analysis.get("peak") or {}), "allocated_bytes": analysis.get("peak_allocated_rounded_bytes"),
            "replayed": False, "note": "this analysis predates the block replay, so each request counts rounded up to "
                                       "512 B; analyze the snapshot again"}


def _steps_in_marks(analysis: dict) -> int | None:
    """Recorded steps from the timeline's phase marks (an analysis that predates `peak.recorded_steps`)."""
    steps = [mark["step"] for mark in (analysis.get("timeline") or {}).get("phase_marks") or []
             if mark.get("step") is not None]
    return max(steps) + 1 if steps else None


def memory_headline(analysis: dict) -> list[str]:
    """Markup lines: both peaks with their units, when the peak fell (phase and recorded step), and which of the two
    torch.cuda.max_memory_allocated() reads."""
    peak, blocks = analysis.get("peak") or {}, _allocator_peak(analysis)
    steps = peak.get("recorded_steps") or _steps_in_marks(analysis)
    requested, allocated = analysis["peak_allocated_bytes"], blocks.get("allocated_bytes")
    at_least = "" if blocks.get("replayed") else "≥ "
    lines = [f"[b]peak {format_bytes(requested)}[/b] requested, {at_least}{format_bytes(allocated)} as allocator blocks"
             f" · reserved {format_bytes(analysis.get('peak_reserved_bytes'))}"]
    when = f"at the peak: {step_words(peak, steps)}"
    if peak.get("t_ms") is not None:
        when += f", {format_ms(peak['t_ms'])} after recording began"
    if peak.get("first_step_partial"):
        when += " (recording began inside the 1st step)"
    if blocks.get("event_index") != peak.get("event_index"):
        when += f"; allocator blocks peak elsewhere: {step_words(blocks, steps)}"
        if blocks.get("t_ms") is not None:
            when += f", {format_ms(blocks['t_ms'])} after recording began"
    lines.append(escape(when))
    how = ("requests rounded up to 512 B, some given a whole free block" if blocks.get("replayed")
           else f"a lower bound here: {blocks.get('note')}")
    lines.append(escape(f"torch.cuda.max_memory_allocated() (reset when recording began) reads the allocator-block "
                        f"peak, {exact_bytes(allocated)} ({how}); the requested {exact_bytes(requested)} is "
                        'torch.cuda.memory_stats()["requested_bytes.all.peak"]'))
    return lines


def print_memory_analysis(console, analysis: dict) -> None:
    for line in memory_headline(analysis):
        console.print(line, highlight=False)
    timeline, width = analysis.get("timeline") or {}, 72
    if timeline.get("active_bytes"):
        console.print("active memory over the recorded steps (F forward, B backward, O optimizer):")
        console.print(timeline_sparkline(timeline["active_bytes"], width), highlight=False)
        console.print(phase_mark_line(timeline, width), highlight=False)
    if analysis.get("images"):
        console.print(f"the timeline as images, beside this analysis: {escape(', '.join(analysis['images']))}")
    for name in ("categories", "top allocations"):
        console.print(paint_model(memory_model(name, analysis)))
    print_module_tables(console, analysis, "memory")


def print_analysis(console, analysis: dict, full_names: bool = False) -> None:
    if "phases" in analysis:
        print_kernel_analysis(console, analysis, full_names)
    memory = analysis.get("memory") if "phases" in analysis else analysis
    if memory and "peak_allocated_bytes" in memory:
        print_memory_analysis(console, memory)
