"""A stand-in runner for UI tests: replays events recorded from a real tiny CPU run.

Usage: python fake_runner.py EVENTS.jsonl --run-dir DIR [--delay SECONDS] [--stop-after N]
Non-JSON chatter goes between events, as real runners' libraries print it; --stop-after N exits with
code 9 after N events, as a killed runner would.
"""
import argparse
import time

parser = argparse.ArgumentParser()
parser.add_argument("events")
parser.add_argument("--run-dir", required=True)
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--stop-after", type=int)
args = parser.parse_args()
for number, line in enumerate(open(args.events).read().splitlines()):
    if args.stop_after is not None and number >= args.stop_after:
        raise SystemExit(9)
    print("chatter from a library, not an event", flush=True)
    print(line.replace("RUN_DIR", args.run_dir), flush=True)
    time.sleep(args.delay)
