"""What once finished with exit 0 and no word while the answer was wrong: FSDP on one process, a NaN loss (and a
steps.jsonl that strict JSON parsers reject), --format ignored beside --output, `ps` on a directory that is not
there, a too-big batch blamed on ctx, an empty number field called null."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.stability import loss_warnings
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.memory.fit import fit_problem
from sysprof.profiler_core.runner.timing import loss_fields
from sysprof.profiler_core.studies.kinds.scaling import plan_cells
from sysprof.tui.panes.configure_form import checked_config, too_big_field

ROOT = Path(__file__).resolve().parents[2]
NAN_MODEL = ROOT / "tests" / "data" / "models" / "broken_numbers" / "nan_loss.py"
RUN_DIR = ROOT / "tests" / "data" / "runs" / "tiny-ctx32"


def sysprof(*args, cwd=ROOT, timeout=120):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def strict(line: str) -> dict:
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(line, parse_constant=refuse)


def test_fsdp_or_ddp_asked_of_one_process_is_refused():
    assert "give --nproc 2 or more" in config_problems(RunConfig(model="tiny", parallel="fsdp"))["parallel"]
    assert "parallel" not in config_problems(RunConfig(model="tiny", parallel="fsdp", nproc=2, device="cpu"))
    assert "parallel" not in config_problems(RunConfig(model="tiny"))  # the default: one process, plain model


def test_the_scaling_studys_one_gpu_cell_runs_the_plain_model_whatever_the_parallel():
    cells, _ = plan_cells(RunConfig(model="tiny", parallel="fsdp"), ["tiny"], [1, 2], ["fsdp"], have=2)
    assert [(c.nproc, c.parallel) for c in cells] == [(1, "ddp"), (2, "fsdp")]
    assert all(not config_problems(c) for c in cells)


def test_a_loss_that_is_not_finite_is_null_with_its_value_in_words():
    assert strict(json.dumps(loss_fields(float("nan")))) == {"loss": None, "loss_not_finite": "nan"}
    assert loss_fields(float("-inf"))["loss_not_finite"] == "-inf"
    assert loss_fields(2.5) == {"loss": 2.5}


def test_a_not_finite_loss_is_a_warning_naming_the_first_step():
    steps = [{"kind": "warmup", "index": 0, "loss": 5.1}, {"kind": "measured", "index": 0, "loss": None,
                                                            "loss_not_finite": "nan"},
             {"kind": "measured", "index": 1, "loss": float("inf")}]  # an old steps.jsonl held the bare value
    [warning] = loss_warnings(steps)
    assert warning["code"] == "loss_not_finite" and warning["steps"] == 2
    assert warning["message"].startswith("the loss was nan in 2 of 3 steps (first: measured step 0)")
    assert loss_warnings(steps[:1]) == []


@pytest.mark.slow
def test_a_nan_model_finishes_with_the_warning_and_strict_json_files(tmp_path):
    done = sysprof("run", "--model-factory", f"{NAN_MODEL}:build", "--device", "cpu", "--ctx", "16", "--steps", "3",
                   "--warmup", "1", "--runs-dir", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    summary = strict(done.stdout)
    assert [w["code"] for w in summary["warnings"] if w["code"] == "loss_not_finite"] == ["loss_not_finite"]
    run_dir = Path(summary["run_dir"])
    steps = [strict(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == 4 and all(step["loss"] is None for step in steps)
    strict((run_dir / "summary.json").read_text())
    shown = sysprof("run", "--model-factory", f"{NAN_MODEL}:build", "--device", "cpu", "--ctx", "16", "--steps",
                    "2", "--warmup", "1", "--runs-dir", tmp_path)
    assert "warning: the loss was nan in 3 of 3 steps" in " ".join(shown.stdout.split())


def test_export_refuses_a_format_that_contradicts_the_output_suffix(tmp_path):
    done = sysprof("export", RUN_DIR, "--output", tmp_path / "x.csv", "--format", "md")
    assert done.returncode == 2 and "--format md does not match" in done.stderr and not (tmp_path / "x.csv").exists()
    agreeing = sysprof("export", RUN_DIR, "--output", tmp_path / "x.csv", "--format", "csv")
    assert agreeing.returncode == 0 and (tmp_path / "x.csv").exists()


def test_ps_says_when_its_runs_directory_is_not_one(tmp_path):
    missing = sysprof("ps", "--runs-dir", tmp_path / "nowhere")
    assert missing.returncode == 2 and missing.stderr.strip().endswith(f"no such runs directory {tmp_path}/nowhere")
    (tmp_path / "a-file").write_text("")
    a_file = sysprof("ps", "--runs-dir", tmp_path / "a-file")
    assert a_file.returncode == 2 and "is a file, not a runs directory" in a_file.stderr
    empty = sysprof("ps", cwd=tmp_path)  # ./runs not made yet: nothing has run here
    assert empty.returncode == 0 and "nothing in progress" in empty.stdout


@pytest.mark.parametrize("cfg, field", [
    (RunConfig(model="small", ctx=256, batch=4096, device="cuda"), "batch"),
    (RunConfig(model="small", ctx=1024 * 1024, batch=1, device="cuda", max_ctx=1024 * 1024), "ctx"),
    (RunConfig(model="2.7B", ctx=16, batch=1, device="cuda"), "model"),
])
def test_a_config_that_cannot_fit_marks_the_field_that_makes_it_too_big(cfg, field):
    limit = (16 * 2**30, "GPU 0's memory")
    assert fit_problem(cfg, limit)
    assert too_big_field(cfg, limit) == field


def test_an_empty_number_field_asks_for_a_value():
    _, problems = checked_config({"model": "tiny", "ctx": None}, visible_gpus=0)
    assert problems["ctx"] == "ctx needs a value"
