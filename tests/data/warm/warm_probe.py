"""A module the warm-start tests run: it says where and how it runs, then ends as its first argument says.

    warm_probe exit CODE | warm_probe wait   (wait: prints "ready", then sleeps; Ctrl-C ends it with code 7)
"""
import json
import os
import signal
import sys
import time

print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "argv": sys.argv[1:],
                  "probe_value": os.environ.get("PROBE_VALUE"), "umask": os.umask(0o022),
                  "sighup_ignored": signal.getsignal(signal.SIGHUP) == signal.SIG_IGN,
                  "torch_imported_before": "torch" in sys.modules}), flush=True)
if sys.argv[1] == "wait":
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(7)
    sys.exit(0)
sys.exit(int(sys.argv[2]))
