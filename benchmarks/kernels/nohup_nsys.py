"""Does `nohup sysprof run --profiler nsys` outlive hang-ups in every pass? Run on a GPU machine.

    python3 -m benchmarks.kernels.nohup_nsys [--model small] [--steps 60]

Starts the run with SIGHUP ignored (as nohup does) in its own process group, sends the group a SIGHUP every 5 s
until it ends, and prints how the run ended: a run that outlived them says status ok with its kernel tables.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time

from benchmarks.harness import tool_argv


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    argv, env = tool_argv("run", "--model", args.model, "--profiler", "nsys", "--steps", str(args.steps), "--json")
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    hangups, started = 0, time.monotonic()
    while process.poll() is None:
        time.sleep(5)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGHUP)
            hangups += 1
    out, err = process.communicate()
    summary = json.loads(out) if out.strip() else {}
    profile = summary.get("profile") or {}
    print(json.dumps({"hangups_sent": hangups, "seconds": round(time.monotonic() - started, 1),
                      "exit": process.returncode, "status": summary.get("status"), "state": summary.get("state"),
                      "profile": profile.get("status"), "measured_steps": (summary.get("phases") or {}).get(
                          "step", {}).get("n"), "stderr_tail": err.strip().splitlines()[-3:]}))


if __name__ == "__main__":
    main()
