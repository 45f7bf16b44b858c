"""A study run from the app on a GPU: Textual's pilot types a command into the Studies screen, the real
`sysprof study` runs it, and the screen is written out as text while it runs and when it ends.

Usage (GPU): python3 -m benchmarks.app.gpu_studies OUT_DIR ["study warmup --model small"]
"""
from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from sysprof.tui.app import SysprofApp, build_app
from sysprof.tui.screen_text import screen_lines

STUDY_TIMEOUT_S = 300


def screen_text(app: SysprofApp) -> str:
    return "\n".join(line.rstrip() for line in screen_lines(app))


async def drive(out: Path, command: str) -> None:
    app = build_app(out / "runs", settings_path=out / "settings.json", sample_gpu=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("6")
        await pilot.pause(0.5)
        pane = app.query_one("#pane-studies")
        pane.query_one("#study-command").value = command
        pane.query_one("#study-command").focus()
        started = time.monotonic()
        await pilot.press("enter")
        while not pane.study.done and time.monotonic() - started < STUDY_TIMEOUT_S:
            await pilot.pause(1.0)
        (out / "screen_studies_running.txt").write_text(screen_text(app) + "\n")
        while pane.study.running and time.monotonic() - started < STUDY_TIMEOUT_S:
            await pilot.pause(1.0)
        await pilot.pause(2.0)  # the tables load in a thread worker
        print(f"study {pane.study.stage} after {time.monotonic() - started:.0f} s: {pane.study.directory}")
        for index in range(len(pane.tables)):
            (out / f"screen_studies_table{index + 1}.txt").write_text(screen_text(app) + "\n")
            print(screen_text(app))
            await pilot.press("t")
            await pilot.pause(0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description="Drive the Studies pane through a study on the GPU; save screens.")
    parser.add_argument("out", type=Path, help="folder for the screens")
    parser.add_argument("study", nargs="?", default="study warmup --model small", help="the study's command line")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(drive(args.out, args.study))


if __name__ == "__main__":
    main()
