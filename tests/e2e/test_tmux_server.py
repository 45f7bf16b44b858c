"""The private tmux server the end-to-end tests and the app benchmarks drive the app through."""
import shutil
from pathlib import Path

import pytest

from benchmarks.tmux_server import HOLDER, TmuxServer

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_the_server_outlives_each_session_and_leaves_nothing_behind():
    server = TmuxServer("sysprof-probe")
    with server:
        socket = Path(server("display", "-p", "#{socket_path}").strip())
        server("new-session", "-d", "-s", "first", "sleep 30")
        server.kill_session("first")  # the last app session gone: the holder keeps the server up
        server("new-session", "-d", "-s", "second", "sleep 30")
        assert server("list-sessions", "-F", "#{session_name}").split() == [HOLDER, "second"]
        assert socket.name == server.socket
    assert not socket.exists()
    assert server("list-sessions", check=False) == ""
