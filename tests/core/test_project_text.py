"""The project's text speaks of the product: what it does, what was measured, on which card and when. It names no
numbered work session or issue, no borrowed machine, no machine kind asked for and no tool the project was built
with. Every tracked text file is read (result data, binaries and test fixtures other than their READMEs left out),
and no tracked path carries a session or issue number. Product words stay free: the `session` package, a `Session`,
`session_events.jsonl`, an SSH or process session, and "issue" as a plain word."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".svg", ".log", ".txt", ".nsys-rep", ".sqlite", ".gz", ".tgz", ".pickle")
FIXTURES = "tests/data/"

# Each alternative is written so that this file's own text does not match it (no example is quoted whole).
BUILD_HISTORY = re.compile("|".join([
    r"\bsessions?[ _-]?\d+",  # a work session by its number, with or without a space, dash or underscore
    r"\bissues?[ _-]?#?\d+",  # an issue by its number
    r"\btick[e]ts?\b",
    r"\bthe[ ]lent\b",  # a machine lent to the project
    r"\blent[ ](?:machines?|gpus?|hosts?|h[12]00s?|nvidia)\b",
    r"\bnvidia-h[12]00\b",  # a machine kind by name, one GPU or several
    r"\bh[12]00-x\d+\b",
    r"\bfarm-(?:studio|bench)\b",
    r"\bdevice[ ]tool\b",
]), re.IGNORECASE)
NUMBERED_PATH = re.compile(r"session[-_]?\d+|issue[-_]?\d+", re.IGNORECASE)


def tracked_paths() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the repository's .git")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    return [path for path in listed.stdout.decode().split("\0") if path]


def checked(path: str) -> bool:
    """A tracked text file whose words are the project's own (result data and fixtures are what was recorded)."""
    if path.endswith(DATA_SUFFIXES):
        return False
    return not path.startswith(FIXTURES) or Path(path).name == "README.md"


def text_of(path: Path) -> str | None:
    """The file as text, or None for a binary one (a figure, a compressed fixture) or one gone from the tree."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_no_tracked_text_or_path_speaks_of_how_the_project_was_built():
    paths = tracked_paths()
    offending = []
    for path in filter(checked, paths):
        text = text_of(ROOT / path)
        for number, line in enumerate((text or "").splitlines(), start=1):
            for match in BUILD_HISTORY.finditer(line):
                offending.append(f"{path}:{number}: {match.group(0)!r} in {line.strip()[:160]}")
    offending += [f"{path}: a numbered session or issue in the path" for path in paths if NUMBERED_PATH.search(path)]
    assert not offending, "build history in the project's text:\n" + "\n".join(offending)
