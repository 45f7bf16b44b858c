"""`sysprof-tui [RUN_DIR ...] [--runs-dir DIR]`: a path that is not a run directory is one line, exit 2."""
from __future__ import annotations

import argparse
from pathlib import Path

from sysprof.profiler_core.api import OneLineParser, runs, studies


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="sysprof-tui", description="Terminal profiler for Transformer training steps.")
    parser.add_argument("run_dirs", nargs="*", type=Path,
                        help="saved run (or sweep/study) directories to open (offline)")
    parser.add_argument("--runs-dir", help="root of run directories (default $SYSPROF_RUNS or ./runs)")
    args = parser.parse_args(argv)
    for path in args.run_dirs:
        try:
            known = runs.is_run_dir(path) or studies.study_kind(path) is not None
        except OSError as exc:  # a name too long, a loop of links
            parser.error(f"{path}: {exc.strerror or exc}")
        if not known:
            parser.error(f"{path} is not a run directory, nor a sweep or study directory")
    return args
