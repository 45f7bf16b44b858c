"""Disks fill and directories refuse writes: a real ENOSPC from a tiny tmpfs, a real permission error from a
non-root user, and many writers in one runs directory at once.

A run that fills a disk stops after as many steps as the disk holds, not after a time: the disks the runs fill
hold a few dozen steps beyond the reserve, so a loaded machine takes a few seconds more, not minutes more."""
import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.config import RunConfig

TINY = ["--model", "tiny", "--ctx", "32", "--batch", "2", "--device", "cpu", "--warmup", "1"]
NOBODY = 65534
RESERVE_K = disk_space.RESERVE_BYTES // 1024
RUN_ROOM_K = 48  # beyond the reserve: the manifest, live.json and a few dozen steps and their events


def sysprof(args, env, timeout=300, user=None):
    """The CLI in a process group of its own: if it overruns, its runner goes with it, so nothing goes on writing
    on a disk the test is about to unmount."""
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user else []
    argv = [*prefix, sys.executable, "-m", "sysprof.profiler_core", *args]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


@pytest.fixture
def make_disk(tmp_path):
    """make_disk(size_k): a tmpfs of that many KiB, so ENOSPC comes from the kernel; unmounted after the test."""
    mounted = []

    def make(size_k: int) -> Path:
        disk = tmp_path / f"disk{len(mounted)}"
        disk.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_k}k", "tmpfs", str(disk)],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
        mounted.append(disk)
        return disk
    yield make
    for disk in mounted:
        subprocess.run(["umount", str(disk)], check=True)


@pytest.fixture
def tiny_disk(make_disk):
    """A 400 KiB tmpfs: room for the run's reserve and a few hundred steps."""
    return make_disk(400)


@pytest.fixture
def run_disk(make_disk):
    """Room for the reserve and a few dozen steps: a run fills it after the same steps on any machine."""
    return make_disk(RESERVE_K + RUN_ROOM_K)


@pytest.mark.slow
def test_a_run_that_fills_the_disk_is_failed_with_the_reason_and_keeps_its_steps(run_disk, cli_env):
    result = sysprof(["run", *TINY, "--steps", "100000", "--runs-dir", str(run_disk), "--json"], cli_env)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == events.FAILED_STATUS and summary["error"]["kind"] == events.DISK_FULL
    assert summary["error"]["message"].startswith("no space left on the device")
    run_dir = Path(summary["run_dir"])
    assert rundir.read_summary(run_dir) == summary  # the reserve made room for it
    lines = (run_dir / rundir.STEPS).read_text().splitlines()
    assert all(json.loads(line)["kind"] in ("warmup", "measured") for line in lines)  # no torn line left
    measured = sum(json.loads(line)["kind"] == "measured" for line in lines)
    assert measured >= 10 and summary["phases"]["step"]["n"] >= measured
    assert f"stopped after {summary['phases']['step']['n']} of 100000 measured steps" in summary["error"]["message"]
    assert not (run_dir / disk_space.RESERVE).exists() and not (run_dir / rundir.LIVE).exists()


def test_an_unwritable_runs_directory_is_one_line_for_a_non_root_user(tmp_path, cli_env):
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to run as another user")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    tmp_path.chmod(0o755)
    env = dict(cli_env, HOME=str(tmp_path))
    for command in (["run", *TINY, "--steps", "1"], ["sweep", *TINY, "--steps", "1", "--ctx", "16,32"]):
        result = sysprof([*command, "--runs-dir", str(locked / "runs")], env, user=NOBODY)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == f"sysprof: error: cannot create a directory under {locked / 'runs'}: " \
                                        "Permission denied"
    assert list(locked.iterdir()) == []


def make_dirs(root: str) -> list[str]:
    cfg = RunConfig(model="tiny", device="cpu")
    return [str(rundir.new_run_dir(Path(root), cfg)) for _ in range(25)]


def test_many_writers_in_one_runs_directory_never_share_a_directory(tmp_path):
    with ProcessPoolExecutor(4) as pool:
        made = [path for paths in pool.map(make_dirs, [str(tmp_path)] * 4) for path in paths]
    assert len(made) == 100 and len(set(made)) == 100
    assert sorted(made) == sorted(str(path) for path in tmp_path.iterdir())


def test_a_cut_write_is_taken_back_so_the_lines_before_stay_whole(tiny_disk):
    path = tiny_disk / rundir.STEPS
    filler = tiny_disk / "filler"
    filler.write_bytes(bytes(400 * 1024 - 8192))  # leave a little room: two lines fit, the third is cut
    record = {"kind": "measured", "pad": "x" * 3000}
    written = 0
    with pytest.raises(OSError) as raised:
        for _ in range(100):
            rundir.append_jsonl(path, record)
            written += 1
    assert disk_space.is_disk_full(raised.value) and written >= 1
    assert len(rundir.read_jsonl(path)) == written and path.read_bytes().endswith(b"}\n")


