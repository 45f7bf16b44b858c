"""Runs that outlive their viewer: the event file, the heartbeat, `sysprof ps` and `sysprof attach`, with real
tiny CPU sessions (real subprocesses, real torch) killed the ways a dropped connection or a reboot kills them."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.documents.liveness import STALE_S, in_progress, live_process
from sysprof.profiler_core.session.live import EventFollower, EventLog, Heartbeat, settle_died
from sysprof.profiler_core.session.process import session_argv, signal_group

TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=1, device="cpu")


def start_session(runs: Path, steps: int, **popen) -> tuple[subprocess.Popen, Path]:
    """A real session, started as the app starts it: its own process group."""
    cfg = RunConfig.from_dict({**TINY.to_dict(), "steps": steps})
    run_dir = rundir.new_run_dir(runs, cfg)
    process = subprocess.Popen(session_argv(cfg, run_dir), start_new_session=True, **popen)
    return process, run_dir


def measured_steps(run_dir: Path) -> int:
    return sum(1 for step in rundir.read_steps(run_dir) if step.get("kind") == "measured")


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def sysprof(args, env, timeout=180):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_a_session_whose_reader_went_away_finishes_and_its_file_has_every_event(tmp_path):
    process, run_dir = start_session(tmp_path, steps=40, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    first = process.stdout.readline()  # one event through the pipe, then the reader vanishes (a dropped SSH)
    assert json.loads(first)["event"] in events.RUN_EVENTS
    process.stdout.close()
    assert process.wait(timeout=180) == 0
    assert rundir.read_summary(run_dir)["status"] == "ok" and measured_steps(run_dir) == 40
    written = events.decode_lines((run_dir / rundir.SESSION_EVENTS).read_text())
    assert sum(event["event"] == events.STEP for event in written) == 40
    assert written[-1]["event"] == events.FINISHED
    assert not (run_dir / rundir.LIVE).exists()  # an ended run is not listed as in progress


def test_event_log_survives_a_closed_pipe_in_a_process_of_its_own(tmp_path):
    code = ("import sys; from pathlib import Path; from sysprof.profiler_core.session.live import EventLog\n"
            "log = EventLog(Path(sys.argv[1]))\n"
            "for i in range(2000): log({'event': 'notice', 'message': 'x' * 100, 'i': i})\n")
    process = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # 2000 lines of 130 bytes overflow the pipe's buffer: writes after this fail
    assert process.wait(timeout=60) == 0, process.stderr.read()
    assert process.stderr.read() == b""  # no BrokenPipeError, not even at exit's flush
    assert len((tmp_path / rundir.SESSION_EVENTS).read_text().splitlines()) == 2000


def test_heartbeat_marks_the_directory_while_it_runs_and_is_gone_after(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    heartbeat = Heartbeat(run_dir, "run", {"steps": 5}).start()
    live = live_process(run_dir)
    assert live is not None and live.alive and live.pid == os.getpid() and live.config == {"steps": 5}
    assert [found.directory for found in in_progress(tmp_path)] == [run_dir]
    heartbeat.stop()
    assert live_process(run_dir) is None and in_progress(tmp_path) == []


def test_a_gone_pid_or_a_stopped_heartbeat_is_not_alive(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    Heartbeat(tmp_path, "run").start().stopped.set()  # written, never touched again
    record = json.loads((tmp_path / rundir.LIVE).read_text())
    rundir.write_json(tmp_path / rundir.LIVE, {**record, "pid": gone.pid})
    dead = live_process(tmp_path)
    assert dead is not None and not dead.alive  # the pid is gone though the heartbeat is fresh
    rundir.write_json(tmp_path / rundir.LIVE, record)  # this very process: alive by its pid
    assert live_process(tmp_path).alive
    old = time.time() - STALE_S - 1
    os.utime(tmp_path / rundir.LIVE, (old, old))
    stale = live_process(tmp_path)
    assert stale is not None and not stale.alive and stale.heartbeat_age_s > STALE_S


def test_a_torn_or_foreign_live_file_is_not_a_process(tmp_path):
    (tmp_path / rundir.LIVE).write_text('{"pid": 12')
    assert live_process(tmp_path) is None
    (tmp_path / rundir.LIVE).write_text('{"pid": "me"}')
    assert live_process(tmp_path) is None


def test_event_follower_waits_for_a_line_to_end_and_skips_what_is_not_an_event(tmp_path):
    path = tmp_path / rundir.SESSION_EVENTS
    follower = EventFollower(path, events.RUN_EVENTS)
    assert follower.read_new() == []  # no file yet
    log = EventLog(tmp_path, to_stdout=False)
    log({"event": "stage", "name": "warmup"})
    with path.open("a") as handle:
        handle.write('{"event": "step", "ind')
    assert [event["event"] for event in follower.read_new()] == ["stage"]
    with path.open("a") as handle:
        handle.write('ex": 0}\nnot json\n{"event": "cell"}\n')
    assert follower.read_new() == [{"event": "step", "index": 0}]  # the study event is not a run's
    log.close()


@pytest.mark.slow
def test_a_run_killed_with_its_whole_group_shows_as_died_at_its_step(tmp_path, cli_env):
    runs = tmp_path / "runs"
    runs.mkdir()
    process, run_dir = start_session(runs, steps=5000, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: measured_steps(run_dir) >= 3)
    listed = json.loads(sysprof(["ps", "--json"], cli_env).stdout)
    assert [row["dir"] for row in listed["running"]] == [str(run_dir)] and listed["died"] == []
    os.killpg(process.pid, signal.SIGKILL)  # what a reboot does: nobody is left to write an end
    process.wait()
    done = measured_steps(run_dir)
    result = sysprof(["ps", "--json"], cli_env)
    listed = json.loads(result.stdout)
    assert listed["running"] == [] and len(listed["died"]) == 1
    assert listed["died"][0].startswith(f"{run_dir.name}: the run's process is gone (last heartbeat ")
    assert listed["died"][0].endswith(f"died at step {done} of 5000")
    summary = rundir.read_summary(run_dir)
    assert summary["status"] == "failed" and summary["error"]["kind"] == events.DIED
    assert summary["phases"]["step"]["n"] == done  # the finished steps are kept
    assert not (run_dir / rundir.LIVE).exists()
    again = sysprof(["ps"], cli_env)  # settled once: not died again, not running
    assert again.returncode == 0 and "nothing in progress" in again.stdout and "died" not in again.stdout
    attach = sysprof(["attach", str(run_dir)], cli_env)
    assert attach.returncode == 2 and "has nothing in progress" in attach.stderr
    assert len(attach.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_attach_follows_a_run_from_another_terminal_to_its_end(tmp_path, cli_env):
    runs = tmp_path / "runs"
    runs.mkdir()
    process, run_dir = start_session(runs, steps=60, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: (run_dir / rundir.LIVE).exists())
    attach = sysprof(["attach", str(run_dir)], cli_env)
    assert process.wait(timeout=60) == 0
    assert attach.returncode == 0, attach.stderr
    assert f"following {run_dir}" in attach.stderr
    assert attach.stderr.count("step ") >= 60 and "step 59:" in attach.stderr  # every step, replayed or live
    assert "forward" in attach.stdout and "run directory" in attach.stdout  # the run's table at the end


def ended_within(process: subprocess.Popen, timeout_s: float, log: Path) -> None:
    """Wait for the process; if it hangs, fail with where it hangs (and kill its group so nothing is left)."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(hung(process, timeout_s, log.parent / "runs", log.read_text)) from None


