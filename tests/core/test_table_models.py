"""One row model per table, two painters (render/table_model, render/table_models): the CLI and the app draw the
same rows from the same builder, no number is cut at 80 columns, and an export writes exactly those rows."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from sysprof.profiler_core.cli.export import run_tables
from sysprof.profiler_core.documents.run_document import KERNELS, Run
from sysprof.profiler_core.render.rows import paint_model
from sysprof.profiler_core.tables.run_tables import phase_kernel_model, phase_model, ranks_model

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "runs" / "small-h200-analyses"  # real nsys analysis, small fp32 on an H200
XL_RANKS = ROOT / "tests" / "data" / "benchmarks" / "multi_gpu" / "results" / "2026-11-23_h200x2" \
    / "comm_xl_summary.json"  # 2×H200 DDP


def painted(model, compact: bool, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(paint_model(model, compact=compact))
    return console.export_text()


def every_cell_whole(model, text: str) -> None:
    """Each row's cells, but a last free-text one, appear whole on one line of the painted table."""
    lines = text.splitlines()
    kept = [column.numeric or index < len(model.columns) - 1 for index, column in enumerate(model.columns)]
    for row in model.rows:
        cells = [cell for cell, keep in zip(model.cells(row), kept) if cell and keep]
        assert any(all(cell in line for cell in cells) for line in lines), (cells, text)


def test_the_phase_kernel_table_is_built_once_and_both_painters_show_its_rows():
    model = phase_kernel_model(Run.load(RUN).analysis(KERNELS))
    assert [row["phase"] for row in model.rows] == ["forward", "backward", "optimizer", "step", "attention"]
    step = model.rows[3]
    assert step["kernels"] == sum(row["kernels"] for row in model.rows[:3])
    assert abs(step["gpu_ms"] - sum(row["gpu_ms"] for row in model.rows[:3])) < 1e-6
    assert {row["bound"] for row in model.rows[:3]} <= {"launch", "GPU"}
    for compact in (False, True):
        every_cell_whole(model, painted(model, compact))


def test_in_a_pane_the_free_text_column_shows_whole_items_and_marks_what_it_leaves_out():
    """rich crops a no_wrap cell at the edge without its ellipsis ("elementwise 15%" was shown "element"); where not
    even one item fits on a line (the attention row at 78 columns showed only "…"), the first one wraps, whole."""
    model = phase_kernel_model(Run.load(RUN).analysis(KERNELS))
    for width in (66, 70, 76, 78, 90, 100, 140):  # at 66 and 70 a word wider than the column is left out: "…"
        lines = painted(model, compact=True, width=width).splitlines()
        start = lines[0].index("top")  # where the column starts
        assert all(len(line) <= width for line in lines)
        shown_per_row: list[str] = []
        body = next(i for i, line in enumerate(lines) if line.split()[:1] == [model.rows[0]["phase"]])
        for line in lines[body:]:
            if line[:start].strip():
                shown_per_row.append(line[start:].strip())
            else:  # the row's cell goes on over this line
                shown_per_row[-1] += " " + line[start:].strip()
        for row, shown in zip(model.rows, shown_per_row, strict=True):
            whole = model.cells(row)[-1]
            assert shown == whole or (shown.endswith("…") and whole.startswith(shown.removesuffix("…").strip()))
            assert set(shown.split()) <= set(whole.split()) | {"…"}, shown  # no word cut or folded
            if width >= 76:  # every row shows its first item, with its number
                assert shown.split()[0] == whole.split()[0] and shown.removesuffix("…").strip(), shown
    assert "gemm 79% …" in painted(model, compact=True, width=78)


def test_an_export_writes_the_rows_the_screen_shows():
    run = Run.load(RUN)
    model = phase_kernel_model(run.analysis(KERNELS))
    exported = run_tables(run)["phase kernels"]
    assert [list(record) for record in exported][0] == [column.label for column in model.columns]
    assert [record["phase"] for record in exported] == [row["phase"] for row in model.rows]
    assert [record["ms/step"] for record in exported] == [row["ms_per_step"] for row in model.rows]  # raw numbers


def test_the_rank_table_of_a_real_two_gpu_run_fits_80_columns_with_every_number():
    ranks = json.loads(XL_RANKS.read_text())["ranks"]
    model = ranks_model(ranks)
    assert [row["rank"] for row in model.rows] == [row["rank"] for row in ranks["rows"]] == [0, 1]
    assert [row["step"] for row in model.rows] == [row["median_ms"]["step"] for row in ranks["rows"]]
    text = painted(model, compact=False)
    every_cell_whole(model, text)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_gpu_runs_phase_table_keeps_every_number_and_its_peak_memory_at_80_columns():
    """The run's main table (it cut max, CV and n to '31.…', '17.…' and nothing on a real 2×H200 run)."""
    summary = json.loads(XL_RANKS.read_text())
    model = phase_model(summary)
    assert [column.label for column in model.columns][-2:] == ["n", "peak mem"]
    assert [row["phase"] for row in model.rows] == list(summary["phases"])
    every_cell_whole(model, painted(model, compact=False))


def test_seconds_long_phases_with_peak_memory_still_fit_80_columns():
    """A step of seconds (the 2.7B on a busy GPU, a CPU run) with every phase row and its peak memory."""
    summary = json.loads(XL_RANKS.read_text())
    slow = {phase: {key: (value * 12.3456 if key.endswith("_ms") and value else value) for key, value in stats.items()}
            for phase, stats in summary["phases"].items()}
    slow["forward+backward"] = dict(slow["backward"])
    model = phase_model(summary | {"phases": slow, "peak_memory_bytes": {p: 63.5 * 2**30 for p in slow}})
    text = painted(model, compact=False)
    every_cell_whole(model, text)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
