"""A stand-in runner for UI tests: replays events recorded from a real tiny CPU run.

Usage: python fake_runner.py EVENTS.jsonl --run-dir DIR [--delay SECONDS] [--stop-after N] [--hold-last FILE]
Each event goes to stdout and to DIR/session_events.jsonl, and DIR/live.json marks it while it runs, as the
session does (the app follows the file and re-attaches by the mark). Non-JSON chatter goes between events on stdout, as real runners' libraries print it; --stop-after N exits
with code 9 after N events, leaving its mark behind, as a killed session would; --hold-last FILE waits for FILE to
exist before the last event (at most two minutes), so that a test decides when the run ends, whatever the load.
"""
import argparse
import json
import os
import time
from pathlib import Path

from sysprof.profiler_core.documents.liveness import RUN
from sysprof.profiler_core.session.live import Heartbeat

parser = argparse.ArgumentParser()
parser.add_argument("events")
parser.add_argument("--run-dir", required=True)
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--stop-after", type=int)
parser.add_argument("--hold-last")
args = parser.parse_args()
lines = open(args.events).read().splitlines()
heartbeat = Heartbeat(Path(args.run_dir), RUN, json.loads(lines[0])["config"]).start()  # the hello event's
event_file = open(os.path.join(args.run_dir, "session_events.jsonl"), "a", buffering=1)
for number, line in enumerate(lines):
    if args.stop_after is not None and number >= args.stop_after:
        raise SystemExit(9)
    held_until = time.monotonic() + 120
    while args.hold_last and number == len(lines) - 1 and not os.path.exists(args.hold_last) and \
            time.monotonic() < held_until:
        time.sleep(0.05)
    print("chatter from a library, not an event", flush=True)
    print(line.replace("RUN_DIR", args.run_dir), flush=True)
    event_file.write(line.replace("RUN_DIR", args.run_dir) + "\n")
    time.sleep(args.delay)
heartbeat.stop()