def communicated(process: subprocess.Popen, timeout_s: float, runs: Path) -> tuple[str, str]:
    """process.communicate(), or, if it hangs, a failure that says where."""
    try:
        return process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        found: list[str] = []
        message = hung(process, timeout_s, runs, lambda: "".join(found))
        found += process.communicate()  # what the CLI printed, its stack dump included
        raise AssertionError(message + "".join(found)[-4000:]) from None


def hung(process: subprocess.Popen, timeout_s: float, runs: Path, printed) -> str:
    """Every process of the group dumps its Python stacks (SIGUSR1: the CLI to its stderr, the runner to its run
    directory's stderr.log), then the group is killed; the message holds what they said."""
    os.killpg(process.pid, signal.SIGUSR1)
    time.sleep(2.0)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    logs = "".join(f"\n--- {path}:\n{path.read_text(errors='replace')[-4000:]}"
                   for path in sorted(runs.glob("*/stderr.log")))
    return f"no exit {timeout_s} s after the signal; printed:\n{printed()[-4000:]}{logs}\n--- the CLI:\n"


@pytest.mark.slow  # over 5 s on a 2-core machine: not for the fast tier
def test_sysprof_run_marks_its_directory_while_it_runs(tmp_path, cli_env):
    log = tmp_path / "run.log"
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--ctx", "32",
                                "--batch", "2", "--device", "cpu", "--steps", "2000", "--warmup", "1"],
                               env=cli_env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: json.loads(sysprof(["ps", "--json"], cli_env).stdout)["running"] != [])
        row = json.loads(sysprof(["ps", "--json"], cli_env).stdout)["running"][0]
        assert row["kind"] == "run" and row["pid"] == process.pid and row["progress"].endswith("/2000 steps")
        assert row["state"] == "running"
        table = sysprof(["ps"], cli_env, timeout=60)
        assert "in progress" in table.stdout and str(process.pid) in table.stdout and "running" in table.stdout
    finally:
        os.killpg(process.pid, signal.SIGINT)  # a user's Ctrl-C: the run is cancelled and unmarked
        ended_within(process, 120, log)  # under a second here, quiet or loaded; a CI run once saw > 60 s
    run_dir = next((tmp_path / "runs").iterdir())
    assert not (run_dir / rundir.LIVE).exists() and rundir.read_summary(run_dir) is not None
    assert json.loads(sysprof(["ps", "--json"], cli_env).stdout) == {"running": [], "died": []}


