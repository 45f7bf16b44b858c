"""ruff (pyflakes, bugbear, isort, pyupgrade) and mypy over the project, as part of the test command, so CI
runs them from the same line the README gives. Configuration: pyproject.toml."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    """The tool beside this interpreter (the test extras install both), else on PATH."""
    found = Path(sys.executable).with_name(name)
    path = str(found) if found.exists() else shutil.which(name)
    assert path, f"{name} is not installed: pip install -e '.[test]'"
    return path


def test_ruff_is_clean():
    result = subprocess.run([tool("ruff"), "check", "profiler_core", "tui", "models", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_mypy_is_clean():
    result = subprocess.run([tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
