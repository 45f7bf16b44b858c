"""Tables read whole wherever they are printed: piped at their natural width, in an 80-column terminal laid out
(or split into column groups) so that no number is cut, and as Markdown or CSV with --format."""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Column, Table

from sysprof.profiler_core.render.rows import print_rows
from sysprof.profiler_core.render.whole_tables import WholeTablesConsole
from sysprof.profiler_core.studies.results import study_tables

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
RUNS, STUDIES = DATA / "runs", DATA / "studies"
CUT_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,.]*…|…[\d,.]*\d")  # "27…", "4.…", "…456": a number lost its digits
NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+%?$")


def printed(table_rows, title: str, width: int, terminal: bool = True, table_format=None) -> str:
    out = io.StringIO()
    console = WholeTablesConsole(table_format, file=out, width=width, force_terminal=terminal, color_system=None)
    print_rows(console, table_rows, title)
    return out.getvalue()


def numbers_in_markdown(text: str) -> set[str]:
    """Every number a Markdown table shows, as the drawn table must show it too."""
    cells = [cell.strip() for line in text.splitlines() if line.startswith("| ") for cell in line.split(" | ")]
    return {token.strip("|").strip() for cell in cells for token in cell.split()
            if NUMBER.match(token.strip("|").strip())}


@pytest.fixture(scope="module")
def attention_oom():
    """The H200 attention study whose eager T = 65536 cell ran out of memory: 13 columns in its main table."""
    return study_tables(STUDIES / "attention-oom-h200")


@pytest.mark.parametrize("width", [80, 60])
def test_a_study_table_wider_than_the_terminal_loses_no_number(attention_oom, width):
    for title, table in attention_oom.items():
        markdown = printed(table, title, width, table_format="md")
        drawn = printed(table, title, width)
        assert not CUT_NUMBER.search(drawn), drawn
        assert max(len(line) for line in drawn.splitlines()) <= width
        words = set(drawn.replace("│", " ").split())
        assert numbers_in_markdown(markdown) <= words, (title, numbers_in_markdown(markdown) - words)


def test_column_groups_repeat_the_columns_that_name_a_row(attention_oom):
    title, table = next(iter(attention_oom.items()))
    drawn = printed(table, title, 80)
    assert "(continued, 2/" in drawn  # too wide for one table at 80 columns
    headers = [line for line in drawn.splitlines() if line.startswith("┃") and "impl" in line]
    assert len(headers) >= 2 and all("seq" in line for line in headers), drawn  # each group names its rows


def test_piped_a_table_keeps_its_natural_width_one_line_per_row(attention_oom):
    title, table = next(iter(attention_oom.items()))
    drawn = printed(table, title, 80, terminal=False)
    body = [line for line in drawn.splitlines() if line.startswith("│")]
    assert len(body) == len(table) and max(map(len, drawn.splitlines())) > 80
    assert "continued" not in drawn and not CUT_NUMBER.search(drawn)


def test_csv_carries_the_raw_values_and_markdown_the_shown_ones(attention_oom):
    title, table = next(iter(attention_oom.items()))
    csv_text = printed(table, title, 80, table_format="csv")
    assert csv_text.startswith(f"# {title}\n")
    header = csv_text.splitlines()[1].split(",")
    oom_row = next(line for line in csv_text.splitlines() if ",oom" in line.lower() or "OOM" in line)
    assert len(oom_row.split(",")) >= len(header) - 1
    first = table[0]
    numeric = next(key for key, value in first.items() if isinstance(value, float))
    assert repr(first[numeric]) in csv_text or str(first[numeric]) in csv_text  # not a rounded display
    assert printed(table, title, 80, table_format="md").startswith(f"**{title}**\n\n| ")


def drawn_table(table, width: int, terminal: bool = True, **print_options) -> str:
    out = io.StringIO()
    WholeTablesConsole(file=out, width=width, force_terminal=terminal, color_system=None).print(table, **print_options)
    return out.getvalue()


def layout_table(names: list[str], title: str | None = "layout") -> Table:
    """A wide table of the shape the CLI prints (names, then figures with their spread): for layout only."""
    table = Table(title=title)
    table.add_column("model")
    for column in ("fwd ms", "bwd ms", "step ms", "B/A [95% CI]", "tokens/s"):
        table.add_column(column, justify="right")
    for index, name in enumerate(names):
        table.add_row(name, f"{1234.5 + index:,.2f} ± 0.12", "12,345.678", "98,765.4321", "1.0412 [1.0301–1.0523] ×",
                      "123,456")
    return table