def test_a_study_that_died_is_unmarked_and_says_how_to_go_on(tmp_path):
    Heartbeat(tmp_path, "study").start().stopped.set()
    old = time.time() - STALE_S - 1
    os.utime(tmp_path / rundir.LIVE, (old, old))
    line = settle_died(live_process(tmp_path))
    assert line.startswith(f"{tmp_path.name}: died (last heartbeat ") and line.endswith("finished cells are kept")
    assert live_process(tmp_path) is None


# SIGHUP: what the kernel sends the terminal's process group when SSH drops; SIGTERM: a scheduler's or kill's stop.
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
@pytest.mark.slow
def test_a_cli_run_whose_terminal_hangs_up_writes_its_summary(tmp_path, cli_env, signum):
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--ctx", "32",
                                "--batch", "2", "--device", "cpu", "--steps", "5000", "--warmup", "1"],
                               env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    runs = tmp_path / "runs"
    wait_until(lambda: runs.is_dir() and any(runs.iterdir()) and measured_steps(next(runs.iterdir())) >= 3)
    os.killpg(process.pid, signum)
    out, err = communicated(process, 120, runs)
    run_dir = next(runs.iterdir())
    summary = rundir.read_summary(run_dir)
    assert process.returncode == 1 and "Traceback" not in err, err
    # The runner gets the signal and the SIGINT its session forwards on it: the message names whichever it handled
    # first (its first stop ignores the rest). Python runs pending handlers lowest number first (SIGHUP 1, SIGINT 2,
    # SIGTERM 15), but on a loaded host the group's signal can reach the runner after the forwarded SIGINT.
    stopped_by = (f"stopped by {signum.name}", "stopped by SIGINT")
    assert summary["error"]["kind"] == events.CANCELLED and summary["error"]["message"] in stopped_by
    assert summary["state"] == "cancelled" and summary["error"]["phase"] is None
    assert summary["phases"]["step"]["n"] == measured_steps(run_dir) >= 3
    assert not (run_dir / rundir.LIVE).exists()


