"""Import time of the project's entry modules, each in fresh interpreters (`python -X importtime`).

    .venv/bin/python -m benchmarks.startup.imports [--repeat 9] [--root CHECKOUT] [MODULE ...]

The figure is the module's cumulative import time as CPython reports it (its own imports included, the
interpreter's start excluded). Modules are measured round-robin so drift on a shared machine hits them alike;
the report is median and min–max over the repeats. --root measures another checkout (e.g. an older commit in a
git worktree) with this interpreter, for a before/after comparison in one call.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODULES = ("sysprof.profiler_core.session.passes", "sysprof.profiler_core.api",
                   "sysprof.profiler_core.cli.main", "sysprof.tui.app")


def import_seconds(module: str, root: Path) -> float:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=root,
                            capture_output=True, text=True, check=True)
    for line in reversed(result.stderr.splitlines()):
        fields = [field.strip() for field in line.removeprefix("import time:").split("|")]
        if len(fields) == 3 and fields[2] == module:
            return int(fields[1]) / 1e6
    raise RuntimeError(f"{module} not in -X importtime output")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="*", default=DEFAULT_MODULES)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {module: [] for module in args.modules}
    for _ in range(args.repeat):
        for module in args.modules:
            samples[module].append(import_seconds(module, args.root))
    for module, seconds in samples.items():
        print(f"{module:32s} median {statistics.median(seconds):.3f} s  "
              f"(min {min(seconds):.3f}, max {max(seconds):.3f}, n={len(seconds)})")


if __name__ == "__main__":
    main()