@pytest.mark.parametrize("width", [44, 30])
def test_names_too_long_to_repeat_give_way_to_a_row_number_and_no_number_is_cut(width):
    names = ["gpt2-medium-custom-factory-a", "gpt2-medium-custom-factory-b"]
    text = drawn_table(layout_table(names), width)
    assert not CUT_NUMBER.search(text) and max(map(len, text.splitlines())) <= width
    for figure in ("12,345.678", "98,765.4321", "123,456", "1,234.50 ± 0.12", "1,235.50 ± 0.12"):
        assert figure in text, figure  # whole, on one line, its spread beside it
    assert "#" in text and "(continued, 2/" in text  # each group names its rows by number
    assert all("(continued" not in line or "│" not in line for line in text.splitlines())  # titles: own lines


def test_markup_false_cells_are_text_in_every_format():
    table = Table("module", Column("ms", justify="right"), title="modules")
    table.add_row("[attn]block_attention", "12345.678")
    assert "[attn]block_attention" in drawn_table(table, 30, markup=False)
    out = io.StringIO()
    WholeTablesConsole("csv", file=out).print(table, markup=False)
    assert "[attn]block_attention,12345.678" in out.getvalue()


def test_empty_and_one_column_tables_print_as_they_are():
    empty = Table("a", "b", show_header=False)
    assert max(map(len, drawn_table(empty, 80, terminal=False).splitlines() or [""])) <= 80
    single = Table("only")
    single.add_row("x" * 50)
    assert "x" * 50 in drawn_table(single, 80, terminal=False)
    assert max(map(len, drawn_table(single, 30).splitlines())) <= 30


CLI_ENV = {"COLUMNS": "80", "NO_COLOR": "1"}
COMMANDS = {
    "analyze (kernels and memory)": ["analyze", RUNS / "small-h200-analyses"],
    "models with the residual stream": ["models", "--ctxs", "128,256,512,1024,2048"],
    "inspect": ["inspect", "--model", "small", "--ctx", "256", "--device", "cpu"],
    "compare": ["compare", RUNS / "tiny-ctx32", RUNS / "tiny-ctx64", "--force"],
    "a run with two ranks": ["run", "--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2",
                             "--warmup", "1", "--steps", "3", "--nproc", "2"],
    "a sweep": ["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "16", "--batch", "2", "--warmup", "0",
                "--steps", "2", "--mode", "forward,train"],
    "a study": ["study", "passes", "--device", "cpu", "--models", "tiny", "--ctxs", "16,24", "--steps", "2",
                "--warmup", "0"],
}


def sysprof(args, terminal: bool, tmp_path: Path, table_format=None) -> str:
    env = os.environ | CLI_ENV | ({"TTY_COMPATIBLE": "1"} if terminal else {"TTY_COMPATIBLE": "0"})
    runs = ["--runs-dir", str(tmp_path)] if args[0] in ("run", "sweep", "study", "inspect") else []
    command = [sys.executable, "-m", "sysprof.profiler_core", *map(str, args), *runs]
    done = subprocess.run(command + (["--format", table_format] if table_format else []), capture_output=True,
                          text=True, env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_table_printing_command_reads_whole_piped_and_at_80_columns(name, tmp_path):
    args = COMMANDS[name]
    measures = args[0] in ("run", "sweep", "study")
    # A command that measures runs once, in the terminal: a second run would measure other numbers (so the
    # whole-number check below cannot compare outputs), and piped its tables only keep their natural width.
    terminal = sysprof(args, True, tmp_path)
    piped = terminal if measures else sysprof(args, False, tmp_path)
    for text in (piped, terminal):
        assert not CUT_NUMBER.search(text), CUT_NUMBER.search(text)
    assert max(len(line) for line in terminal.splitlines()) <= 80
    if measures:
        return
    shown = numbers_in_markdown(sysprof(args, False, tmp_path, "md"))
    assert shown, "no table printed"
    for text in (piped, terminal):
        words = set(text.replace("│", " ").replace("┃", " ").split())
        assert shown <= words, shown - words


def test_compare_as_csv_is_raw_values_with_the_notes_on_stderr(tmp_path):
    import csv
    import json

    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "compare", str(RUNS / "tiny-ctx32"),
                           str(RUNS / "tiny-ctx64"), "--force", "--format", "csv"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(line for line in done.stdout.splitlines() if line and not line.startswith("#")))
    summary_a = json.loads((RUNS / "tiny-ctx32" / "summary.json").read_text())
    forward = next(row for row in rows if row["phase"] == "forward")
    assert float(forward["A median"]) == summary_a["phases"]["forward"]["median_ms"] and forward["unit"] == "ms"
    assert "minimum effect" in done.stderr and "minimum effect" not in done.stdout
