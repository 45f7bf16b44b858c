"""Module-type tables (`--nvtx-modules`), built once for the CLI, the app and export.

Kernels: the analyze JSON's `modules.rows` (per phase and module type, the user's own ranges as sub-rows).
Memory: one row per module type from the memory analysis's `modules` section (bytes at the peak, highest bytes,
largest allocation). Absent data reads as one line saying how to get it.
"""
from __future__ import annotations

from sysprof.profiler_core.base.units import blank_or, bytes_cell, fixed, ns_as_ms
from sysprof.profiler_core.tables.model import Column, TableModel, blank

SUB_ROW = "  └ "
KERNEL_ROW_FIELDS = ("phase", "category", "sub_range", "gpu_ns", "gpu_ms_per_step", "kernels", "share")
HOW_TO_GET = "no module types: run with --nvtx-modules N"
KERNEL_MODULE_COLUMNS = (
    Column("phase", "phase", blank, numeric=False), Column("type", "module type", blank, numeric=False),
    Column("gpu_ms_per_step", "ms/step", fixed(3)), Column("gpu_ns", "total ms", ns_as_ms),
    Column("kernels", "kernels", blank), Column("share", "% phase", blank_or(lambda v: f"{100 * v:.1f}")))
MEMORY_MODULE_COLUMNS = (
    Column("category", "module type", blank, numeric=False), Column("at_peak_bytes", "alive at peak", bytes_cell),
    Column("max_bytes", "max over trace", bytes_cell), Column("largest_bytes", "largest", bytes_cell),
    Column("largest_phase", "phase", blank, numeric=False), Column("largest_module", "module", blank, numeric=False),
    Column("largest_frame", "frame", blank, numeric=False))


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


def kernel_module_model(analysis: dict, phase: str | None = None) -> TableModel:
    """GPU time by module type, of one phase (None: all), each row labelled as shown (sub-rows indented)."""
    rows = [row | {"type": type_label(row)} for row in kernel_module_rows(analysis)
            if phase is None or row["phase"] == phase]
    return TableModel("module_types", "GPU time by module type (user ranges as sub-rows)", KERNEL_MODULE_COLUMNS,
                      rows)


def memory_module_model(memory: dict) -> TableModel:
    return TableModel("module_types", "Memory by module type (largest allocation per type)", MEMORY_MODULE_COLUMNS,
                      memory_module_rows(memory))
