"""Module-type tables (`--nvtx-modules`): rows for the app and exports, and terminal tables for the CLI.

Kernels: the analyze JSON's `modules.rows` (per phase and module type, the user's own ranges as sub-rows).
Memory: one row per module type from the memory analysis's `modules` section (bytes at the peak, highest bytes,
largest allocation). Absent data reads as one line saying how to get it.
"""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from sysprof.profiler_core.base.units import format_bytes, ns_to_ms

SUB_ROW = "  └ "
KERNEL_ROW_FIELDS = ("phase", "category", "sub_range", "gpu_ns", "gpu_ms_per_step", "kernels", "share")
HOW_TO_GET = "no module types: run with --nvtx-modules N"


def kernel_module_rows(analysis: dict) -> list[dict]:
    """Rows of the kernels' module-type table, in the analysis's order, with GPU ms per profiled step."""
    section = analysis.get("modules") or {}
    steps = section.get("steps") or 1
    return [{field: row.get(field) for field in KERNEL_ROW_FIELDS} | {"gpu_ms_per_step": row["gpu_ns"] / steps / 1e6}
            for row in section.get("rows") or []]


def memory_module_rows(memory: dict) -> list[dict]:
    """One row per module type that holds any memory: at the peak, at its highest, and its largest allocation."""
    section = memory.get("modules") or {}
    at_peak, highest = section.get("at_peak_bytes") or {}, section.get("max_bytes") or {}
    largest = {row["category"]: row for row in section.get("largest") or []}
    rows = []
    for category in dict.fromkeys([*highest, *largest]):
        big = largest.get(category) or {}
        if highest.get(category) or big:
            rows.append({"category": category, "at_peak_bytes": at_peak.get(category),
                         "max_bytes": highest.get(category),
                         "largest_bytes": big.get("size_bytes"), "largest_phase": big.get("phase"),
                         "largest_frame": big.get("frame"), "largest_module": big.get("module")})
    return rows


def type_label(row: dict) -> str:
    """A row's module type, or its user range indented under it."""
    return f"{SUB_ROW}{row['sub_range']}" if row.get("sub_range") else str(row["category"])


def absent_line(section: dict | None) -> str:
    """Why there is no module-type table: the analysis's own note, else how to get one."""
    notes = (section or {}).get("notes") or []
    return notes[0] if notes else HOW_TO_GET


def kernel_module_table(analysis: dict) -> Table:
    table = Table(title="GPU time by module type (user ranges as sub-rows)", title_justify="left")
    for column in ("phase", "module type", "ms/step", "total ms", "kernels", "% phase"):
        table.add_column(column, justify="left" if column in ("phase", "module type") else "right")
    for row in kernel_module_rows(analysis):
        table.add_row(row["phase"] if not row["sub_range"] else "", type_label(row), f"{row['gpu_ms_per_step']:.3f}",
                      ns_to_ms(row["gpu_ns"]), str(row["kernels"]), f"{row['share']:.0%}")
    return table


def memory_module_table(memory: dict) -> Table:
    table = Table(title="Memory by module type (largest allocation per type)", title_justify="left")
    for column in ("module type", "at peak", "highest", "largest", "phase", "where"):
        table.add_column(column, justify="left" if column in ("module type", "phase", "where") else "right")
    for row in memory_module_rows(memory):
        table.add_row(row["category"], format_bytes(row["at_peak_bytes"]), format_bytes(row["max_bytes"]),
                      format_bytes(row["largest_bytes"]), str(row["largest_phase"] or ""),
                      _where(row))
    return table


def _where(row: dict) -> str:
    """The allocation's user frame; backward allocations have none (the autograd thread runs no Python), so their
    module's path instead."""
    return str(row["largest_frame"] or row["largest_module"] or "")


def print_module_tables(console, analysis: dict, kind: str) -> None:
    """The kernels' or the memory's module-type table, or one dim line; nothing for analyses that predate it. Its
    cells are user range names, module types and frames: printed with markup off."""
    if "modules" not in analysis:
        return
    rows = kernel_module_rows(analysis) if kind == "kernels" else memory_module_rows(analysis)
    if not rows:
        console.print(f"[dim]by module type: {escape(absent_line(analysis['modules']))}[/]")
        return
    console.print(kernel_module_table(analysis) if kind == "kernels" else memory_module_table(analysis), markup=False)
