"""Time from launching `sysprof-tui RUN_DIR` to its first frame (target ≤ 0.30 s), headless.

    .venv/bin/python -m benchmarks.startup.app [RUN_DIR] [--repeat 5]

Each launch is a fresh interpreter (imports included); the child stamps the wall clock once the first
frame after mounting has been drawn, the parent subtracts the moment it spawned the child.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUN = ROOT / "tests" / "data" / "runs" / "small-h200-analyses"
BARE = ":bare:"  # as the run directory: time a bare Textual app instead (what any app pays)


def bare_child() -> None:
    """The floor: a Textual app with only a header and a footer, stamped the same way."""
    from textual.app import App
    from textual.widgets import Footer, Header

    class Bare(App):
        def compose(self):
            yield Header()
            yield Footer()

        def on_mount(self) -> None:
            self.call_after_refresh(stamp_and_exit, self)

    Bare().run(headless=True, size=(80, 24))


def stamp_and_exit(app) -> None:
    sys.__stdout__.write(f"FIRST_FRAME {time.time():.6f}\n")  # print() is captured by the app
    sys.__stdout__.flush()
    app.exit()


def child(run_dir: str) -> None:
    if run_dir == BARE:
        return bare_child()
    sys.path.insert(0, str(ROOT))
    from sysprof.tui.app import SysprofApp

    class TimedApp(SysprofApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.call_after_refresh(self.first_frame)

        def first_frame(self) -> None:
            stamp_and_exit(self)

    TimedApp(open_runs=[Path(run_dir)], runs_dir=str(Path(run_dir).parent)).run(
        headless=True, size=(80, 24))


def launch_once(run_dir: Path) -> float:
    spawned = time.time()
    result = subprocess.run([sys.executable, __file__, "--child", str(run_dir)], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    stamp = next(line for line in result.stdout.splitlines() if line.startswith("FIRST_FRAME"))
    return float(stamp.split()[1]) - spawned


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", nargs="?", type=Path, default=DEFAULT_RUN)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child")
    parser.add_argument("--bare", action="store_true", help="time a bare Textual app (header, footer) instead")
    args = parser.parse_args()
    if args.bare:
        args.run_dir = BARE
    if args.child:
        child(args.child)
        return
    launch_once(args.run_dir)  # warm the filesystem cache and .pyc files
    seconds = [launch_once(args.run_dir) for _ in range(args.repeat)]
    print(f"time to first frame (process start → first frame, {args.repeat} launches): median "
          f"{statistics.median(seconds):.3f} s, min {min(seconds):.3f} s, max {max(seconds):.3f} s (target ≤ 0.30 s)")


if __name__ == "__main__":
    main()
