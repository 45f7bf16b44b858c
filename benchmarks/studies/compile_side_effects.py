"""Does compiling one model slow another model's eager steps in the same process, and what undoes it?

One process, one eager model A (train steps, CUDA events around the whole step). A's median step is timed: fresh;
after a second model is compiled and run (default mode, then reduce-overhead); after gc.freeze(); after
torch._dynamo.reset(). The process's tracing hooks and GC counts are printed beside each, to place a slowdown.

  python3 -m benchmarks.studies.compile_side_effects [--model-factory FILE:CALLABLE --optimizer FILE:CLASS] [--json]
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import threading
import time

import torch

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.runner.timing import StepInstruments, run_step
from sysprof.profiler_core.runner.workload import build_workload


def _median_step_ms(work, tools, steps: int = 30) -> float:
    return statistics.median(run_step(work, tools)["wall_ms"] for _ in range(steps))


def _state() -> dict:
    monitoring = getattr(sys, "monitoring", None)
    tools = [i for i in range(6) if monitoring and monitoring.get_tool(i)] if monitoring else []
    return {"gc_counts": gc.get_count(), "gc_tracked": len(gc.get_objects()), "threads": threading.active_count(),
            "profile": repr(sys.getprofile()), "trace": repr(sys.gettrace()), "monitoring_tools": tools}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_options(parser)
    args = parser.parse_args()
    cfg = validate(config_from_args(args))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    work, tools = build_workload(cfg, device), StepInstruments(device)
    found = []

    def timed(label: str) -> None:
        started = time.perf_counter()
        found.append({"after": label, "step_ms": [round(_median_step_ms(work, tools), 2) for _ in range(3)],
                      **_state(), "seconds": round(time.perf_counter() - started, 1)})
        print(json.dumps(found[-1]), flush=True)

    for _ in range(5):
        run_step(work, tools)
    timed("fresh")
    for mode in ("default", "reduce-overhead"):
        other = build_workload(RunConfig(**{**cfg.to_dict(), "compile": True, "compile_mode": mode}), device)
        for _ in range(4):
            run_step(other, tools)
        timed(f"compiling another model ({mode}) and running it")
        timed("again")
    gc.freeze()
    timed("gc.freeze()")
    gc.unfreeze()
    torch._dynamo.reset()
    gc.collect()
    timed("torch._dynamo.reset()")


if __name__ == "__main__":
    main()
