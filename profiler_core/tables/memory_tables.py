"""The memory analysis's tables, built once: largest allocations alive at the peak, memory by category, predicted
against measured, and by module type. The Memory screen cycles through them; `sysprof analyze` prints the first
two; export and report write category_rows."""
from __future__ import annotations

from typing import Any

from sysprof.profiler_core.base.units import bytes_cell, fixed
from sysprof.profiler_core.memory.phases import BEFORE_RECORDING
from sysprof.profiler_core.tables.model import Column, TableModel, blank
from sysprof.profiler_core.tables.module_tables import memory_module_model


def phase_label(phase: Any) -> str:
    """A phase as a person reads it: `before recording` for blocks allocated before the history began."""
    return "before recording" if phase in (None, BEFORE_RECORDING) else str(phase)


MEMORY_TABLES = ("top allocations", "categories", "predicted vs measured", "module types")
ALLOCATION_COLUMNS = (
    Column("size_bytes", "size", bytes_cell), Column("category", "category", blank, numeric=False),
    Column("phase", "phase", phase_label, numeric=False), Column("step", "step", blank),
    Column("op", "op", blank, numeric=False), Column("where", "where", blank, numeric=False),
    Column("allocated_at_ms", "at ms", fixed(1)))
CATEGORY_COLUMNS = (
    Column("category", "category", blank, numeric=False), Column("at_peak_bytes", "alive at peak", bytes_cell),
    Column("pct_of_peak", "% of peak", fixed(1)), Column("max_bytes", "max over trace", bytes_cell))
PREDICTION_COLUMNS = (
    Column("item", "item", blank, numeric=False), Column("predicted_bytes", "predicted", bytes_cell),
    Column("measured_bytes", "measured", bytes_cell), Column("ratio", "measured/pred", fixed(2)),
    Column("explanation", "why they differ", blank, numeric=False))


def category_rows(memory: dict) -> list[dict]:
    """Memory at the peak by category, largest first, with its share of the requested peak (export's and the
    report's table)."""
    peak = memory.get("peak_allocated_bytes") or 0
    ranked = sorted(memory["by_category"].items(), key=lambda item: -item[1])
    return [{"category": name, "bytes at the peak": size, "MiB": round(size / 2**20, 1),
             "% of peak": round(100 * size / peak, 1) if peak else None} for name, size in ranked]


def where_made(alloc: dict) -> str:
    """Where an allocation was made: its user frame, or why there is none."""
    if alloc.get("frame"):
        return str(alloc["frame"])
    return "before recording" if alloc.get("phase") in (None, BEFORE_RECORDING) else "no Python frame recorded"


def _by_category(memory: dict) -> list[dict]:
    """Every category alive at the peak or at any time: at the peak (with its share of it) and at its highest."""
    at_peak, highest = memory.get("by_category") or {}, memory.get("max_by_category") or {}
    peak = memory.get("peak_allocated_bytes") or 0
    return [{"category": name, "at_peak_bytes": at_peak.get(name), "max_bytes": highest.get(name),
             "pct_of_peak": 100 * at_peak[name] / peak if peak and at_peak.get(name) is not None else None}
            for name in dict.fromkeys([*at_peak, *highest])]


def memory_model(name: str, memory: dict) -> TableModel:
    """One of MEMORY_TABLES, from a memory analysis (the prediction is the one analysis.json holds)."""
    if name == "top allocations":
        rows = [alloc | {"where": where_made(alloc)} for alloc in memory.get("top_allocations") or []]
        return TableModel("top_allocations", "Largest allocations alive at the peak", ALLOCATION_COLUMNS, rows)
    if name == "categories":
        return TableModel("categories", "Memory at the peak by category", CATEGORY_COLUMNS, _by_category(memory))
    if name == "module types":
        return memory_module_model(memory)
    return TableModel("predicted_vs_measured", "Predicted against measured", PREDICTION_COLUMNS,
                      list(memory.get("predicted_vs_measured") or []))
