"""Kernel names shown short at 80 columns, whole on demand, never altered by Rich: the real names of a small
fp32 train step on the H200 (tests/data/runs/small-h200-analyses)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from sysprof.profiler_core.base.units import ns_as_ms
from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.render.rows import paint_model, print_rows
from sysprof.profiler_core.render.whole_tables import WholeTablesConsole
from sysprof.profiler_core.tables.kernel_tables import top_kernels_model

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"
NAMES = sorted(set(pd.read_csv(RUN / "kernels" / "phase_kernels.csv")["name"]))
ANALYSIS = json.loads((RUN / "kernels" / "analysis.json").read_text())


def test_short_names_are_base_names_as_nsys_reports_them():
    shorts = {short_kernel_name(name) for name in NAMES}
    assert all(short and not set(short) & set("<>()[] :,") for short in shorts)
    assert len(shorts) < len(NAMES)  # template instances share a base name
    assert short_kernel_name("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
                             "std::array<char *, (unsigned long)1>>(int, T2, T3)") == "vectorized_elementwise_kernel"
    assert short_kernel_name("void <unnamed>::softmax_warp_forward<float, float, float, (int)8, (bool)0, (bool)0>"
                             "(T2 *, const T1 *, int, int, int, const bool *, int, bool)") == "softmax_warp_forward"
    # CUTLASS's wrapper says nothing; its template argument names the GEMM
    assert short_kernel_name("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(T1::Params)") \
        == "cutlass_80_simt_sgemm_128x256_8x4_nt_align1"
    plain = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute"
    assert short_kernel_name(plain) == plain


def rendered(renderable, width: int) -> list[str]:
    """The lines a renderable (or a printer taking a console) prints at width."""
    console = Console(width=width, record=True, file=open(os.devnull, "w"))
    renderable(console) if callable(renderable) else console.print(renderable)
    return console.export_text().splitlines()


def kernel_lines(lines: list[str], kernels: list[dict]) -> list[list[str]]:
    """For each kernel, the lines that hold its total ms beside the start of its short name."""
    return [[line for line in lines if ns_as_ms(kernel["total_ns"]) in line
             and short_kernel_name(kernel["name"])[:12] in line] for kernel in kernels]


@pytest.mark.parametrize("width", [80, 120])
def test_the_top_kernels_table_keeps_each_kernel_on_one_line(width):
    console = WholeTablesConsole(width=width, record=True, force_terminal=True, file=open(os.devnull, "w"))
    console.print(paint_model(top_kernels_model(ANALYSIS, limit=15)))
    lines = console.export_text().splitlines()
    assert all(len(found) == 1 for found in kernel_lines(lines, ANALYSIS["kernels"][:15]))
    assert all(len(line) <= width for line in lines)


def test_full_names_are_whole_and_unaltered_brackets_included():
    model = top_kernels_model(ANALYSIS, limit=len(ANALYSIS["kernels"]), full_names=True)
    lines = "\n".join(rendered(paint_model(model), 4000))
    lambdas = [kernel["name"] for kernel in ANALYSIS["kernels"] if "[lambda() (instance 3)]" in kernel["name"]]
    assert lambdas and all(name in lines for name in lambdas)
    assert all(kernel["name"] in lines for kernel in ANALYSIS["kernels"])


def test_cross_run_kernel_columns_are_short_and_one_line_unless_asked():
    rows = [{"model": "small", "kernel": name, "ms": 1.0} for name in NAMES[:10]]
    short = rendered(lambda console: print_rows(console, rows, "kernels"), 80)
    assert len([line for line in short if line.startswith("│")]) == 10
    whole = "\n".join(rendered(lambda console: print_rows(console, rows, "kernels", full_names=True), 4000))
    assert all(name in whole for name in NAMES[:10])


@pytest.mark.parametrize("width", ["80", "120"])
def test_sysprof_analyze_fits_its_kernel_names_and_full_names_gives_them_whole(width, cli_env):
    env = dict(cli_env, COLUMNS=width, TTY_COMPATIBLE="1", NO_COLOR="1")  # a terminal that wide (piped: no limit)
    run = [sys.executable, "-m", "sysprof.profiler_core", "analyze", str(RUN)]
    short = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert short.returncode == 0, short.stderr
    lines = re.sub(r"\x1b\[[0-9;]*m", "", short.stdout).splitlines()  # a terminal gets bold and italics
    top = lines.index(next(line for line in lines if line.startswith("Top 15 kernels")))
    assert all(len(found) == 1 for found in kernel_lines(lines[top:top + 24], ANALYSIS["kernels"][:15]))
    assert all(len(line) <= int(width) for line in lines)
    whole = subprocess.run([*run, "--full-names"], env=dict(env, TTY_COMPATIBLE="0"), capture_output=True, text=True,
                           timeout=120)
    assert all(kernel["name"] in whole.stdout for kernel in ANALYSIS["kernels"][:15])
