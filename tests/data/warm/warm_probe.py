"""A module the warm-start tests run: it prints where and how it runs as one JSON line, then ends as its first
argument says.

    warm_probe exit CODE | warm_probe wait   (wait: sleeps a minute; Ctrl-C ends it with code 7)
    warm_probe end   (what an end must still do: a thread to join, an exit handler, unflushed output, a message)
"""
import atexit
import json
import os
import signal
import sys
import threading
import time


def leave_work_for_the_end() -> None:
    atexit.register(print, "exit handler ran")
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread joined"))).start()
    print("unflushed", end=" ")
    sys.exit("a message for sys.exit")


said = {"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "argv": sys.argv[1:],
        "probe_value": os.environ.get("SYSPROF_PROBE"), "umask": os.umask(0o022),
        "sighup_ignored": signal.getsignal(signal.SIGHUP) == signal.SIG_IGN,
        "torch_imported_before": "torch" in sys.modules}
try:  # from before the line is printed: a Ctrl-C may follow it at once
    print(json.dumps(said), flush=True)
    if sys.argv[1] == "wait":
        time.sleep(60)
    if sys.argv[1] == "end":
        leave_work_for_the_end()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(7)
sys.exit(int(sys.argv[2]) if sys.argv[1] == "exit" else 0)
