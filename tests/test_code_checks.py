"""ruff (pyflakes, bugbear, isort, pyupgrade, line length, complexity) and mypy (untyped definitions too) over
the project, as part of the test command, so CI runs them from the same line the README gives. Configuration:
pyproject.toml."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOT_PACKAGE, SOURCE_FOLDERS = "sysprof", ("models", "profiler_core", "trace", "tui")  # as setup.py installs them


def tool(name: str) -> str:
    """The tool beside this interpreter (the test extras install both), else on PATH."""
    found = Path(sys.executable).with_name(name)
    path = str(found) if found.exists() else shutil.which(name)
    assert path, f"{name} is not installed: pip install -e '.[test]'"
    return path


def test_ruff_is_clean():
    result = subprocess.run([tool("ruff"), "check", *SOURCE_FOLDERS, "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


@pytest.mark.slow
def test_mypy_is_clean(tmp_path):
    """mypy follows no import hook, so the editable install's `sysprof.*` names would all be Any: the check runs
    over the folders laid out as they install (links under tmp/sysprof/), every cross-package import resolved."""
    layout = tmp_path / ROOT_PACKAGE
    layout.mkdir()
    for folder in SOURCE_FOLDERS:
        (layout / folder).symlink_to(ROOT / folder, target_is_directory=True)
    checked = [arg for package in ("profiler_core", "tui") for arg in ("-p", f"{ROOT_PACKAGE}.{package}")]
    result = subprocess.run([tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), *checked], cwd=ROOT,
                            env={**os.environ, "MYPYPATH": str(tmp_path)}, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
    assert "no issues found in" in result.stdout  # the packages were found and checked, not skipped
