"""A real `sysprof trace --profile-steps 8-11` run (tests/data/trace/profiled-h100: plain_train.py on an H100, its
report and databases left out) read by every command that reads a `sysprof run`'s profiled pass: its kernel tables
per phase with launch-bound verdicts, the steps captured and what the capture cost them."""
from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "data" / "trace" / "profiled-h100"


def sysprof(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_profiled_steps_kernel_tables_export_per_phase_with_their_verdicts():
    rows = {row["phase"]: row for row in csv.DictReader(io.StringIO(
        sysprof("export", str(RUN), "--table", "phase kernels", "--format", "csv")))}
    assert list(rows) == ["forward", "backward", "optimizer", "other", "step"]
    assert all(rows[phase]["bound"] == "launch" for phase in ("forward", "backward", "optimizer"))


def test_the_report_says_which_steps_were_captured_and_shows_their_kernels(tmp_path):
    sysprof("report", str(RUN), "--output", str(tmp_path / "report.md"))
    text = (tmp_path / "report.md").read_text()
    assert "steps 8-11 profiled" in text and "**phase kernels**" in text and "multi_tensor_apply_kernel" in text
