"""The benchmarks stay light: what git tracks under benchmarks/ (scripts, READMEs, summaries and one packed
`results.tar.xz` of raw output per topic) weighs at most 1 MB, and each archive opens and holds files."""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT_BYTES = 1_000_000


def tracked(under: str) -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the repository's .git")
    listed = subprocess.run(["git", "ls-files", "-z", under], cwd=ROOT, capture_output=True, check=True, timeout=60)
    return [path for path in listed.stdout.decode().split("\0") if path]


def test_what_git_tracks_under_benchmarks_weighs_at_most_1_mb():
    sizes = {path: os.path.getsize(ROOT / path) for path in tracked("benchmarks") if (ROOT / path).is_file()}
    heaviest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert sum(sizes.values()) <= LIMIT_BYTES, f"{sum(sizes.values()):,} bytes; heaviest: {heaviest}"


def test_each_results_archive_opens_and_lists_its_files():
    archives = [path for path in tracked("benchmarks") if path.endswith("/results.tar.xz")]
    assert archives
    for path in archives:
        with tarfile.open(ROOT / path, "r:xz") as archive:
            members = [member for member in archive.getmembers() if member.isfile()]
        assert members, path
        assert not [m.name for m in members if m.name.startswith(("/", "..")) or "/../" in m.name], path