@pytest.mark.slow
def test_a_run_whose_terminal_is_gone_stops_without_writing_to_it(tmp_path, cli_env):
    """The real hang-up: the terminal (a pty) closes, then SIGHUP comes. Writing the report to the dead terminal
    would fail with EIO and end in a traceback; it goes nowhere instead, and the summary is written as always."""
    import pty

    terminal, its_device = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--ctx", "32",
                                "--batch", "2", "--device", "cpu", "--steps", "5000", "--warmup", "1"],
                               env=cli_env, stdin=its_device, stdout=its_device, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    os.close(its_device)
    runs = tmp_path / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(runs.iterdir()) and measured_steps(next(runs.iterdir())) >= 3)
    finally:
        os.close(terminal)  # the SSH session is gone: writes to its terminal now fail
    os.killpg(process.pid, signal.SIGHUP)
    _, err = communicated(process, 120, runs)
    summary = rundir.read_summary(next(runs.iterdir()))
    assert "Traceback" not in err and "Input/output error" not in err, err
    assert summary["state"] == "cancelled"


@pytest.mark.parametrize("nproc", [1, 2], ids=["one process", "two gloo ranks under torchrun"])
@pytest.mark.slow
def test_a_run_started_under_nohup_outlives_the_hang_up(tmp_path, cli_env, nproc):
    """`nohup sysprof run … &`: SIGHUP ignored from the start stays ignored in the CLI, its session, torchrun and
    the runners, so the hang-up that follows a logout leaves the run going; a later SIGTERM still stops it with its
    summary."""
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--ctx", "32",
                                "--batch", "2", "--device", "cpu", "--steps", "5000", "--warmup", "1",
                                "--nproc", str(nproc)],
                               env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    runs = tmp_path / "runs"
    wait_until(lambda: runs.is_dir() and any(runs.iterdir()) and measured_steps(next(runs.iterdir())) >= 3)
    run_dir = next(runs.iterdir())
    os.killpg(process.pid, signal.SIGHUP)
    hung_up_at = measured_steps(run_dir)
    wait_until(lambda: measured_steps(run_dir) >= hung_up_at + 20)  # still stepping after the hang-up
    assert process.poll() is None and rundir.read_summary(run_dir) is None
    os.killpg(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    summary = rundir.read_summary(run_dir)
    assert process.returncode == 1 and "Traceback" not in err, err
    assert summary["state"] == "cancelled" and summary["error"]["message"] in ("stopped by SIGTERM",
                                                                                "stopped by SIGINT")


@pytest.mark.slow
def test_a_runner_whose_reader_vanished_says_so_never_error_in_its_last_phase(tmp_path, cli_env):
    """`sysprof run` killed alone (kill -9 of its pid, not its group): the runner's next event finds its pipe closed.
    It stops with its summary, state died and the reason, not "error in optimizer: BrokenPipeError"."""
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--ctx", "32",
                                "--batch", "2", "--device", "cpu", "--steps", "5000", "--warmup", "1"],
                               env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    runs = tmp_path / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(runs.iterdir()) and measured_steps(next(runs.iterdir())) >= 3)
        run_dir = next(runs.iterdir())
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        wait_until(lambda: rundir.read_summary(run_dir) is not None)
    finally:
        signal_group(process.pid, signal.SIGKILL)  # the runner, had it gone on
    summary = rundir.read_summary(run_dir)
    assert (summary["status"], summary["state"], summary["error"]["kind"]) == ("failed", "died", events.DIED)
    assert summary["error"]["phase"] is None and "BrokenPipe" not in summary["error"]["message"]
    assert summary["error"]["message"].startswith("the process reading its events went away")
    assert summary["phases"]["step"]["n"] == measured_steps(run_dir) >= 3
    listed = sysprof(["ps"], cli_env)  # its launcher's mark is left behind: settled, with the runner's own words
    assert listed.returncode == 0 and "died:" in listed.stdout and "reading its events went away" in listed.stdout


def test_a_dead_advise_study_is_told_to_resume_as_an_advise(tmp_path):
    """`sweep --resume` would run the cells left and skip the advisor's later stages: an advise resumes as one."""
    import shutil

    study = tmp_path / "advise"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-tiny-cpu", study)
    Heartbeat(study, "study").start().stopped.set()
    old = time.time() - STALE_S - 1
    os.utime(study / rundir.LIVE, (old, old))
    assert settle_died(live_process(study)).endswith(f"`sysprof advise --resume {study}` runs the rest")
