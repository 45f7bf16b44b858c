"""sweep and study check every cell as `run` checks one config, before the first cell starts: user code that is
not there, a value that cannot be, a cell that cannot fit. And a cell that fails says why in its own line."""
from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.kinds import precision as precision_study
from sysprof.profiler_core.studies.kinds.attention import cells as attention

GPT = Path(__file__).resolve().parents[1] / "data" / "models" / "nanogpt_style" / "gpt.py"


class WorkStarted(Exception):
    pass


def started(*args, **kwargs):
    raise WorkStarted


@pytest.fixture
def no_work(tmp_path, monkeypatch):
    """Reaching the work fails the test: every refusal below must come first. Runs go to tmp_path/runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYSPROF_RUNS", str(tmp_path / "runs"))
    for module, name in ((cli, "execute_run"), (sweep, "run"), (attention, "run_study"),
                         (precision_study, "_precision_lab")):
        monkeypatch.setattr(module, name, started)
    return tmp_path


def refused(argv: list[str]) -> str:
    """The one-line error of a command that must exit 2; asserts it wrote no directory."""
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(argv)
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1, err.getvalue()
    assert not Path("runs").exists() or not any(Path("runs").iterdir())
    return lines[0]


@pytest.mark.parametrize("options, reason", [
    (["--model-factory", "missing.py:build"], "--model-factory: no such file missing.py"),
    (["--model-factory", "no_such_package.models:build"], "no module named 'no_such_package'"),
    (["--loss", "no_such_losses:cross_entropy"], "--loss: no module named 'no_such_losses'"),
    (["--optimizer", "nope.Class"], "--optimizer: no module named 'nope'"),
    (["--optimizer", "AdamW"], "--optimizer takes package.module.Class"),
])
@pytest.mark.parametrize("command", [["run"], ["sweep"], ["study", "passes"]])
def test_user_code_that_is_not_there_is_refused_before_anything_runs(no_work, command, options, reason):
    line = refused([*command, "--model", "tiny", "--device", "cpu", *options])
    assert reason in line


def test_a_module_in_the_working_directory_is_found_as_the_runner_finds_it(tmp_path, monkeypatch):
    (tmp_path / "my_losses.py").write_text("def loss(logits, targets):\n    raise AssertionError('never imported')\n")
    monkeypatch.chdir(tmp_path)
    assert "loss" not in config_problems(RunConfig(model="tiny", loss="my_losses:loss"))
    assert "loss" in config_problems(RunConfig(model="tiny", loss="their_losses:loss"))
    assert "my_losses" not in sys.modules  # located, not imported: the launcher never runs user code


def test_a_model_argument_without_a_value_is_refused(no_work):
    line = refused(["sweep", "--model-factory", f"{GPT}:build", "--model-arg", "n_layer=", "--device", "cpu"])
    assert "--model-arg takes NAME=VALUE; got 'n_layer='" in line


def test_a_sweep_cell_that_cannot_fit_is_refused_unless_forced(no_work):
    line = refused(["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "32,100000000"])
    assert "ctx=100000000" in line and "cannot fit" in line and "--force" in line
    with pytest.raises(WorkStarted), redirect_stderr(io.StringIO()):
        cli.main(["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "32,100000000", "--force"])


def test_a_study_cell_that_cannot_fit_is_refused(no_work):
    line = refused(["study", "passes", "--model", "tiny", "--device", "cpu", "--ctxs", "64,99999999"])
    assert "ctx=99999999" in line and "cannot fit" in line


@pytest.mark.parametrize("argv, reason", [
    (["study", "attention", "--device", "cpu", "--d", "0"], "--d takes comma-separated positive integers"),
    (["study", "attention", "--device", "cpu", "--seq", "128,0"], "--seq takes comma-separated positive integers"),
    (["study", "attention", "--device", "cpu", "--seq", "100000000"], "eager fp32 d=16 seq=100000000 at batch 8 "
                                                                      "needs at least"),
    (["study", "attention", "--device", "cpu", "--seq", ""], "--seq is empty: give it a value or leave it out"),
    (["study", "attention", "--device", "cpu", "--impl", ""], "--impl is empty"),
    (["study", "passes", "--model", "tiny", "--device", "cpu", "--models", ""], "--models is empty"),
    (["study", "passes", "--model", "tiny", "--device", "cpu", "--ctxs", ""], "--ctxs is empty"),
])
def test_study_values_that_cannot_be_are_refused(no_work, argv, reason):
    assert reason in refused(argv)


def test_sdpa_is_not_refused_for_a_score_matrix_it_never_holds():
    cell = {"impl": "sdpa", "dtype": "fp32", "d": 64, "seq": 65536}
    eager = dict(cell, impl="eager")
    limit = (80 * 2**30, "GPU 0's memory")
    assert attention.fit_problem([[cell]], 8, limit) is None  # 537 MB of Q, K, V and output
    assert "needs at least 128.50 GiB" in attention.fit_problem([[eager]], 8, limit)  # 8 × 65536² × 4 B + Q, K, V, O


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a host without CUDA")
def test_the_precision_study_on_a_missing_gpu_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = refused(["study", "precision", "--model", "tiny", "--device", "cuda", "--runs-dir", str(tmp_path / "r")])
    assert "device cuda requested but no CUDA GPU is visible" in line


@pytest.mark.slow
def test_a_failed_cell_prints_its_reason_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err, out = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["sweep", "--model-factory", f"{GPT}:broken", "--device", "cpu", "--ctx", "16",
                         "--steps", "2", "--warmup", "1", "--runs-dir", str(tmp_path / "runs")])
    assert code == 1
    reason = "error in forward: ValueError: shapes do not line up in Broken.forward"
    assert f": failed: {reason}" in err.getvalue()
    sweep_dir = next((tmp_path / "runs").iterdir())
    lines = (sweep_dir / rundir.SESSION_EVENTS).read_text().splitlines()
    done = [json.loads(line) for line in lines if '"cell_done"' in line]
    assert done[0]["status"] == "failed" and done[0]["reason"] == reason  # the app's Studies screen shows it


def test_a_loss_module_beside_the_factory_file_is_found_as_the_runner_finds_it(tmp_path, monkeypatch):
    (tmp_path / "mdl").mkdir()
    (tmp_path / "mdl" / "gpt.py").write_text("def build(vocab_size):\n    raise AssertionError('never run')\n")
    (tmp_path / "mdl" / "mylosses.py").write_text("def ce(logits, targets):\n    raise AssertionError('never run')\n")
    monkeypatch.chdir(tmp_path)
    cfg = RunConfig(model="tiny", model_factory="mdl/gpt.py:build", loss="mylosses:ce")
    assert config_problems(cfg) == {}
    assert "no module named 'mylosses'" in config_problems(RunConfig(model="tiny", loss="mylosses:ce"))["loss"]


def test_a_sweep_directory_opens_where_its_user_code_is_not_and_resumes_only_where_it_is(tmp_path, monkeypatch):
    from sysprof.profiler_core.studies.document import Study

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "mdl").mkdir(parents=True)
    elsewhere.mkdir()
    (project / "mdl" / "gpt.py").write_text("def build(vocab_size):\n    raise AssertionError('never run')\n")
    monkeypatch.chdir(project)
    configs = [RunConfig(model="tiny", model_factory="mdl/gpt.py:build", ctx=ctx, device="cpu") for ctx in (16, 32)]
    sweep_dir = sweep.create(tmp_path / "runs", "grid", configs, ["ctx"])
    monkeypatch.chdir(elsewhere)  # or another machine: the directory must still open, offline
    assert [cell.config.ctx for cell in Study.load(sweep_dir).cells] == [16, 32]
    monkeypatch.setattr(sweep, "run", started)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(["sweep", "--resume", str(sweep_dir)])
    assert code == 2 and "--model-factory: no such file mdl/gpt.py" in err.getvalue()
