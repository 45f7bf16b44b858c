"""A full run from the app on a GPU: Textual's pilot drives the real app against the real session (nsys and
memory capture), then the Live, Kernels and Memory screens are written out as text.

Usage (GPU): python3 -m benchmarks.app.gpu_e2e OUT_DIR [--model small] [--dtype fp32]
"""
from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.screen_text import screen_lines

RUN_TIMEOUT_S = 400


async def drive(out: Path, cfg: RunConfig) -> None:
    app = build_app(out / "runs", initial=cfg, settings_path=out / "settings.json", sample_gpu=True)
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.pause()
        started = time.monotonic()
        await pilot.press("ctrl+r")
        while app.run_state.stage not in ("finished", "failed") and time.monotonic() - started < RUN_TIMEOUT_S:
            await pilot.pause(1.0)
        print(f"run {app.run_state.stage} after {time.monotonic() - started:.0f} s: {app.run_state.run_dir}")
        for key, name in (("2", "live"), ("3", "kernels"), ("4", "memory")):
            await pilot.press("escape", key)
            await pilot.pause(3.0)  # the pane loads in a thread worker; the NVML sampler never completes
            text = "\n".join(line.rstrip() for line in screen_lines(app))
            (out / f"screen_{name}.txt").write_text(text + "\n")
            print(f"--- {name} ---\n{text}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="small")
    parser.add_argument("--dtype", default="fp32")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cfg = RunConfig(model=args.model, dtype=args.dtype, profiler="nsys", memory=True, warmup=3, steps=5)
    asyncio.run(drive(args.out, cfg))


if __name__ == "__main__":
    main()
