"""A user runs sysprof from their own repository, where a file named like a standard module (json.py,
concurrent.py) is common: no process the tool starts may import it in the standard library's place. Real
processes from a directory whose json.py and concurrent.py stop any interpreter that imports them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.door.control import report_argv, study_argv
from sysprof.profiler_core.session.inspecting import inspect_argv
from sysprof.profiler_core.session.process import runner_argv, session_argv

SHADOW = 'raise SystemExit("the user\'s {name}.py was imported in place of the standard library\'s")\n'
TINY = RunConfig(model="tiny", device="cpu", ctx=16, batch=1, warmup=0, steps=1)


@pytest.fixture
def users_repository(tmp_path: Path) -> Path:
    for name in ("json", "concurrent", "queue"):
        (tmp_path / f"{name}.py").write_text(SHADOW.format(name=name))
    return tmp_path


def test_every_python_the_tool_starts_leaves_the_working_directory_off_its_module_path(tmp_path):
    run_dir = tmp_path / "run"
    argvs = [session_argv(TINY, run_dir), runner_argv(TINY, run_dir), inspect_argv(TINY, 1),
             study_argv(["sweep"], tmp_path), report_argv([run_dir], tmp_path / "r.md"),
             runner_argv(RunConfig(nproc=2, device="cpu", parallel="ddp"), run_dir)]
    pythons = [argv[argv.index(sys.executable):] for argv in argvs]
    assert all(python[1] == "-P" for python in pythons), pythons


@pytest.mark.slow
def test_a_run_from_a_directory_with_its_own_json_py_runs_as_anywhere(users_repository):
    done = subprocess.run([sys.executable, "-P", "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--device",
                           "cpu", "--ctx", "16", "--batch", "1", "--warmup", "0", "--steps", "1", "--json",
                           "--runs-dir", str(users_repository / "runs")], cwd=users_repository,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    assert json.loads(done.stdout)["status"] == "ok"


@pytest.mark.slow
def test_a_factory_module_in_the_working_directory_is_still_found(users_repository):
    (users_repository / "mymodels").mkdir()
    (users_repository / "mymodels" / "__init__.py").write_text(
        "from torch import nn\n\ndef build(vocab_size, d_model):\n"
        "    return nn.Sequential(nn.Embedding(vocab_size, d_model), nn.Linear(d_model, vocab_size))\n")
    done = subprocess.run([sys.executable, "-P", "-m", "sysprof.profiler_core", "run", "--model", "tiny",
                           "--model-factory", "mymodels:build", "--device", "cpu", "--ctx", "16", "--batch", "1",
                           "--warmup", "0", "--steps", "1", "--json", "--runs-dir", str(users_repository / "runs")],
                          cwd=users_repository, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    assert json.loads(done.stdout)["status"] == "ok"
