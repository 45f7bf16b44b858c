"""Any table of rows printed as a rich table: the one view the CLI's sweep, study and analysis tables share."""
from __future__ import annotations

from rich.table import Table

from profiler_core.render.units import significant


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        # six significant digits below 100 (so 10.0001 and 10.0021 stay apart), two decimals above
        return significant(value) if abs(value) < 100 else f"{value:,.2f}"
    return str(value)


def print_rows(console, table, title: str) -> None:
    """Any table (DataFrame or list of dicts) as a rich table, numbers right-aligned; a column empty in every
    row (memory on a CPU, say) is left out of the view, not of exports."""
    from profiler_core.render.export import table_records

    columns, records = table_records(table)
    columns = [c for c in columns if any(r.get(c) is not None for r in records)] if records else columns
    view = Table(title=title, title_justify="left")
    for column in columns:
        numeric = any(isinstance(r.get(column), (int, float)) and not isinstance(r.get(column), bool) for r in records)
        view.add_column(str(column), justify="right" if numeric else "left")
    for record in records:
        view.add_row(*(_cell(record.get(column)) for column in columns))
    console.print(view)
