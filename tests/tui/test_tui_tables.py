"""A table wider than its view never shows part of a number at the edge."""
import re
from contextlib import asynccontextmanager

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.strip import Strip

from sysprof.tui.widgets.tables import (
    MORE_LEFT,
    MORE_RIGHT,
    MarkableTable,
    OutOfViewCells,
    blank_cut_columns,
    columns_out_of_view,
)


def text_of(line: Strip) -> str:
    return "".join(segment.text for segment in line)


def test_the_columns_the_edges_cut_are_blank_with_an_arrow():
    line = Strip([Segment(" 1234.5 "), Segment(" 99.25 "), Segment(" 7.125 ")])  # render widths 8, 7, 7
    assert text_of(blank_cut_columns(line.crop(0, 12), [8, 7, 7], 0, 12)) == " 1234.5    " + MORE_RIGHT
    assert text_of(blank_cut_columns(line.crop(3, 18), [8, 7, 7], 3, 15)) == MORE_LEFT + "     99.25   " \
        + MORE_RIGHT
    assert text_of(blank_cut_columns(line.crop(8, 22), [8, 7, 7], 8, 14)) == " 99.25  7.125 "  # on the edges
    assert text_of(blank_cut_columns(line.crop(0, 14), [8, 7, 7], 0, 14)) == " 1234.5  99.25"  # only padding cut
    assert text_of(blank_cut_columns(line.crop(9, 13), [8, 14], 9, 4)) == "99.2"  # wider than the view: kept


def test_the_columns_out_of_view_are_the_ones_the_edges_cut_or_leave_past_them():
    assert columns_out_of_view([8, 7, 7], 0, 12) == [1, 2]  # 99.25 cut, 7.125 past the edge
    assert columns_out_of_view([8, 7, 7], 3, 15) == [0, 2]
    assert columns_out_of_view([8, 7, 7], 8, 14) == [0]  # all of it left of the view
    assert columns_out_of_view([8, 7, 7], 0, 14) == [2]  # only 99.25's padding cut: it is seen
    assert columns_out_of_view([8, 14], 9, 4) == [0]  # the second, wider than the view, is shown as it is


class OneTable(App):
    def compose(self) -> ComposeResult:
        yield MarkableTable(id="one")
        yield OutOfViewCells("one", id="more")


ROWS = [{f"c{i}": 1000 * i + 0.125 * row for i in range(1, 13)} for row in range(5)]


async def test_no_number_is_cut_at_either_edge_of_a_scrolled_table():
    app = OneTable()
    async with app.run_test(size=(50, 10)) as pilot:
        table = app.query_one(MarkableTable)
        table.show({key: key for key in ROWS[0]}, ROWS)
        await pilot.pause()
        whole = {str(value) for row in ROWS for value in row.values()}
        for scroll in (0, 7, 25):
            table.scroll_to(x=scroll, animate=False)
            await pilot.pause()
            lines = [text_of(table.render_line(y)) for y in range(1, 6)]
            shown = [number for line in lines for number in re.findall(r"[\d.]+", line)]
            assert shown and all(number in whole for number in shown), (scroll, lines)
            assert any(MORE_RIGHT in line for line in lines)
        assert any(MORE_LEFT in line for line in lines)


def shown_cells(more: OutOfViewCells) -> dict[str, str]:
    return dict(cell.split(": ") for cell in str(more.render()).split(" · ") if cell != "…")


@asynccontextmanager
async def shown_at(width: int):
    """ROWS in a MarkableTable on a screen this wide, with the line under it: (pilot, table, line)."""
    app = OneTable()
    async with app.run_test(size=(width, 12)) as pilot:
        table, more = app.query_one(MarkableTable), app.query_one(OutOfViewCells)
        table.show({key: key for key in ROWS[0]}, ROWS)
        await pilot.pause()
        yield pilot, table, more


async def test_the_line_under_a_table_shows_the_highlighted_rows_cells_out_of_view():
    async with shown_at(120) as (pilot, table, more):
        await pilot.press("down")
        await pilot.pause()
        hidden = [f"c{i}" for i in range(1, 13) if f"c{i}" not in text_of(table.render_line(0))]
        assert hidden and shown_cells(more) == {f"c{i}": str(ROWS[1][f"c{i}"]) for i in range(13 - len(hidden), 13)}
        assert "…" not in str(more.render())


async def test_the_line_keeps_to_two_lines_of_whole_cells_and_follows_the_scroll():
    async with shown_at(50) as (pilot, table, more):
        line = str(more.render())
        assert line.endswith(" · …") and more.size.height == 2, line
        assert list(shown_cells(more))[0] == "c5" and shown_cells(more)["c5"] == "5000.0"
        table.scroll_to(x=1000, animate=False)
        await pilot.pause()
        assert list(shown_cells(more))[0] == "c1" and "c12" not in shown_cells(more)
    async with shown_at(200) as (_, table, more):  # every column seen: no line
        assert more.has_class("-empty") and not more.display
