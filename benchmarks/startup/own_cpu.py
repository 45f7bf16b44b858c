"""`python -m benchmarks.startup.own_cpu MODULE [ARGS…]`: MODULE run as `python -m MODULE` would, then this process's
own CPU (user + system, since it started, or since the fork that made it) as the last line of its standard error."""
from __future__ import annotations

import resource
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"own-cpu {usage.ru_utime + usage.ru_stime:.3f}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
