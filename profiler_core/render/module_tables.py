"""Module-type tables (tables/module_tables.py) printed by the CLI, or one dim line saying how to get them."""
from __future__ import annotations

from rich.markup import escape

from sysprof.profiler_core.render.rows import paint_model
from sysprof.profiler_core.tables.module_tables import absent_line, kernel_module_model, memory_module_model


def print_module_tables(console, analysis: dict, kind: str) -> None:
    """The kernels' or the memory's module-type table, or one dim line; nothing for analyses that predate it."""
    if "modules" not in analysis:
        return
    model = kernel_module_model(analysis) if kind == "kernels" else memory_module_model(analysis)
    if not model.rows:
        console.print(f"[dim]by module type: {escape(absent_line(analysis['modules']))}[/]")
        return
    console.print(paint_model(model))
