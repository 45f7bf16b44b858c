"""CPU per test: a pytest plugin that writes each test's own CPU and that of the processes it waited for, and a
summary of what it wrote.

    SYSPROF_TEST_CPU=DIR .venv/bin/python -m pytest -n auto -p benchmarks.startup.cpu_per_test
    .venv/bin/python -m benchmarks.startup.cpu_per_test DIR [--top 30]

Each worker appends one JSON line per test to DIR/cpu-PID.jsonl: "self" (the worker's CPU while the test ran) and
"children" (the CPU of the processes it waited for meanwhile, their own children included when they waited for
them). Processes nobody waits for (a terminal's app under tmux, a daemonized run) are not counted.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import time
from pathlib import Path

import pytest

ENV = "SYSPROF_TEST_CPU"


def _cpu_s() -> tuple[float, float]:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get(ENV)
    own, waited, started = *_cpu_s(), time.monotonic()
    yield
    if folder:
        own_after, waited_after = _cpu_s()
        record = {"test": item.nodeid, "self": own_after - own, "children": waited_after - waited,
                  "wall": time.monotonic() - started}
        with open(Path(folder) / f"cpu-{os.getpid()}.jsonl", "a") as log:
            log.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    records = [json.loads(line) for path in args.folder.glob("cpu-*.jsonl") for line in path.read_text().splitlines()]
    own, waited = sum(r["self"] for r in records), sum(r["children"] for r in records)
    print(f"{len(records)} tests: {own + waited:.0f} s of CPU, {waited:.0f} s of it in processes they waited for")
    by_file: collections.Counter = collections.Counter()
    for record in records:
        by_file[record["test"].split("::")[0]] += record["self"] + record["children"]
    for name, seconds in by_file.most_common(args.top):
        print(f"{seconds:8.1f} s  {name}")
    print()
    for record in sorted(records, key=lambda r: -(r["self"] + r["children"]))[:args.top]:
        print(f"{record['self'] + record['children']:8.1f} s  {record['test']}")


if __name__ == "__main__":
    main()
