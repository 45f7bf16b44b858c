"""Shared test setup for every folder under tests/: GPU marker, real fixtures from ../shared, snapshots under
top-level snapshots/<test module stem>/.

Layout: tests/ mirrors the packages (core/, kernels/, memory/, studies/, tui/, e2e/). There are no __init__.py
files: pytest's default "prepend" import mode puts each test's folder on sys.path and names the module by its
file name, so every test module (and helper module, e.g. tui/tui_helpers.py) needs a base name unique across
tests/. Fixtures shared by one folder live in that folder's conftest.py."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Textual renders monochrome when NO_COLOR is set at all, which would change every snapshot.
os.environ.pop("NO_COLOR", None)
# One compute thread per process (this one and every runner it starts): the tests run side by side (pytest -n) and
# start processes of their own, and torch's default of a thread per core would have them spin against each other.
# The tests check what is computed and recorded, never how fast; a thread count given outside is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    import pytest_textual_snapshot  # noqa: E402  (after NO_COLOR is cleared)
except ImportError:  # the GPU machine runs `-m gpu` without the snapshot plugin
    pytest_textual_snapshot = None

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
TEST_DATA = ROOT / "tests" / "data"

# This folder is on sys.path (see above), so tests/tui would be taken for a namespace package `tui` whenever the
# checkout is not on sys.path too (plain `pytest` rather than `python -m pytest`): the real `tui` package, a
# regular package, wins once its parent is there.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))


if pytest_textual_snapshot is not None:

    class ProjectSnapshotExtension(pytest_textual_snapshot.SVGImageExtension):
        """Keep snapshot SVGs in the top-level snapshots/<test module>/ folder."""

        @classmethod
        def dirname(cls, *, test_location) -> str:
            return str(ROOT / "snapshots" / Path(test_location.filepath).stem)

    pytest_textual_snapshot.SVGImageExtension = ProjectSnapshotExtension


def pytest_configure(config) -> None:
    """The sources byte-compiled once, before any test: the suite starts hundreds of processes (runners, sessions,
    CLI commands) that import them, and where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE)
    each of them would compile every module it imports again (about 0.25 s of CPU for the CLI). Only the controller
    compiles (xdist workers start after it); an out-of-date file is compiled afresh by Python itself. Every process
    (controller and workers) first puts the project on the path its tests' processes inherit."""
    project_on_the_path()
    if hasattr(config, "workerinput"):
        return
    import compileall

    for folder in ("models", "profiler_core", "trace", "tui"):
        compileall.compile_dir(str(ROOT / folder), quiet=1, workers=0)


def project_on_the_path() -> None:
    """Every process a test starts has the project on PYTHONPATH (ahead of what the host put there): one environment
    for all of them, so the processes that import torch share one warm-start server, which serves one environment."""
    host = os.environ.get("PYTHONPATH", "")
    if host.split(os.pathsep)[0] != str(ROOT):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), host)))


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items) -> None:
    items.sort(key=_longest_first)
    if cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run them on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: a worker per core and one more. Many tests wait (on a terminal's screen, on an advisor's budget, on
    processes they started) more than they compute; the extra worker runs another test on the core they leave."""
    return (os.cpu_count() or 1) + 1


def _longest_first(item) -> int:
    """The end-to-end tests, then the other slow ones, then the rest (each group in file order): run side by side
    (pytest -n), the longest start first and the short ones fill the gaps, so no long test starts last."""
    if "e2e" in item.path.parts:
        return 0
    return 1 if "slow" in item.keywords else 2


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    return SHARED_FIXTURES


@pytest.fixture
def cli_env(tmp_path) -> dict:
    """Environment for CLI subprocesses: runs under tmp_path (the project is on the path for every test)."""
    env = dict(os.environ, SYSPROF_RUNS=str(tmp_path / "runs"))
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture(scope="session")
def factory_run(tmp_path_factory) -> Path:
    """A real CPU run of the worked example's GPT-2-style model (tests/data/models), made once per session."""
    import json
    import subprocess

    runs = tmp_path_factory.mktemp("factory-runs")
    gpt = TEST_DATA / "models" / "nanogpt_style" / "gpt.py"
    options = ["--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1", "--steps", "3",
               "--model-factory", f"{gpt}:build", "--model-arg", "n_layer=1"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *options, "--runs-dir", str(runs),
                             "--json"],
                            env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return Path(json.loads(result.stdout)["run_dir"])


@pytest.fixture(autouse=True, scope="session")
def _stop_signals_not_ignored():
    """A suite started in the background (`cmd &` ignores SIGINT) or under nohup (SIGHUP) would pass the ignore on to
    every process a test starts: a run would then outlive the Ctrl-C or hang-up its test sends, and the CLI would
    take itself for `nohup`. Tests start from what a terminal gives a command."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    yield


@pytest.fixture(autouse=True)
def _restore_stop_signals(_stop_signals_not_ignored):
    """A runner executed in-process ignores SIGINT, SIGTERM and SIGHUP once it writes its summary; without this,
    later tests' child processes would inherit the ignored signals and outlive a cancel (as the app's quit test once
    showed), and a CLI started with SIGHUP ignored takes itself for `nohup` and runs on after a hang-up."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


SAVED = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True, scope="session")
def _saved_data_left_as_it_was():
    """No test may leave a run or study folder among the saved ones (a fuzzed --runs-dir once pointed there, and
    three empty study folders were committed as test data)."""
    folders = ("runs", "studies", "rank_runs")
    before = {name: set((SAVED / name).iterdir()) for name in folders}
    yield
    added = sorted(str(path) for name in folders for path in set((SAVED / name).iterdir()) - before[name])
    assert not added, f"tests left folders among the saved data: {added}"
