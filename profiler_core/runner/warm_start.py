"""`python -P -m sysprof.profiler_core.runner.warm_start MODULE [ARGS…]`: MODULE run as `python -P -m MODULE` would,
forked from a process that imported torch already (warm_server.py) when one is ready, in this process otherwise.

Why: importing torch, and torch._dynamo, which every optimizer loads, costs 2–4 s of CPU in each process, and a sweep
starts one process per cell and repeat. The forked process is a new process all the same: its own pid, memory, CUDA
context and allocator (the server never touches CUDA), which is what the tool's process-to-process spread rests on.

This process stays as the forked one's stand-in: it hands over its standard streams, working directory, environment
and the signals it ignores, forwards every signal it gets, and exits as the forked process did, so a launcher,
torchrun or a terminal's Ctrl-C sees no difference. Killed outright, it leaves the server to kill the forked process.

Off with SYSPROF_WARM_START=0, and wherever a tool has injected itself into this process (nsys sets LD_PRELOAD and
CUDA_INJECTION64_PATH): a forked process would escape it. With no server ready, this process starts one for the next
process and runs MODULE itself. Nothing here imports torch.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import resource
import runpy
import select
import signal
import socket
import subprocess
import sys
import types
from pathlib import Path

from sysprof.profiler_core.base.processes import SAFE_PATH, warm_folder

SERVER = "sysprof.profiler_core.runner.warm_server"
OFF = "SYSPROF_WARM_START"
IDLE = "SYSPROF_WARM_IDLE_S"  # how long a server without work waits before it exits
IDLE_S = 120.0
INJECTED = ("LD_PRELOAD", "CUDA_INJECTION64_PATH")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# Set per process or per test by launchers, or the terminal's, and read by nothing torch does at import (CUDA and
# NCCL read theirs when a process first uses them): a server serves them all.
PER_PROCESS = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
               "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
               "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PWD", "OLDPWD", "_", "SHLVL", "TERM", "TERM_PROGRAM",
               "TERM_PROGRAM_VERSION", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TMUX", "TMUX_PANE",
               "TTY_COMPATIBLE", "TTY_INTERACTIVE",  # rich's say on the terminal, read when a console is made
               "TORCHINDUCTOR_CACHE_DIR"}  # torch writes it into its own environment when it first compiles
PER_PROCESS_PREFIXES = ("TORCHELASTIC_", "SYSPROF_", "PYTEST_")
MAX_SOCKET_PATH = 100  # AF_UNIX paths end at 107 bytes


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m sysprof.profiler_core.runner.warm_start MODULE [ARGS...]")
    module, args = sys.argv[1], sys.argv[2:]
    status = forked(module, args) if wanted(os.environ) else None
    if status is None:
        sys.argv = [module, *args]
        run_as_main(module)  # the interpreter's own end: a tool injected here (nsys) writes its data at exit
        return
    exit_as(status)


def run_as_main(module: str) -> None:
    """MODULE run as `python -m` runs it (runpy's own function for that): in a `__main__` of its own that lives until
    the interpreter ends, where runpy.run_module would free the module's globals as it returns."""
    sys.modules["__main__"] = types.ModuleType("__main__")
    runpy._run_module_as_main(module, alter_argv=True)  # type: ignore[attr-defined]


def wanted(env: os._Environ | dict[str, str]) -> bool:
    return env.get(OFF, "1") != "0" and not any(env.get(name) for name in INJECTED) and hasattr(os, "pidfd_open")


def per_process(name: str) -> bool:
    return name in PER_PROCESS or name.startswith(PER_PROCESS_PREFIXES)


def server_key(env: dict[str, str]) -> str:
    """What a server's imports may have read: the interpreter, its path and flags, torch's install, this code, the
    limits and every variable of the environment not set per process. Requests that differ go to different servers."""
    torch = importlib.util.find_spec("torch")
    stamps = [os.stat(path).st_mtime_ns for path in (torch.origin if torch else None, __file__,
                                                     Path(__file__).with_name("warm_server.py")) if path]
    limits = [resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")]
    shared = sorted((name, value) for name, value in env.items() if not per_process(name))
    # the CPUs too: OpenBLAS and OpenMP size their pools from them when torch loads them
    facts = [sys.executable, sys.path, list(sys.flags), stamps, limits, os.getpriority(os.PRIO_PROCESS, 0),
             sorted(os.sched_getaffinity(0)), shared]
    return hashlib.sha256(json.dumps(facts, default=str).encode()).hexdigest()[:24]


def socket_path(key: str) -> Path | None:
    """The server's socket in this user's own folder, None where there is none to trust or the path is too long."""
    folder = warm_folder()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        found = folder.stat()
    except OSError:
        return None
    path = folder / f"{key}.sock"
    private = found.st_uid == os.getuid() and not found.st_mode & 0o077
    return path if private and len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def forked(module: str, args: list[str]) -> int | None:
    """The wait status of MODULE forked by a ready server, None where there is none (one is started for next time)."""
    path = socket_path(server_key(dict(os.environ)))
    if path is None or path.with_suffix(".refused").exists():
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        start_server(path)
        return None
    forwarder = Forwarder()  # from before the request: a Ctrl-C may come as soon as the forked process prints
    with connection:
        status = _ask(connection, module, args, forwarder)
    if status is None:
        forwarder.give_back()
    return status


def _ask(connection: socket.socket, module: str, args: list[str], forwarder: Forwarder) -> int | None:
    try:
        here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # a working folder this process may not open: it runs the module itself
        return None
    umask = os.umask(0)
    os.umask(umask)
    request = {"module": module, "argv": args, "env": dict(os.environ), "umask": umask, "stand_in": os.getpid(),
               "ignored": forwarder.ignored, "cpus": sorted(os.sched_getaffinity(0))}
    try:
        socket.send_fds(connection, [b"F"], [0, 1, 2, here])
        connection.sendall(json.dumps(request).encode() + b"\n")
        reader = connection.makefile("rb")
        reply = json.loads(reader.readline() or b"{}")
    except (OSError, ValueError):  # the server ended meanwhile: nothing was forked
        return None
    finally:
        os.close(here)
    if "pid" not in reply:
        return None
    forwarder.to(reply["pid"])
    return _status(reader, reply["pid"])


class Forwarder:
    """Passes the signals this process gets to the forked one; those that come before it is known wait for it."""

    def __init__(self) -> None:
        self.ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
        self.pid: int | None = None
        self.waiting: list[int] = []
        self.before = {s: signal.signal(s, self._forward) for s in FORWARDED if s not in self.ignored}

    def _forward(self, signum: int, frame: object) -> None:
        if self.pid is None:
            self.waiting.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def to(self, pid: int) -> None:
        self.pid = pid
        for signum in self.waiting:
            self._forward(signum, None)

    def give_back(self) -> None:
        """Nothing was forked: the handlers this process had, and the signals that came meanwhile, are its own."""
        for forwarded, handler in self.before.items():
            signal.signal(forwarded, handler)
        for signum in self.waiting:
            signal.raise_signal(signum)


def _status(reader, pid: int) -> int:
    """The forked process's wait status, as the server saw it end. A server that died first leaves it unknown: this
    process waits for the forked one to end and says so."""
    try:
        line = reader.readline()
    except OSError:
        line = b""
    if line:
        return int(json.loads(line)["status"])
    _wait_for_end(pid)
    print(f"warm start: the server ended before process {pid} did; its exit status is lost", file=sys.stderr)
    return 1 << 8


def _wait_for_end(pid: int) -> None:
    try:
        handle = os.pidfd_open(pid)
    except OSError:  # gone already
        return
    try:
        select.select([handle], [], [])
    finally:
        os.close(handle)


def exit_as(status: int) -> None:
    """End as the forked process ended: the same exit code, or death by the same signal."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # their handling cannot be changed, nor needs to be
            signal.signal(-code, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))  # one dump is enough
        sys.stdout.flush()
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)


def start_server(path: Path) -> None:
    """A server for the next process with this key, in a session of its own (a terminal's hang-up or Ctrl-C is for
    the runs, not for it), with the environment's shared part only. It exits at once if another holds the lock."""
    env = {name: value for name, value in os.environ.items() if not per_process(name)}
    argv = [sys.executable, SAFE_PATH, "-m", SERVER, str(path), os.environ.get(IDLE, str(IDLE_S))]
    try:
        with path.with_suffix(".log").open("ab") as log:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
                             start_new_session=True)
    except OSError:
        pass


if __name__ == "__main__":
    main()
