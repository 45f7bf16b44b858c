"""Valid JSON of the wrong shape in a run directory (`phases` a string in summary.json, a number in a kernel
analysis) is named as a damaged file by every command that reads it, in one line, never a traceback; what the
damage leaves out (an analysis's tables, a cut CSV's last row, garbage lines of steps) is said, not dropped."""
from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from sysprof.profiler_core.base.shapes import KERNELS, SUMMARY, shape_problem
from sysprof.profiler_core.cli import main as cli

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"  # real nsys analysis, H200


def sysprof(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def copied(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    return run


def rewritten(tmp_path: Path, name: str, **fields) -> Path:
    run = copied(tmp_path)
    document = json.loads((run / name).read_text())
    (run / name).write_text(json.dumps(document | fields))
    return run


def report(run: Path, tmp_path: Path) -> tuple[int, str, str]:
    code, _, err = sysprof("report", str(run), "-o", str(tmp_path / "report.md"))
    written = tmp_path / "report.md"
    return code, written.read_text() if written.is_file() else "", err


@pytest.mark.parametrize("fields, said", [
    ({"phases": "fast"}, "summary.json is damaged: 'phases' is a string, not an object"),
    ({"phases": {"forward": 3}}, "'phases' has 'forward' as a number, not an object"),
    ({"status": ["ok"]}, "'status' is a list, not a string"),
])
def test_a_summary_of_the_wrong_shape_is_refused_by_export_and_report_in_one_line(tmp_path, fields, said):
    run = rewritten(tmp_path, "summary.json", **fields)
    for code, err in (sysprof("export", str(run), "--format", "json")[::2], report(run, tmp_path)[::2]):
        assert code != 0 and said in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("fields, said", [
    ({"phases": 7}, "analysis.json is damaged: 'phases' is a number, not an object"),
    ({"kernels": {"a": 1}}, "'kernels' is an object, not a list"),
])
def test_an_analysis_of_the_wrong_shape_is_refused_by_analyze_and_said_by_export_and_report(tmp_path, fields, said):
    run = rewritten(tmp_path, "kernels/analysis.json", **fields)
    code, _, err = sysprof("analyze", str(run))
    assert code != 0 and said in err and len(err.strip().splitlines()) == 1, err
    code, out, err = sysprof("export", str(run), "--table", "phases", "--format", "json")
    assert code == 0 and json.loads(out) and said in err and "its tables are left out" in err, err
    code, text, err = report(run, tmp_path)
    assert code == 0 and said in err and "Damaged: " in text and said in text


def test_a_cut_kernel_table_keeps_its_whole_rows_and_says_it_was_cut(tmp_path):
    run = copied(tmp_path)
    table = run / "kernels" / "phase_kernels.csv"
    whole = table.read_text()
    table.write_text(whole[: len(whole) // 3])  # mid-row
    code, out, err = sysprof("export", str(run), "--table", "kernels", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and 0 < len(rows) < whole.count("\n") - 1 and "ends mid-row (cut short)" in err
    assert all(row["phase"] and row["name"] and row["pct_of_phase"] >= 0 for row in rows)  # no junk row from a cut


def test_garbage_lines_in_the_steps_are_said_and_a_torn_last_line_is_not(tmp_path):
    from sysprof.profiler_core.documents.run_document import Run

    run = copied(tmp_path)
    steps = run / "steps.jsonl"
    lines = steps.read_text().splitlines()
    steps.write_text("\n".join([lines[0], "garbage", *lines[1:]]) + '\n{"index": ')
    loaded = Run.load(run)
    assert len(loaded.steps) == len(lines) and loaded.damage_notes() == (
        f"{steps}: 1 damaged line(s) skipped; the steps shown are the rest",)


def test_a_run_of_a_newer_schema_is_refused_with_what_to_do(tmp_path):
    run = rewritten(tmp_path, "manifest.json", schema=99)
    code, _, err = sysprof("export", str(run))
    assert code != 0 and "written by a newer sysprof (schema 99" in err and "upgrade sysprof" in err


def test_the_shapes_pass_every_real_document_and_catch_a_bool_for_a_number():
    for name, shape in (("summary.json", SUMMARY), ("kernels/analysis.json", KERNELS)):
        assert shape_problem(json.loads((RUN / name).read_text()), shape) is None
    assert shape_problem({"tokens_per_s": True}, SUMMARY) == "'tokens_per_s' is true/false, not a number"


STUDIES = Path(__file__).resolve().parents[1] / "data" / "studies"


def test_a_study_of_an_unknown_kind_or_a_damaged_plan_is_refused_not_read_as_empty(tmp_path):
    warmup = tmp_path / "warmup"
    shutil.copytree(STUDIES / "warmup-small-h200", warmup)
    plan = json.loads((warmup / "sweep.json").read_text())
    (warmup / "sweep.json").write_text(json.dumps(plan | {"study": "tomorrow"}))
    code, _, err = sysprof("export", str(warmup))
    assert code != 0 and "a study of kind 'tomorrow', which this sysprof does not know" in err
    attention = tmp_path / "attention"
    shutil.copytree(STUDIES / "attention-oom-h200", attention)
    (attention / "study.json").write_text((attention / "study.json").read_text()[:40])
    code, _, err = sysprof("export", str(attention))
    assert code != 0 and "study.json is damaged (not a readable plan)" in err and len(err.splitlines()) == 1


def test_a_stats_csv_whose_header_was_changed_names_the_file_and_the_column(tmp_path, shared_fixtures):
    for csv in (shared_fixtures / "h200_small_fp32").glob("*.csv"):
        shutil.copy(csv, tmp_path / csv.name)
    table = tmp_path / "cuda_gpu_kern_sum.csv"
    table.write_text(table.read_text().replace("Total Time (ns)", "Total Tiem", 1))
    code, _, err = sysprof("analyze", str(tmp_path))
    assert code != 0 and "cuda_gpu_kern_sum.csv: the cuda_gpu_kern_sum table has no 'total_ns' column" in err


@pytest.mark.slow  # the report draws the study's figures: about 5 s on a 2-core machine
def test_garbage_lines_in_a_studys_cells_are_said_by_export_and_report(tmp_path):
    study = tmp_path / "attention"
    shutil.copytree(STUDIES / "attention-oom-h200", study)
    cells = (study / "cells.jsonl").read_text().splitlines()
    (study / "cells.jsonl").write_text("\n".join([cells[0], "garbage", *cells[1:]]) + "\n")
    code, _, err = sysprof("export", str(study), "--format", "json")
    assert code == 0 and "cells.jsonl: 1 damaged line(s) skipped; those cells are left out" in err
    code, text, err = report(study, tmp_path)
    assert code == 0 and "Damaged: " in text and "1 damaged line(s) skipped" in err


@pytest.mark.parametrize("study, name, fields, said", [
    ("warmup-small-h200", "sweep.json", {"cells": "x"}, "sweep.json is damaged: 'cells' is a string, not a list"),
    ("attention-oom-h200", "study.json", {"cells": 5}, "study.json is damaged (not a readable plan)"),
    ("advise-tiny-cpu", "advice.json", {"candidates": "x"}, "advice.json is damaged: 'candidates' is a string"),
    ("advise-tiny-cpu", "advice.json", {"skipped": [1]}, "'skipped' holds a number, not only objects"),
])
def test_a_study_plan_of_the_wrong_shape_is_one_line(tmp_path, study, name, fields, said):
    copy = tmp_path / study
    shutil.copytree(STUDIES / study, copy)
    (copy / name).write_text(json.dumps(json.loads((copy / name).read_text()) | fields))
    code, _, err = sysprof("export", str(copy), "--format", "json")
    assert code != 0 and said in err and len(err.strip().splitlines()) == 1, err
