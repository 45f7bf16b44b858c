"""benchmarks/harness.py: what every benchmark shares works as its README says (run on CPU, real processes)."""
from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness import (
    BENCHMARKS,
    add_config_flags,
    checkout_env,
    config_args,
    interleaved,
    markdown_table,
    results_dir,
    run_json,
    run_tool,
)

ROOT = Path(__file__).resolve().parents[1]


def test_interleaving_runs_every_label_once_a_round_and_reverses_the_order():
    order = list(interleaved(["a", "b", "c"], 4))
    assert [label for _, label in order] == list("abccbaabccba")
    assert [index for index, _ in order] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3


@pytest.mark.slow  # over 5 s on a 2-core machine: not for the fast tier
def test_config_flags_reach_the_tool_as_it_takes_them(tmp_path):
    parser = argparse.ArgumentParser()
    add_config_flags(parser, model="tiny", device="cpu", steps=2)
    args = parser.parse_args(["--ctx", "16", "--batch", "2", "--warmup", "1"])
    summary = run_json("run", *config_args(args), "--runs-dir", str(tmp_path))
    assert summary["status"] == "ok", summary
    assert {k: summary["config"][k] for k in ("model", "ctx", "batch", "steps", "device")} == {
        "model": "tiny", "ctx": 16, "batch": 2, "steps": 2, "device": "cpu"}


def test_a_run_that_prints_no_document_says_its_exit_code():
    summary = run_json("run", "--model", "no-such-model")
    assert summary["status"] == "exit 2" and "no-such-model" in summary["stderr"]


def test_another_checkout_runs_its_own_code(tmp_path):
    """A copy of this checkout whose CLI says something else: the copy's code is what runs, not the installed one."""
    copy = tmp_path / "checkout"
    for folder in ("models", "profiler_core", "trace", "tui"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "setup.py", copy / "setup.py")
    main = copy / "profiler_core" / "__main__.py"
    main.write_text("print('the other checkout')\n")
    assert run_tool(checkout=copy).stdout == "the other checkout\n"
    module, env = checkout_env(copy)
    done = subprocess.run([sys.executable, *module], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout == "the other checkout\n"


def test_markdown_tables_align_numbers_right_and_show_missing_values():
    table = markdown_table([{"phase": "step", "ms": 31.5234, "n": 5}, {"phase": "forward", "ms": None, "n": 5}])
    assert table.splitlines() == ["| phase | ms | n |", "|---|---:|---:|", "| step | 31.523 | 5 |",
                                  "| forward | — | 5 |"]


def test_results_are_filed_by_topic_and_date():
    path = results_dir("overhead", "h200", datetime.date(2026, 11, 26))
    assert path == BENCHMARKS / "overhead" / "results" / "2026-11-26_h200"


# Runs each module as `python -m MODULE --help` would, in one process (torch is imported once, not once a script):
# prints {module: the last line of its error} for those that did not exit 0.
HELP_EACH = """
import contextlib, io, json, runpy, sys, traceback
failed = {}
for module in sys.argv[1:]:
    sys.argv = [module, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    except BaseException:
        code, out = 1, io.StringIO(traceback.format_exc())
    if code != 0:
        failed[module] = out.getvalue().strip().splitlines()[-1:]
print(json.dumps(failed))
"""


@pytest.mark.slow
def test_every_benchmark_script_starts_as_a_module_from_the_root():
    """Each script answers --help as `python -m benchmarks.TOPIC.SCRIPT` (the README's way to run one), so a move
    or a broken import is caught here, not on a GPU machine."""
    scripts = sorted(path for path in BENCHMARKS.glob("*/*.py") if "results" not in path.parts)
    assert len(scripts) >= 20
    modules = [".".join(script.relative_to(ROOT).with_suffix("").parts) for script in scripts]
    done = subprocess.run([sys.executable, "-c", HELP_EACH, *modules], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failed, json.dumps(failed, indent=1)


def test_paused_app_windows_pair_each_running_window_with_the_stopped_one_after_it():
    from benchmarks.app.app_paused import window_ratios

    steps = [(True, 11.0)] * 3 + [(False, 10.0)] * 3 + [(True, 22.0)] * 3 + [(False, 20.0)] * 2 + [(True, 5.0)]
    assert window_ratios(steps) == [1.1, 1.1]  # the last running window has no stopped one after it
    assert window_ratios([(False, 10.0), (True, 12.0), (False, 10.0)]) == [1.2]
