"""A private tmux server for driving the real app: its own socket (never the user's server, never another run's)
and a session that holds it open. tmux exits with its last session, and a new-session sent while it exits fails
with "server exited unexpectedly": without the holder, killing one app's session and starting the next races."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

HOLDER = "holder"


class TmuxServer:
    """Call it as tmux itself: server("send-keys", "-t", name, "q"). `with server:` starts it, and kills it after."""

    def __init__(self, label: str):
        self.socket = f"{label}-{os.getpid()}"

    def __call__(self, *args: str, check: bool = True) -> str:
        command = ["tmux", "-L", self.socket, "-f", "/dev/null", *args]  # -f: no user config changes the panes
        done = subprocess.run(command, capture_output=True, text=True)
        if check and done.returncode:
            raise RuntimeError(f"tmux {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def kill_session(self, name: str) -> None:
        self("kill-session", "-t", name, check=False)

    def __enter__(self) -> TmuxServer:
        self("new-session", "-d", "-s", HOLDER)
        return self

    def __exit__(self, *exc: object) -> None:
        socket = self("display", "-p", "#{socket_path}", check=False).strip()
        self("kill-server", check=False)
        if socket:  # kill-server leaves the socket file behind
            Path(socket).unlink(missing_ok=True)
