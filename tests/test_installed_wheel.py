"""The tool as a user installs it: a real wheel, installed non-editable into a fresh environment, run from a
project directory whose own `models/`, `tui/` and `profiler_core/` packages would shadow generic top-level names.

The editable install of the README hides such collisions (the repository's folders are what get imported), so
this is the only test that sees what `pip install sysprof-tui` gives. The fresh environment borrows torch and the
other dependencies from this one through a path entry (a plain path in a .pth file: the editable install's own
finder in that directory is never run), so only the wheel provides the tool.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "models", "profiler_core", "trace", "tui")
TINY_RUN = ["--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1", "--steps", "2", "--json"]

# A user's repository, laid out as ML repositories often are: its own models/ package (whose gpt.py imports a
# sibling through the package name), and packages named like the tool's other folders.
USER_FILES = {
    "models/__init__.py": '"""The user\'s own models package."""\n',
    "models/blocks.py": """
        from torch import nn

        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

            def forward(self, x):
                return x + self.mlp(x)
        """,
    "models/gpt.py": """
        from torch import nn

        from models.blocks import Block  # the user's package, not the tool's

        class TinyGPT(nn.Module):
            def __init__(self, vocab_size, n_embd):
                super().__init__()
                self.embed, self.block = nn.Embedding(vocab_size, n_embd), Block(n_embd)
                self.head = nn.Linear(n_embd, vocab_size)

            def forward(self, idx):
                return self.head(self.block(self.embed(idx)))  # (B, T, vocab)

        def build(vocab_size, n_embd):
            return TinyGPT(vocab_size, n_embd)
        """,
    "tui/__init__.py": '"""The user\'s own tui package."""\nAPP = "theirs"\n',
    "profiler_core/__init__.py": '"""The user\'s own profiler_core package."""\n',
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh environment holding the tool as a wheel (non-editable); its bin folder."""
    work = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(work)
    env_dir = work / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=users_env()).stdout.strip()
    (Path(site) / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300, env=users_env())
    return env_dir / "bin"


def build_wheel(work: Path) -> Path:
    """A wheel built from a copy of the sources, so no build/ folder of an earlier build leaks stale files."""
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=300, env=users_env())
    return next(out.glob("*.whl"))


@pytest.fixture
def user_repo(tmp_path) -> Path:
    for relative, text in USER_FILES.items():
        path = tmp_path / "repo" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "repo"


def run_in(repo: Path, command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=repo, env=users_env(), capture_output=True, text=True, timeout=300)


def users_env() -> dict[str, str]:
    """A user's environment: not the suite's path to the repository (pip would take its egg-info for the tool
    installed) nor its runs folder."""
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "SYSPROF_RUNS")}


def test_the_wheel_installs_the_tool_under_one_root_and_nothing_editable(installed):
    found = run_in(installed, [str(installed / "python"), "-c",
                               "import sysprof.profiler_core as p, sysprof.tui.app, sysprof.models; print(p.__file__)"])
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(installed.parent)  # the wheel's copy, not the repository's
    assert not Path(found.stdout.strip()).is_relative_to(ROOT)


@pytest.mark.parametrize("launcher", ["sysprof", "python -m"])
def test_a_run_and_an_analysis_from_a_repository_with_packages_named_like_ours(installed, user_repo, launcher,
                                                                               shared_fixtures):
    cli = [str(installed / "sysprof")] if launcher == "sysprof" else [str(installed / "python"), "-m",
                                                                      "sysprof.profiler_core"]
    ran = run_in(user_repo, [*cli, "run", "--model", "tiny", *TINY_RUN, "--runs-dir", "runs"])
    assert ran.returncode == 0, ran.stderr[-2000:]
    summary = json.loads(ran.stdout)
    assert summary["status"] == "ok" and summary["phases"]["step"]["n"] == 2
    # a CPU run has no kernels to analyze: the real nsys stats of an H200 run are read instead
    analyzed = run_in(user_repo, [*cli, "analyze", str(shared_fixtures / "h200_small_fp32"), "--json"])
    assert analyzed.returncode == 0, analyzed.stderr[-2000:]
    assert json.loads(analyzed.stdout)["phases"]["forward"]["kernels"] > 0


def test_a_factory_in_the_users_own_models_package_is_profiled(installed, user_repo):
    ran = run_in(user_repo, [str(installed / "sysprof"), "run", "--model", "tiny", "--model-factory",
                             "models.gpt:build", *TINY_RUN, "--runs-dir", "runs"])
    assert ran.returncode == 0, ran.stderr[-2000:]
    summary = json.loads(ran.stdout)
    manifest = json.loads((user_repo / summary["run_dir"] / "manifest.json").read_text())
    assert summary["status"] == "ok" and manifest["model"]["class"] == "TinyGPT"
    assert Path(manifest["model"]["file"]) == (user_repo / "models" / "gpt.py").resolve()
