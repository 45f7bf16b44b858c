"""The warm start: processes that import torch are forked from a server that imported it once, and their launcher
cannot tell (same output, exit status, signals, working directory, environment). Real servers and real processes,
each test module's servers in a folder of its own."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sysprof.profiler_core.base.processes import STAND_IN_FOLDER, torch_module
from sysprof.profiler_core.runner.forked_end import exit_code
from sysprof.profiler_core.runner.warm_start import server_key, wanted
from sysprof.profiler_core.session.watch import descends_from

PROBE = Path(__file__).resolve().parents[1] / "data" / "warm"
SERVER_READY_S = 120  # the server imports torch before it listens: seconds on a loaded 2-core machine


@pytest.fixture(scope="module")
def warm_env():
    folder = tempfile.mkdtemp(prefix="warm-")  # short: a socket's path ends at 107 bytes
    env = {**os.environ, "XDG_RUNTIME_DIR": folder, "PYTHONPATH": str(PROBE), "SYSPROF_WARM_IDLE_S": "20"}
    env.pop("SYSPROF_WARM_START", None)
    yield env
    shutil.rmtree(folder, ignore_errors=True)


def probe(env: dict, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([*torch_module("warm_probe"), *args], env=env, stdout=subprocess.PIPE, text=True,
                            **popen)


def first_line(process: subprocess.Popen) -> dict:
    assert process.stdout is not None
    return json.loads(process.stdout.readline())


def forked_probe(env: dict, *args: str, **popen) -> tuple[subprocess.Popen, dict]:
    """A probe a server forked: the first one starts the server and runs itself; wait until one is forked."""
    deadline = time.monotonic() + SERVER_READY_S
    while True:
        process = probe(env, *args, **popen)
        said = first_line(process)
        if said["torch_imported_before"] or time.monotonic() > deadline:
            return process, said
        process.kill()  # ran here, as the first does
        process.communicate()
        time.sleep(0.5)


@pytest.mark.slow
def test_a_forked_process_keeps_the_launchers_streams_folder_environment_and_exit_code(warm_env, tmp_path):
    forked_probe(warm_env, "exit", "0", cwd="/")[0].communicate(timeout=60)  # the server: started elsewhere
    # what differs from the server's own: a variable left out of its key, the folder, the umask
    process = probe({**warm_env, "SYSPROF_PROBE": "seven"}, "exit", "3", cwd=tmp_path,
                    preexec_fn=lambda: os.umask(0o027))
    said = first_line(process)
    rest, _ = process.communicate(timeout=60)
    assert said["torch_imported_before"], "no server forked the probe"
    assert said["pid"] != process.pid and said["ppid"] != process.pid  # another process, not the launcher's child
    assert (said["cwd"], said["probe_value"], said["argv"]) == (str(tmp_path), "seven", ["exit", "3"])
    assert said["umask"] == 0o027
    assert process.returncode == 3 and rest == ""
    assert not (Path(warm_env["XDG_RUNTIME_DIR"]) / f"sysprof-warm-{os.getuid()}" / STAND_IN_FOLDER
                / str(said["pid"])).exists()


@pytest.mark.slow
def test_ctrl_c_reaches_the_forked_process_and_a_signal_death_is_passed_on(warm_env):
    process, said = forked_probe(warm_env, "wait")
    assert said["torch_imported_before"]
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=60)
    assert (rest, process.returncode) == ("interrupted\n", 7)
    process, said = forked_probe(warm_env, "wait")
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM
    process, said = forked_probe(warm_env, "wait")
    os.kill(said["pid"], signal.SIGKILL)  # the forked process itself, as the kernel's OOM killer would
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_the_forked_process_is_counted_as_its_launchers_and_dies_with_it(warm_env, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", warm_env["XDG_RUNTIME_DIR"])  # where descends_from reads stand-ins
    process, said = forked_probe(warm_env, "wait", preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    assert said["torch_imported_before"] and said["sighup_ignored"]  # nohup's ignored hang-up is kept
    assert descends_from(said["pid"], {os.getpid()})  # the GPU watch must not call our own runner another job
    process.kill()
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{said['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{said['pid']}").exists(), "the forked process outlived its killed launcher"


def ended(process: subprocess.Popen) -> tuple[str, str, int]:
    """What a probe run with `end` left after its first line: its output, its errors and its exit code."""
    first_line(process)
    out, err = process.communicate(timeout=60)
    return out, err, process.returncode


@pytest.mark.parametrize("code, expected, printed", [(None, 0, ""), (0, 0, ""), (3, 3, ""), (True, 1, ""),
                                                     ("a message", 1, "a message\n")])
def test_the_exit_code_of_sys_exit_is_the_interpreters(code, expected, printed, capsys):
    assert exit_code(code) == expected
    assert capsys.readouterr().err == printed


@pytest.mark.slow
def test_a_warm_started_process_ends_as_the_interpreter_would_end_it(warm_env):
    """A forked process's quick end (no object freed one by one) still joins threads, runs exit handlers, flushes
    output and prints sys.exit's message: as plain `python -m`, and as the launcher that ran the module itself."""
    plain = subprocess.Popen([sys.executable, "-m", "warm_probe", "end"], env=warm_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    expected = ended(plain)
    assert expected == ("unflushed thread joined\nexit handler ran\n", "a message for sys.exit\n", 1)
    process, said = forked_probe(warm_env, "end", stderr=subprocess.PIPE)
    assert said["torch_imported_before"]
    out, err = process.communicate(timeout=60)
    assert (out, err, process.returncode) == expected
    assert ended(probe({**warm_env, "SYSPROF_WARM_START": "0"}, "end", stderr=subprocess.PIPE)) == expected


@pytest.mark.slow
@pytest.mark.parametrize("setting", [{"SYSPROF_WARM_START": "0"}, {"CUDA_INJECTION64_PATH": "libinjection.so"}])
def test_switched_off_or_under_an_injected_tool_the_process_runs_fresh(warm_env, setting):
    forked_probe(warm_env, "exit", "0")[0].communicate(timeout=60)  # a server is ready
    process = probe({**warm_env, **setting}, "exit", "0")
    said = first_line(process)
    process.communicate(timeout=60)
    assert said["pid"] == process.pid and not said["torch_imported_before"]


def test_nsys_or_any_injected_tool_and_the_switch_keep_a_process_fresh():
    assert wanted({}) and wanted({"LD_PRELOAD": ""})
    assert not wanted({"SYSPROF_WARM_START": "0"}) and not wanted({"LD_PRELOAD": "libinject.so"})
    assert not wanted({"CUDA_INJECTION64_PATH": "libToolsInjection64.so"})


def test_a_server_serves_every_rank_and_test_but_not_another_thread_count():
    base = {"PATH": "/usr/bin", "OMP_NUM_THREADS": "1"}
    same = server_key({**base, "RANK": "1", "MASTER_PORT": "29500", "CUDA_VISIBLE_DEVICES": "3",
                       "PYTEST_CURRENT_TEST": "t", "TORCHELASTIC_RUN_ID": "x", "SYSPROF_ANYTHING": "1",
                       "TERM": "tmux-256color", "NO_COLOR": "", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
                       "TTY_COMPATIBLE": "0", "TORCHINDUCTOR_CACHE_DIR": "/tmp/torchinductor_user"})
    assert same == server_key(base)
    assert server_key({**base, "OMP_NUM_THREADS": "2"}) != server_key(base)


@pytest.mark.parametrize("threads, said", [(0, "None"), (1, "2 threads after importing torch")])
def test_a_server_with_a_thread_running_may_not_fork(threads, said):
    code = ("import threading, time\n"
            f"for _ in range({threads}): threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            "from sysprof.profiler_core.runner.warm_server import unfit\nprint(unfit())")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith(said), done.stderr