def test_the_reserve_gives_a_summary_room_on_a_full_disk(tiny_disk):
    disk_space.reserve_space(tiny_disk)
    assert (tiny_disk / disk_space.RESERVE).stat().st_size == disk_space.RESERVE_BYTES
    filler = tiny_disk / "filler"
    with pytest.raises(OSError), filler.open("wb") as handle:
        handle.write(bytes(400 * 1024))
    rundir.write_json(tiny_disk / rundir.SUMMARY, {"status": "failed", "pad": "x" * 20000})
    assert rundir.read_json(tiny_disk / rundir.SUMMARY)["status"] == "failed"
    assert not (tiny_disk / disk_space.RESERVE).exists() and not (tiny_disk / "summary.json.tmp").exists()
    with pytest.raises(OSError):  # no reserve left: a full disk is an error again
        rundir.write_json(tiny_disk / "other.json", {"pad": "x" * 400 * 1024})


SMALLER_THAN_THE_RESERVE_K = RESERVE_K * 3 // 8  # 96 KiB: the reserve cannot be made in full


def fill(disk: Path) -> None:
    with pytest.raises(OSError) as raised, (disk / "filler").open("wb") as handle:
        handle.write(bytes(shutil.disk_usage(disk).free + 4096))
    assert disk_space.is_disk_full(raised.value)


def test_a_disk_smaller_than_the_reserve_still_gets_a_reserve_and_the_summary(make_disk):
    disk = make_disk(SMALLER_THAN_THE_RESERVE_K)
    disk_space.reserve_space(disk)
    assert 0 < (disk / disk_space.RESERVE).stat().st_size < disk_space.RESERVE_BYTES
    fill(disk)
    rundir.write_json(disk / rundir.SUMMARY, {"status": "failed", "pad": "x" * 20000})
    assert rundir.read_json(disk / rundir.SUMMARY)["status"] == "failed"
    assert not (disk / disk_space.RESERVE).exists()


@pytest.mark.slow
def test_a_run_on_a_disk_smaller_than_the_reserve_ends_with_its_summary(make_disk, cli_env):
    disk = make_disk(SMALLER_THAN_THE_RESERVE_K)
    result = sysprof(["run", *TINY, "--steps", "100000", "--runs-dir", str(disk), "--json"], cli_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    summary = json.loads(result.stdout)
    assert summary["error"]["kind"] == events.DISK_FULL and summary["phases"]["step"]["n"] >= 1
    run_dir = Path(summary["run_dir"])
    assert rundir.read_summary(run_dir) == summary  # `sysprof ps`, export and the app read it
    assert not (run_dir / disk_space.RESERVE).exists()


@pytest.mark.slow
def test_a_sweep_stops_at_the_cell_that_filled_the_disk_and_says_how_to_go_on(run_disk, cli_env):
    result = sysprof(["sweep", *TINY, "--steps", "100000", "--ctx", "16,32", "--runs-dir", str(run_disk)], cli_env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "the disk filled up: the sweep stopped" in result.stderr and "--resume" in result.stderr
    sweep_dir = next(run_disk.iterdir())
    cells = sorted((sweep_dir / rundir.SWEEP_CELLS_DIR).iterdir())
    assert rundir.read_summary(cells[0])["error"]["kind"] == events.DISK_FULL
    assert all(rundir.read_summary(cell) is None for cell in cells[1:])  # not run into a full disk


@pytest.mark.slow
def test_a_report_or_export_on_a_full_disk_leaves_no_cut_file_and_an_old_one_whole(make_disk, cli_env):
    """The report's text is written whole or not at all: a full disk leaves the previous report as it was."""
    disk = make_disk(64)
    run = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"
    (disk / "report.md").write_text("the report of yesterday\n")
    with (disk / "filler").open("wb", buffering=0) as filler, pytest.raises(OSError):  # full to its last page
        while True:
            filler.write(b"\0" * 4096)
    for args in (["report", str(run), "-o", str(disk / "report.md"), "--tables-only"],
                 ["export", str(run), "--table", "steps", "--output", str(disk / "report.md")]):
        done = sysprof(args, cli_env)
        assert done.returncode != 0 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert (disk / "report.md").read_text() == "the report of yesterday\n"
        assert sorted(path.name for path in disk.iterdir()) == ["filler", "report.md"]
