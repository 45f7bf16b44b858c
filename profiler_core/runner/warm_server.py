"""A process that imports torch once, then forks each process asked of it (warm_start.py is the asking side).

    python -P -m sysprof.profiler_core.runner.warm_server SOCKET IDLE_S

One server per key (warm_start.server_key) holds SOCKET's lock for its life; another started meanwhile exits at once.
It binds SOCKET before importing torch (a path it cannot bind costs no import) and listens once it has checked that it
may fork: one thread, and CUDA untouched (no /dev/nvidia* open), so every forked process makes its own CUDA context.
A server that may not writes why to SOCKET.refused and exits; no stand-in starts another for that key.

A request: the stand-in's standard streams and working directory as file descriptors, then one JSON line (module,
argv, environment, umask, ignored signals, CPUs). The replies: {"pid"} at once, {"status"} (the wait status) when the
forked process ends. A stand-in that disconnects first was killed: its forked process is killed too. All in one
thread, since a fork copies only the thread that forks and a lock another thread held would stay held. With nothing
running for IDLE_S seconds the server exits.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from sysprof.profiler_core.base.processes import STAND_IN_FOLDER, warm_folder
from sysprof.profiler_core.runner.forked_end import run_and_end
from sysprof.profiler_core.runner.warm_start import FORWARDED

READ_TIMEOUT_S = 10.0  # a stand-in sends its request at once; one that does not is dropped


@dataclass
class Request:
    module: str
    argv: list[str]
    env: dict[str, str]
    umask: int
    ignored: list[int]
    cpus: list[int]
    stand_in: int  # the pid of the process that asked: its launcher waits for it
    fds: list[int]  # standard input, output, error, working directory


def main() -> None:
    path, idle_s = Path(sys.argv[1]), float(sys.argv[2])
    lock = _lock(path)
    if lock is None:
        return
    listener = _bind(path)
    if listener is None:
        return
    import torch  # noqa: F401  (the point of this process)
    import torch._dynamo  # noqa: F401  (every optimizer loads it)

    reason = unfit()
    if reason:
        path.with_suffix(".refused").write_text(reason + "\n")
        return
    listener.listen(64)
    request = Server(listener, lock, idle_s).serve()
    if request is None:
        path.unlink(missing_ok=True)
        return
    become(request)
    run_and_end(request.module)


def _lock(path: Path) -> int | None:
    handle = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another server has this key
        os.close(handle)
        return None
    return handle


def _bind(path: Path) -> socket.socket | None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.unlink(missing_ok=True)  # a socket left by a server that died: the lock says none owns it
        listener.bind(str(path))
    except OSError as error:
        print(f"warm start: cannot bind {path}: {error}", file=sys.stderr)
        listener.close()
        return None
    return listener


def unfit() -> str | None:
    """Why this process may not fork the processes asked of it, None if it may."""
    try:
        os.close(os.pidfd_open(os.getpid()))  # how it learns that a forked process ended (Linux 5.3)
    except OSError as error:
        return f"no pidfd_open here ({error})"
    if _threads() > 1:
        _settle()
    threads = _threads()
    if threads > 1 or threading.active_count() > 1:
        return f"{threads} threads after importing torch: a fork would copy only one"
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia"):
            return f"importing torch opened {target}: forked processes would share its CUDA state"
    return None


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _settle() -> None:
    """One fork whose child exits at once: a library that stops its threads for a fork and starts them again on its
    next use (numpy's OpenBLAS starts a pool when imported) has none left after it."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


class Server:
    def __init__(self, listener: socket.socket, lock: int, idle_s: float):
        self.listener, self.lock, self.idle_s = listener, lock, idle_s
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, ("accept", 0))
        self.running: dict[int, tuple[socket.socket | None, int]] = {}  # pid → (its stand-in's connection, pidfd)
        (warm_folder() / STAND_IN_FOLDER).mkdir(mode=0o700, exist_ok=True)

    def serve(self) -> Request | None:
        """Returns in a forked process with its request; in the server only once it has been idle for idle_s."""
        while True:
            ready = self.selector.select(None if self.running else self.idle_s)
            if not ready:
                return None
            for key, _ in ready:
                what, pid = key.data
                if what == "accept":
                    request = self._accept()
                    if request is not None:
                        return request
                elif what == "ended":
                    self._ended(pid)
                else:
                    self._stand_in_spoke(pid)

    def _accept(self) -> Request | None:
        connection, _ = self.listener.accept()
        request = _receive(connection)
        if request is None or unfit():  # the stand-in reads no pid and runs the module itself
            _close(request.fds if request else [])
            connection.close()
            return None
        pid = os.fork()
        if pid == 0:
            connection.close()
            self._close_all()
            # before any of its code runs: from then on it counts as its stand-in's child (the server removes it)
            with contextlib.suppress(OSError):  # without it, only the GPU watch cannot tell it is ours
                _stand_in_file(os.getpid()).write_text(str(request.stand_in))
            return request
        _close(request.fds)  # a pipe stays open while any copy of it is
        _send(connection, {"pid": pid})
        self._watch(pid, connection)
        return None

    def _watch(self, pid: int, connection: socket.socket) -> None:
        pidfd = os.pidfd_open(pid)
        self.running[pid] = (connection, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, ("ended", pid))
        self.selector.register(connection, selectors.EVENT_READ, ("stand-in", pid))

    def _ended(self, pid: int) -> None:
        _, status = os.waitpid(pid, 0)
        connection, pidfd = self.running.pop(pid)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _stand_in_file(pid).unlink(missing_ok=True)
        if connection is not None:
            self.selector.unregister(connection)
            _send(connection, {"status": status})
            connection.close()

    def _stand_in_spoke(self, pid: int) -> None:
        """A stand-in says nothing after its request: readable means it is gone, and so must its process be."""
        connection, pidfd = self.running.get(pid, (None, -1))
        if connection is None:  # ended in the same batch of events
            return
        self.selector.unregister(connection)
        connection.close()
        self.running[pid] = (None, pidfd)
        try:
            os.killpg(pid, signal.SIGKILL)  # it leads a group of its own: its workers go with it
        except ProcessLookupError:
            pass

    def _close_all(self) -> None:
        """In the forked process: nothing of the server's stays open (a pipe stays open while any copy of it is)."""
        for connection, pidfd in self.running.values():
            os.close(pidfd)
            if connection is not None:
                connection.close()
        self.selector.close()
        self.listener.close()
        os.close(self.lock)


