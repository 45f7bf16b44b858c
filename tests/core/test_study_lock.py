"""One process at a time runs a study directory: a second `sweep --resume` (or `advise --resume`) while the first
runs is refused at once with who holds it, and runs nothing; once the first has ended, the directory is free again.
Real processes of the tiny model on the CPU."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sysprof.profiler_core.studies.lock import study_lock

CLI = [sys.executable, "-m", "sysprof.profiler_core"]


def test_the_same_process_takes_the_lock_again_and_another_holder_is_named(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps({"study": "sweep", "varied": [], "cells": []}))
    with study_lock(tmp_path), study_lock(tmp_path):  # an advise's stages each run cells
        holder = subprocess.run([sys.executable, "-c", "from pathlib import Path; import sys; "
                                 "from sysprof.profiler_core.studies.lock import study_lock\n"
                                 f"with study_lock(Path({str(tmp_path)!r})): pass"],
                                capture_output=True, text=True, timeout=120)
        assert holder.returncode != 0 and f"process {os.getpid()} on" in holder.stderr
    with study_lock(tmp_path):  # released with the last hold
        pass


@pytest.mark.slow
def test_a_second_resume_while_the_sweep_runs_is_refused_and_runs_nothing(tmp_path):
    first = subprocess.Popen([*CLI, "sweep", "--model", "tiny", "--device", "cpu", "--ctx", "16,32", "--batch", "1",
                              "--warmup", "0", "--steps", "3000", "--runs-dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("*/cells/*/steps.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.5)
        sweep_dir = next(tmp_path.glob("*-sweep-*"))
        cells_before = sorted(p.name for p in (sweep_dir / "cells").iterdir())
        second = subprocess.run([*CLI, "sweep", "--resume", str(sweep_dir)], capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 2, second.stderr[-1500:]
        said = second.stderr.strip().splitlines()[-1]
        assert "is being run by process" in said and "Traceback" not in second.stderr
        assert sorted(p.name for p in (sweep_dir / "cells").iterdir()) == cells_before
    finally:
        os.killpg(first.pid, signal.SIGINT)
        first.wait(timeout=120)
    written = list((sweep_dir / "cells").glob("*/steps.jsonl"))
    for steps in written:  # one writer: a cell's step indices never repeat
        indices = [json.loads(line)["index"] for line in steps.read_text().splitlines()]
        assert len(indices) == len(set(indices)), steps


def test_a_directory_that_holds_no_study_gets_no_lock_file(tmp_path):
    """`advise --resume RUN_DIR` (a run, not a study) is refused before anything is written into it."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from sysprof.profiler_core.cli import main as cli

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "runs" / "tiny-ctx32", run)
    before = sorted(path.name for path in run.iterdir())
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert cli.main(["advise", "--resume", str(run)]) != 0
    assert sorted(path.name for path in run.iterdir()) == before and len(err.getvalue().splitlines()) == 1
