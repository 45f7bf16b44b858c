"""Checks that used to come late or never: each refusal is one line naming the option at fault, before any process
starts or any folder is made."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.compare import config_differences, differences_text
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.cli import main as cli

STUDIES = Path(__file__).resolve().parents[1] / "data" / "studies"
TINY = ["--model", "tiny", "--device", "cpu"]


def refused(tmp_path: Path, *argv: str) -> str:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main([*argv, *([] if argv[0] == "analyze" else ["--runs-dir", str(tmp_path / "runs")])])
    assert code != 0 and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    assert not (tmp_path / "runs").exists()  # nothing started, nothing made
    return err.getvalue()


@pytest.mark.parametrize("argv, said", [
    (["run", *TINY, "--steps", "100000000000"], "--steps 100,000,000,000 is more than the 1,000,000"),
    (["run", *TINY, "--warmup", "100000000000"], "--warmup 100,000,000,000 is more than"),
    (["run", *TINY, "--seed", str(2**64)], "--seed must be 0 to 2**63-1"),
    (["run", *TINY, "--nsys", ""], "--nsys is empty: give it a value or leave it out"),
    (["run", *TINY, "--json", "--format", "csv"], "--json and --format both choose what is printed"),
    (["ab", *TINY, "--ctx", "100000000", "--a", "", "--b=--compile"], "error: predicted peak memory"),
    (["ab", *TINY, "--a=--ctx=32", "--b=--ctx=100000000"], "error: --b: predicted peak memory"),
    (["ab", "--model", "", "--device", "cpu", "--a=--ctx=32", "--b=--ctx=64"], "error: --model is empty"),
    (["ab", "--model", "nope", "--device", "cpu", "--a=--ctx=32", "--b=--ctx=64"], "error: unknown preset 'nope'"),
])
def test_a_value_that_cannot_run_is_refused_up_front_naming_its_option(tmp_path, argv, said):
    assert said in refused(tmp_path, *argv)


def test_attention_refuses_a_function_its_file_does_not_define(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text("import torch\n\n\ndef attention(q, k, v):\n    return q\n")
    said = refused(tmp_path, "study", "attention", "--device", "cpu", "--impl", f"{mine}:missing")
    assert f"--impl: {mine} defines no 'missing' (its functions: attention)" in said
    dynamic = tmp_path / "dynamic.py"
    dynamic.write_text("def __getattr__(name):\n    return None\n")
    from sysprof.profiler_core.base.code_specs import name_problem

    assert name_problem("--impl", str(dynamic), "anything") is None  # names made at import: left to the import


def test_analyze_of_a_study_points_to_the_commands_that_read_one(tmp_path):
    said = refused(tmp_path, "analyze", str(STUDIES / "warmup-small-h200"))
    assert "is a sweep or study directory: `sysprof export` and `sysprof report` read it" in said


def test_a_resume_with_new_axes_is_refused_not_ignored(tmp_path):
    said = refused(tmp_path, "sweep", "--resume", str(STUDIES / "warmup-small-h200"), "--ctx", "64,128",
                   "--model-arg", "n=1")
    assert "--resume runs the cells the sweep planned; --ctx, --model-arg would change none of them" in said


def test_differences_read_as_their_items_not_as_python_writes_them():
    a = RunConfig(model="tiny", model_factory="m.py:f", model_args=("n_layer=4",)).to_dict()
    b = RunConfig(model="tiny", model_factory="m.py:f", model_args=("n_layer=8", "bias=false")).to_dict()
    assert differences_text(config_differences(a, b)) == "model_args n_layer=4 ≠ n_layer=8,bias=false"