def _receive(connection: socket.socket) -> Request | None:
    connection.settimeout(READ_TIMEOUT_S)
    fds: list[int] = []
    try:
        _, fds, _, _ = socket.recv_fds(connection, 1, 4)
        fields = json.loads(connection.makefile("rb").readline())
        request = Request(**{name: fields[name] for name in ("module", "argv", "env", "umask", "ignored", "cpus",
                                                              "stand_in")}, fds=fds)
    except (OSError, ValueError, KeyError, TypeError):  # a request cut short or not ours: nothing is forked
        _close(fds)
        return None
    connection.settimeout(None)
    if len(fds) != 4:
        _close(fds)
        return None
    return request


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _send(connection: socket.socket, message: dict) -> None:
    try:
        connection.sendall(json.dumps(message).encode() + b"\n")
    except OSError:  # the stand-in is gone: its disconnect is read next
        pass


def _stand_in_file(pid: int) -> Path:
    return warm_folder() / STAND_IN_FOLDER / str(pid)


def become(request: Request) -> None:
    """The forked process takes the stand-in's streams, folder, environment, umask, CPUs and ignored signals, in a
    process group of its own (a group signal to it reaches only it and its children)."""
    os.setpgid(0, 0)
    for target, fd in enumerate(request.fds[:3]):
        os.dup2(fd, target)
    os.fchdir(request.fds[3])
    for fd in request.fds:
        os.close(fd)
    os.umask(request.umask)
    try:
        os.sched_setaffinity(0, request.cpus)
    except OSError:  # CPUs this process may not use: it keeps the server's
        pass
    os.environ.clear()
    os.environ.update(request.env)
    for signum in FORWARDED:
        default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        signal.signal(signum, signal.SIG_IGN if signum in request.ignored else default)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))  # type: ignore[union-attr]
    sys.argv = [request.module, *request.argv]


if __name__ == "__main__":
    main()
