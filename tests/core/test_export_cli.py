"""`sysprof export`: any table of a saved run or study directory (real H200 data), and its one-line errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ANALYSED, ATTENTION_OOM = DATA / "runs" / "small-h200-analyses", DATA / "studies" / "attention-oom-h200"


def sysprof(*args):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "export", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.slow
def test_lists_and_exports_a_run_directorys_tables(tmp_path):
    listed = sysprof(ANALYSED, "--list")
    assert listed.returncode == 0
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == [
        "phases", "steps", "kernels", "phase kernels", "attention sub-ranges", "attention FLOPs vs time",
        "attention kernels", "memory by category", "top allocations"]
    flops = json.loads(sysprof(ANALYSED, "--table", "attention FLOPs", "--format", "json").stdout)
    assert [row["part"] for row in flops] == ["matmul (QKᵀ + PV)", "softmax", "scale + mask"]
    assert flops[0]["FLOPs ÷ softmax"] == 51.2  # 4·d_head/5 with d_head 64
    parts = json.loads(sysprof(ANALYSED, "--table", "attention kernels", "--format", "json").stdout)
    assert {row["sub-range"] for row in parts} == {"attn QKᵀ+mask", "attn softmax", "attn PV"}
    kernels = sysprof(ANALYSED, "--table", "kern", "--format", "json")
    rows = json.loads(kernels.stdout)
    assert len(rows) == 64 and rows[0]["phase"] == "forward" and rows[0]["class"] == "gemm"
    categories = json.loads(sysprof(ANALYSED, "--table", "memory by", "--format", "json").stdout)
    analysis = json.loads((ANALYSED / "memory" / "analysis.json").read_text())
    assert {row["category"]: row["bytes at the peak"] for row in categories} == analysis["by_category"]
    assert categories[0]["category"] == "activations" and categories[0]["% of peak"] == round(
        100 * analysis["by_category"]["activations"] / analysis["peak_allocated_bytes"], 1)
    written = sysprof(ANALYSED, "--table", "phases", "--output", tmp_path / "phases.csv")
    assert written.returncode == 0 and "wrote 'phases'" in written.stderr
    assert (tmp_path / "phases.csv").read_text().startswith("phase,")


def test_exports_a_study_with_its_oom_row_as_markdown():
    result = sysprof(ATTENTION_OOM)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| impl | dtype | d | seq | status |") and len(lines) == 2 + 6
    assert "| eager | fp32 | 64 | 65536 | oom |" in result.stdout


def test_a_studys_table_exports_as_the_pivot_asked_for_with_its_oom_cells():
    result = sysprof(ATTENTION_OOM, "--pivot", "d,seq:impl", "--value", "fwd mean ms", "--format", "csv")
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[0] == "d,seq,impl=eager,impl=sdpa"
    assert lines[-1].startswith("64,65536,OOM,129.77")  # eager ran out of memory where SDPA did not


@pytest.mark.slow
def test_bad_paths_and_names_are_one_line_errors(tmp_path):
    for args, reason in (((tmp_path,), "neither a run directory"),
                         ((ANALYSED, "--table", "nope"), "no table 'nope'; choose from 'phases'"),
                         ((ANALYSED, "--table", "attention"), "'attention' starts 3 tables; say which: "
                                                              "'attention sub-ranges', 'attention FLOPs vs time'"),
                         ((ANALYSED, "--output", "/proc/no/x.md"), "not a writable folder"),
                         ((ANALYSED, "--output", tmp_path / "x.txt"), "end the name in"),
                         ((ATTENTION_OOM, "--pivot", "d:nope"), "--pivot/--value: no column 'nope'; choose from"),
                         ((ATTENTION_OOM, "--pivot", "d:d"), "'d' is named twice"),
                         ((ATTENTION_OOM, "--value", "status"), "give --pivot ROWS:COLUMNS with it")):
        result = sysprof(*args)
        assert result.returncode == 2 and reason in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
