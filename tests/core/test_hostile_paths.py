"""Paths the system refuses (a 300-byte name, a loop of links) are one line from every entry point, found before
any work starts; and `sysprof ps` writes only under its runs root, never through a link out of it."""
from __future__ import annotations

import io
import json
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.session.live import Heartbeat

LONG = "x" * 300  # more than the 255 bytes a file name may have
RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "tiny-ctx32"


def sysprof(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, err.getvalue()


@pytest.mark.parametrize("argv", [["report", "{long}"], ["export", "{long}"], ["analyze", "{long}"],
                                  ["compare", "{long}", "{long}"], ["ps", "--runs-dir", "{long}"],
                                  ["sweep", "--resume", "{long}"], ["advise", "--resume", "{long}"],
                                  ["run", "--device", "cpu", "--model-factory", "{long}.py:build"]])
def test_a_name_too_long_is_one_line_from_every_entry_point(tmp_path, argv):
    code, err = sysprof(*(word.format(long=tmp_path / LONG) for word in argv))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_an_output_name_too_long_is_refused_before_the_sweep_runs(tmp_path):
    code, err = sysprof("sweep", "--model", "tiny", "--device", "cpu", "--ctx", "32,64", "--runs-dir",
                        str(tmp_path / "runs"), "--output", str(tmp_path / f"{LONG}.csv"))
    assert code != 0 and "its name is 304 bytes, more than the 255 a file name may have" in err
    assert not (tmp_path / "runs").exists()


def test_compare_of_a_loop_of_links_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, err = sysprof("compare", str(tmp_path / "a"), str(RUN))
    assert code != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_ps_settles_a_dead_run_under_its_root_but_not_one_linked_from_elsewhere(tmp_path):
    import subprocess
    import sys

    elsewhere, root = tmp_path / "someone-elses", tmp_path / "runs"
    root.mkdir()
    for parent in (elsewhere, root):
        shutil.copytree(RUN, parent / "run")
        (parent / "run" / rundir.SUMMARY).unlink()
        Heartbeat(parent / "run", "run").start().stopped.set()
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        record = json.loads((parent / "run" / rundir.LIVE).read_text())
        rundir.write_json(parent / "run" / rundir.LIVE, record | {"pid": gone.pid})
    (root / "linked").symlink_to(elsewhere / "run")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert cli.main(["ps", "--runs-dir", str(root), "--json"]) == 0
    died = json.loads(out.getvalue())["died"]
    assert (root / "run" / rundir.SUMMARY).is_file() and not (root / "run" / rundir.LIVE).exists()
    assert not (elsewhere / "run" / rundir.SUMMARY).exists() and (elsewhere / "run" / rundir.LIVE).exists()
    assert any("left as it is (a link to" in line for line in died) and os.path.islink(root / "linked")
