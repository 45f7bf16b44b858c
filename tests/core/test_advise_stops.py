"""`sysprof advise` ends where its diagnosis ends: stopped during it (SIGTERM, as a scheduler or a closed terminal
sends it), it stops with what finished kept; a config that fails in the diagnosis fails every candidate alike, so
nothing else runs and the reason is the advise's. Real processes of the tiny model on the CPU."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes: `pytest -m "not slow"` leaves them out

ADVISE = [sys.executable, "-m", "sysprof.profiler_core", "advise", "--model", "tiny", "--device", "cpu", "--ctx",
          "32", "--warmup", "1", "--repeats", "2", "--budget", "3"]


def ran_cells(runs: Path) -> list[Path]:
    """Cells whose process started (a run directory with a manifest), across the study under runs."""
    return sorted(path.parent for path in runs.glob("*/cells/*/manifest.json"))


def test_a_config_that_fails_in_the_diagnosis_ends_the_advise_with_its_reason(tmp_path):
    done = subprocess.run([*ADVISE, "--steps", "2", "--optimizer-arg", "nosuch=1", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith("sysprof: error: the diagnosis (the config as given) did not finish") and "nosuch" in said
    assert "Traceback" not in done.stderr
    assert len(ran_cells(tmp_path)) == 1  # the diagnosis only: no candidate was started


def test_sigterm_during_the_diagnosis_stops_the_advise(tmp_path):
    advise = subprocess.Popen([*ADVISE, "--steps", "400", "--runs-dir", str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("*/cells/*/steps.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.5)  # the diagnosis is measuring its steps
        assert list(tmp_path.glob("*/cells/*/steps.jsonl")), "the diagnosis never started its steps"
        os.killpg(advise.pid, signal.SIGTERM)  # what a scheduler's stop or a closed terminal sends
        _, stderr = advise.communicate(timeout=240)
    finally:
        if advise.poll() is None:
            os.killpg(advise.pid, signal.SIGKILL)
    assert advise.returncode == 130, stderr[-2000:]
    assert len(ran_cells(tmp_path)) == 1  # no candidate started after the stop
