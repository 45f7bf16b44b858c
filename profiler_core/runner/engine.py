"""The runner: `python -m sysprof.profiler_core.runner --run-dir DIR --config-json JSON`.

Runs warm-up and measured steps in its own process and reports each as a JSON event on stdout. It writes
the run directory itself, so the directory is complete even if whoever launched it has gone away. What it writes
before the first step is run_manifest.py's, the summary it ends with run_summary.py's, and every way out of a failed
run is failures.py's.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from sysprof.models.nvtx import nvtx_range
from sysprof.models.phases import COMPILE_RANGE, WARMUP_RANGE, step_range
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.events import CAPTURES, SCHEMA_VERSION, ReaderGone, emit
from sysprof.profiler_core.base.records import RunError, RunSummary, StepRecord
from sysprof.profiler_core.base.stop_signals import (
    deferrable,
    dump_stacks_on_request,
    held_stop_signals,
    on_stop_signals,
)
from sysprof.profiler_core.runner import distributed
from sysprof.profiler_core.runner.capture import MemoryHistory, measured_capture
from sysprof.profiler_core.runner.energy import EnergyMeter
from sysprof.profiler_core.runner.environment import collect_env
from sysprof.profiler_core.runner.failures import StepFailure, fail, guarded, ignore_stop_signals, raise_cancelled
from sysprof.profiler_core.runner.hold import wait_for_release
from sysprof.profiler_core.runner.module_ranges import (
    ModuleRanges,
    describe_modules,
    install_module_ranges,
    tags_supported,
)
from sysprof.profiler_core.runner.run_manifest import record_built, report_user_model, write_manifest
from sysprof.profiler_core.runner.run_summary import gather_ranks, write_summary
from sysprof.profiler_core.runner.timing import StepInstruments, run_step, synchronize
from sysprof.profiler_core.runner.workload import Workload, build_workload, check_dtype_support, resolve_device


def _profiler_range(work, start: bool) -> None:
    """cudaProfilerStart/Stop around the measured steps, so nsys captures exactly those."""
    if work.device.type == "cuda":
        (torch.cuda.cudart().cudaProfilerStart if start else torch.cuda.cudart().cudaProfilerStop)()


class Runner:
    def __init__(self, cfg: RunConfig, run_dir: Path, capture: str = "none", rank: distributed.Rank | None = None,
                 hold: bool = False):
        self.cfg, self.capture, self.rank, self.hold = cfg, capture, rank, hold
        self.run_dir = rundir.rank_dir(run_dir, rank.rank, rank.local_rank) if rank else run_dir
        self.history = MemoryHistory(self.run_dir, cfg.memory_max_entries) if capture == "memory" else None
        self.steps: list[StepRecord] = []
        self.env: dict = {}
        self.compile_s: float | None = None
        self.tools: StepInstruments | None = None
        self.energy: EnergyMeter | None = None
        self.module_ranges: ModuleRanges | None = None
        # a shared process's arm (runner/arms.py): its block, and its peaks less the other arms' resident memory
        self.amend_record: Callable[[StepRecord], StepRecord] | None = None

    def start(self) -> None:
        device = resolve_device(self.cfg.device)
        if self.rank:
            device = distributed.rank_device(device, self.rank)
            distributed.join(device)
        check_dtype_support(device, self.cfg.dtype)
        if self.hold:
            wait_for_release(device)
        torch.set_float32_matmul_precision(self.cfg.matmul_precision)  # before collect_env records it
        self.env = collect_env(device)
        write_manifest(self.run_dir, self.cfg, self.env, self.capture)
        if self.capture in ("torch", "memory") and device.type != "cuda":
            raise ConfigError(f"{self.capture} capture records CUDA activity; device {device.type} has none")
        emit(events.HELLO, schema=SCHEMA_VERSION, env=self.env, config=self.cfg.to_dict(), run_dir=str(self.run_dir),
             capture=self.capture)
        emit(events.STAGE, name="build")
        self.work = self.build(device)
        self.tools = StepInstruments(device)
        self.energy = EnergyMeter(device)
        if self.work.model_info:  # MFU is the clean pass's: the profiled and memory passes need no FLOP count
            report_user_model(self.cfg, self.work.model_info, count_flops=self.capture == "none")
        record_built(self.run_dir, self.work)
        self.install_module_ranges()

    def build(self, device: torch.device) -> Workload:
        if not self.rank:
            return build_workload(self.cfg, device)
        # A forward-only step has nothing to share: each rank runs its own (DDP refuses a model without gradients).
        share = distributed.wrapper(self.cfg, device) if self.cfg.mode != "forward" else None
        work = build_workload(self.cfg, device, share, self.rank.rank)
        work.before_forward = distributed.slow_forward(self.rank, device)
        return work

    def install_module_ranges(self) -> None:
        """--nvtx-modules: hooks in the capture passes only (install_module_ranges refuses the clean one)."""
        depth = self.cfg.nvtx_modules
        self.module_ranges = install_module_ranges(self.work.model, depth, self.capture)
        if self.module_ranges is None:
            return
        modules = describe_modules(self.work.model, depth)
        rundir.write_json(self.run_dir / rundir.MODULES, {"depth": depth, "modules": modules})
        tags = "; allocations tagged by module" if self.capture == "memory" and tags_supported() else ""
        emit(events.NOTICE, message=f"module ranges on {len(modules)} modules down to depth {depth}{tags} "
                                    "(their hooks slow this pass only, never the clean timing)")
        if self.capture == "memory" and not tags_supported():
            emit(events.NOTICE, message=f"torch {torch.__version__} cannot tag allocations "
                                        "(no torch.cuda.memory._set_memory_metadata): no memory by module type")

    def one_step(self, kind: str, index: int) -> StepRecord:
        tools = self.tools
        assert tools is not None  # start() builds them before any step runs
        try:
            record = run_step(self.work, tools)
        except torch.OutOfMemoryError as exc:
            peak = torch.cuda.max_memory_allocated() if self.work.device.type == "cuda" else None
            raise StepFailure(events.OOM, str(exc).splitlines()[0], tools.current_phase, peak) from None
        except RuntimeError as exc:
            reason = self.module_ranges.explain(exc) if self.module_ranges else None
            if reason is None:
                raise
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)  # the original, for stderr.log
            raise StepFailure(events.CONFIG, reason, tools.current_phase, None) from None
        finally:
            if self.module_ranges:
                self.module_ranges.end_step()
        record |= {"kind": kind, "index": index}
        if self.amend_record:
            record = self.amend_record(record)
        with held_stop_signals():  # a stop now: the step is in the summary exactly when it is in steps.jsonl
            rundir.append_jsonl(self.run_dir / rundir.STEPS, record)
            self.steps.append(record)
        emit(events.WARMUP_STEP if kind == "warmup" else events.STEP, **record)
        return record

    def compile_pass(self) -> None:
        emit(events.STAGE, name="compile")
        assert self.tools is not None  # start() builds them before any step runs
        started = time.perf_counter()
        with nvtx_range(COMPILE_RANGE):
            run_step(self.work, self.tools)
        synchronize(self.work.device)
        self.compile_s = time.perf_counter() - started
        emit(events.COMPILE, seconds=self.compile_s)

    def warm_up(self) -> None:
        """The compile pass where the config compiles, then the warm-up steps; the measured stage is announced."""
        if self.cfg.compiles:
            self.compile_pass()
        emit(events.STAGE, name="warmup", total=self.cfg.warmup)
        for index in range(self.cfg.warmup):
            with nvtx_range(WARMUP_RANGE):
                self.one_step("warmup", index)
        emit(events.STAGE, name="measured", total=self.cfg.steps)

    def run_steps(self) -> None:
        self.warm_up()
        _profiler_range(self.work, start=True)
        try:
            with measured_capture(self.capture, self.run_dir, self.history):
                self.measured_steps(range(self.cfg.steps))
        finally:
            _profiler_range(self.work, start=False)

    def measured_steps(self, indices: range, min_s: float = 0.0) -> int:
        """A stretch of measured steps, its energy read where it starts and ends; the steps it ran. min_s: steps
        after those until the stretch has lasted that long (each step ends synchronized, so the host's clock is
        the GPU's): NVML's energy counter needs a second or more to give a figure."""
        if self.energy:
            self.energy.start()
        done, started = 0, time.perf_counter()
        try:
            while done < len(indices) or time.perf_counter() - started < min_s:
                index = indices.start + done
                with nvtx_range(step_range(index)):
                    self.one_step("measured", index)
                done += 1
        finally:
            if self.energy:
                self.energy.stop(done)
        return done

    def finish(self, status: str, error: RunError | None = None) -> RunSummary:
        ignore_stop_signals()  # failures other than a cancel end here too: no signal may cut the summary short
        return write_summary(self, status, error)


def _start_and_measure(runner: Runner) -> None:
    runner.start()
    runner.run_steps()


def execute(runner: Runner) -> int:
    """Run and report; every way out writes summary.json and a last event."""
    code = guarded(runner, lambda: _start_and_measure(runner))
    if code is not None:
        return code
    summary = runner.finish(events.OK)
    if runner.rank:
        summary = gather_ranks(runner, summary)
        distributed.leave()
    with contextlib.suppress(ReaderGone):  # it finished and its summary is written: nobody left to tell is no failure
        emit(events.FINISHED, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)
    if runner.rank and runner.work.device.type != "cuda":
        distributed.end_gloo_rank(0)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--config-json", required=True)
    parser.add_argument("--capture", choices=CAPTURES, default="none", help="what this pass records")
    parser.add_argument("--hold", action="store_true", help="start up, then wait for 'go' on stdin (runner/hold.py)")
    args = parser.parse_args(argv)
    rank = distributed.rank_from_env()
    own_dir = rundir.rank_dir(args.run_dir, rank.rank, rank.local_rank) if rank else args.run_dir
    own_dir.mkdir(parents=True, exist_ok=True)
    if rank and rank.local_rank:  # the node's first rank's events are the run's; the others keep theirs apart
        sys.stdout = (own_dir / rundir.EVENTS).open("w", buffering=1)
    # Ctrl-C, a launcher's stop, and the terminal hanging up (a dropped SSH session): each ends the run with its summary
    on_stop_signals(deferrable(raise_cancelled))
    dump_stacks_on_request()
    try:
        cfg = validate(RunConfig.from_dict(json.loads(args.config_json)), locate_code=False)
    except (ConfigError, json.JSONDecodeError, TypeError) as exc:
        return fail(Runner(RunConfig(), args.run_dir, rank=rank), events.CONFIG, str(exc), None, None, code=2)
    return execute(Runner(cfg, args.run_dir, args.capture, rank, args.hold))


if __name__ == "__main__":
    sys.exit(main())
