"""Any table of rows printed as a rich table: the one view the CLI's sweep, study and analysis tables share."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.units import significant

KERNEL_COLUMN, NAME_WIDTH = "kernel", 40  # the cross-run kernel tables' name column, and its width on a line


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        # six significant digits below 100 (so 10.0001 and 10.0021 stay apart), two decimals above
        return significant(value) if abs(value) < 100 else f"{value:,.2f}"
    return str(value)


def print_rows(console, table, title: str, full_names: bool = False) -> None:
    """Any table (DataFrame or list of dicts) as a rich table, numbers right-aligned; a column empty in every
    row (memory on a CPU, say) is left out of the view, not of exports. A kernel column shows base names on one
    line each (full_names: whole), its exports the whole names."""
    from sysprof.profiler_core.render.export import table_records

    columns, records = table_records(table)
    columns = [c for c in columns if any(r.get(c) is not None for r in records)] if records else columns
    view = Table(title=title, title_justify="left")
    for column in columns:
        numeric = any(isinstance(r.get(column), (int, float)) and not isinstance(r.get(column), bool) for r in records)
        names = column == KERNEL_COLUMN and not full_names
        view.add_column(str(column), justify="right" if numeric else "left", no_wrap=names, overflow="ellipsis",
                        max_width=NAME_WIDTH if names else None)
    for record in records:
        view.add_row(*(Text(_cell(_shown(column, record.get(column), full_names))) for column in columns))
    console.print(view)


def _shown(column: str, value, full_names: bool):
    return short_kernel_name(value) if column == KERNEL_COLUMN and isinstance(value, str) and not full_names else value
