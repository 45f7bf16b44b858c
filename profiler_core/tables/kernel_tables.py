"""Kernel lists, built once from one set of columns: the CLI's top kernels of a run and the Kernels screen's
table of every kernel by phase (phase_kernels.csv's rows), so a kernel's numbers read the same in both."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.profiler_core.base.units import fixed, ns_as_ms, ns_as_us
from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.tables.model import Column, TableModel, blank

TOP_KERNELS = 15


def _short_name(name: Any) -> str:
    return short_kernel_name(str(name))


# The time first after the name: at 80 columns what comes after the name is what a user sees without scrolling.
KERNEL_COLUMNS = {column.key: column for column in (
    Column("phase", "phase", blank, numeric=False), Column("name", "kernel", _short_name, numeric=False),
    Column("total_ns", "total ms", ns_as_ms), Column("pct_of_phase", "% phase", fixed(1)),
    Column("instances", "n", blank), Column("class", "class", blank, numeric=False),
    Column("avg_ns", "avg µs", ns_as_us), Column("med_ns", "med µs", ns_as_us), Column("min_ns", "min µs", ns_as_us),
    Column("max_ns", "max µs", ns_as_us), Column("std_ns", "std µs", ns_as_us))}
TOP_KERNEL_KEYS = ("name", "class", "instances", "total_ns", "avg_ns")


def kernels_model(rows: Sequence[Mapping[str, Any]], keys: Sequence[str] = tuple(KERNEL_COLUMNS),
                  title: str = "Kernels by phase", full_names: bool = False) -> TableModel:
    """Kernel rows with the given columns; full_names: the whole mangled name instead of its base name."""
    columns = tuple(Column(key, "kernel", blank, numeric=False) if key == "name" and full_names
                    else KERNEL_COLUMNS[key] for key in keys)
    return TableModel("kernels", title, columns, rows)


def top_kernels_model(analysis: Mapping[str, Any], limit: int = TOP_KERNELS, full_names: bool = False) -> TableModel:
    """A run's kernels by total time over the profiled steps, the longest first."""
    title = f"Top {limit} kernels by total time" + ("" if full_names else " (short names; --full-names for all)")
    keys = (*TOP_KERNEL_KEYS[1:], "name") if full_names else TOP_KERNEL_KEYS  # a whole name wraps: last
    return kernels_model(list(analysis["kernels"][:limit]), keys, title, full_names)
