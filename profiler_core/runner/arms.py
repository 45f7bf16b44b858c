"""Several configurations in one runner process, measured in interleaved blocks:
`python -m sysprof.profiler_core.runner.arms --arms-json JSON [--blocks N]`, JSON a list of {"run_dir", "config"}.

A fresh process costs seconds to tens of seconds before its first step (imports, the CUDA context, the model's
build): on a 100 ms step that is most of what measuring a candidate costs. Here each configuration is an arm with
its own model, optimizer and batch, built from the same seed (so their losses after as many updates compare), and its
own run directory written as any runner's (manifest, steps.jsonl, summary.json; its events in events.jsonl). Every
arm first builds, compiles and warms up: its smoke test, where one that fails (a compile that breaks, an optimizer
that cannot be compiled, an OOM) ends with its reason at that cost while the others go on. Then the measured steps
run in blocks, the arms in order and the order reversed every other block (A B C, C B A, …), so drift inside the
process (clocks, a neighbour) hits every arm alike. Arms that compile come after every eager arm, in a phase of their
own (phases_of_process): a compile in the process slows the eager steps of models of the same code.

One such process is still one process: its allocator, autotuning and clocks are shared by its arms. The launcher
runs several (session/arms.py) and each arm's median in each process is one observation, as a fresh process's is.
stdout carries one "arm_done" event per arm as it ends.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TextIO

import torch

from sysprof.models.nvtx import nvtx_range
from sysprof.models.phases import WARMUP_RANGE, step_range
from sysprof.profiler_core import events, rundir
from sysprof.profiler_core.config import ConfigError, RunConfig, validate
from sysprof.profiler_core.events import ReaderGone, emit
from sysprof.profiler_core.records import StepRecord
from sysprof.profiler_core.runner.engine import CANCELLED_CODE, Cancelled, Runner, fail, guarded, raise_cancelled
from sysprof.profiler_core.stop_signals import deferrable, dump_stacks_on_request, on_stop_signals

DEFAULT_BLOCKS = 4
MIN_BLOCK_STEPS = 2  # a block's median needs more than its first step after a switch of arms


@dataclass
class Arm:
    runner: Runner
    position: int
    events_file: TextIO
    own_s: float = 0.0  # seconds this arm's own work took in the process (build, compile, warm-up, steps)
    code: int | None = None  # the exit code once it failed; None while it is measured
    resident: int = 0  # bytes it holds between its steps (its weights, optimizer state, graphs' pools)
    blocks: list[int] = field(default_factory=list)


def block_ranges(steps: int, blocks: int) -> list[range]:
    """The measured step indices in contiguous blocks of near-equal length, each of MIN_BLOCK_STEPS or more where
    the steps allow."""
    count = max(1, min(blocks, steps // MIN_BLOCK_STEPS))
    bounds = [round(i * steps / count) for i in range(count + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(count)]


def block_order(arms: list[Arm], block: int) -> list[Arm]:
    """The arms still measured, in order in even blocks and reversed in odd ones."""
    live = [arm for arm in arms if arm.code is None]
    return live if block % 2 == 0 else live[::-1]


@contextlib.contextmanager
def _events_to(stream: TextIO) -> Iterator[None]:
    """An arm's events go to its own file: the process's stdout says only which arm ended."""
    saved, sys.stdout = sys.stdout, stream
    try:
        yield
    finally:
        sys.stdout = saved


def _in_arm(arm: Arm, work: Callable[[], None]) -> None:
    """Run an arm's work with its own matmul precision and memory account; a failure ends the arm, not the process."""
    torch.set_float32_matmul_precision(arm.runner.cfg.matmul_precision)  # a process-wide setting: each arm's own
    on_cuda = torch.cuda.is_available() and arm.runner.cfg.device != "cpu"
    others = torch.cuda.memory_allocated() - arm.resident if on_cuda else 0
    arm.runner.amend_record = lambda record: _own_memory(arm, record, others)
    started = time.perf_counter()
    with _events_to(arm.events_file):
        arm.code = guarded(arm.runner, work)
    arm.own_s += time.perf_counter() - started
    if arm.code is not None:
        _release(arm)


def _own_memory(arm: Arm, record: StepRecord, others: int) -> StepRecord:
    """The step's peaks less what the other arms held while it ran, so each arm's peak is its own."""
    if not record.get("peak_allocated_bytes"):
        return record
    amended = StepRecord(**record)
    amended["peak_allocated_bytes"] = {phase: value - others for phase, value in record["peak_allocated_bytes"].items()}
    amended["others_resident_bytes"] = others
    before, after = record.get("memory_before_backward_bytes"), record.get("memory_after_step_bytes")
    amended["memory_before_backward_bytes"] = None if before is None else before - others
    amended["memory_after_step_bytes"] = None if after is None else after - others
    arm.resident = amended["memory_after_step_bytes"] or arm.resident
    return amended


def _release(arm: Arm) -> None:
    """A failed arm's model and optimizer leave the device, so the arms still measured keep its memory."""
    with contextlib.suppress(AttributeError):
        del arm.runner.work
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    arm.resident = 0


def _smoke(arm: Arm) -> None:
    """Build, compile and warm up: what fails for this model fails here, in seconds."""
    runner = arm.runner
    runner.start()
    if runner.cfg.compiles:
        runner.compile_pass()
    emit(events.STAGE, name="warmup", total=runner.cfg.warmup)
    for index in range(runner.cfg.warmup):
        with nvtx_range(WARMUP_RANGE):
            runner.one_step("warmup", index)
    emit(events.STAGE, name="measured", total=runner.cfg.steps)


def _measure_block(arm: Arm, steps: range, block: int) -> None:
    arm.blocks.append(block)
    amend = arm.runner.amend_record

    def in_block(record: StepRecord) -> StepRecord:
        amended = StepRecord(**(amend(record) if amend else record))
        amended["block"] = block
        return amended
    arm.runner.amend_record = in_block
    for index in steps:
        with nvtx_range(step_range(index)):
            arm.runner.one_step("measured", index)


def _finish(arm: Arm) -> None:
    runner = arm.runner
    summary = runner.finish(events.OK)
    with contextlib.suppress(ReaderGone):
        emit(events.FINISHED, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)


def _stop_all(arms: list[Arm], reason: str) -> None:
    """A stop reached the process: every arm still measured ends as cancelled, with what it finished."""
    for arm in arms:
        if arm.code is None:
            with _events_to(arm.events_file):
                arm.code = fail(arm.runner, events.CANCELLED, reason, None, None, code=CANCELLED_CODE)


def _record_sharing(arms: list[Arm], started: float, blocks: int) -> None:
    """Each arm's summary says it shared a process, with whom and what its own share of the time was."""
    ended = time.time()
    for arm in arms:
        path = arm.runner.run_dir / rundir.SUMMARY
        summary = rundir.read_json(path) or {}
        if not summary:
            continue
        summary["ran"] = {"start": started, "end": ended}
        summary["shared_process"] = {"arms": len(arms), "position": arm.position, "own_s": round(arm.own_s, 3),
                                     "blocks": blocks, "measured_in_blocks": arm.blocks,
                                     "phase": "compiled" if arm.runner.cfg.compiles else "eager",
                                     "block_tokens_per_s": _block_rates(arm)}
        error = summary.get("error")
        if error and summary.get("status") == events.OOM and len(arms) > 1:
            error["message"] += f" (in one process with {len(arms) - 1} other configurations)"
        rundir.write_json(path, summary)
        with contextlib.suppress(ReaderGone):
            emit(events.ARM_DONE, arm=arm.position, run_dir=str(arm.runner.run_dir), status=summary.get("status"))


def _block_rates(arm: Arm) -> list[float | None]:
    """tokens/s of each block the arm measured (its steps' median wall time, as a run's tokens/s is of all of them):
    what paired.py pairs with the other arms' same blocks."""
    cfg = arm.runner.cfg
    rates: list[float | None] = []
    for block in arm.blocks:
        walls = [s["wall_ms"] for s in arm.runner.steps if s.get("kind") == "measured" and s.get("block") == block]
        rates.append(cfg.batch * cfg.ctx / (statistics.median(walls) / 1e3) if walls else None)
    return rates


def phases_of_process(arms: list[Arm]) -> list[list[Arm]]:
    """The eager arms, then the arms that compile: once torch.compile has run in a process, the eager steps of a
    model of the same code run slower there (a CS336-style model on an H200: 62 ms, then 77 ms after another copy
    was compiled, 63 ms again after torch._dynamo.reset()), so an eager arm is measured before any compile."""
    eager = [arm for arm in arms if not arm.runner.cfg.compiles]
    return [phase for phase in (eager, [arm for arm in arms if arm.runner.cfg.compiles]) if phase]


def _measure_phase(arms: list[Arm], plan: list[range]) -> None:
    """The phase's smoke tests, then its measured steps in interleaved blocks."""
    for arm in arms:
        _in_arm(arm, partial(_smoke, arm))
        if arm.code == CANCELLED_CODE:
            raise Cancelled("SIGINT")
    for block, steps in enumerate(plan):
        for arm in block_order(arms, block):
            _in_arm(arm, partial(_measure_block, arm, steps, block))
            if arm.code == CANCELLED_CODE:
                raise Cancelled("SIGINT")


def measure(arms: list[Arm], blocks: int) -> None:
    """Each phase's arms (phases_of_process) smoke-tested and measured, then every arm's summary. Block b of a
    compiled arm is paired with block b of the eager arms (paired.py): the same process, not the same moment."""
    started = time.time()
    plan = block_ranges(min((arm.runner.cfg.steps for arm in arms if arm.code is None), default=0), blocks)
    try:
        for phase in phases_of_process([arm for arm in arms if arm.code is None]):
            _measure_phase(phase, plan)
        for arm in [arm for arm in arms if arm.code is None]:
            with _events_to(arm.events_file):
                _finish(arm)
    except (Cancelled, KeyboardInterrupt) as exc:
        _stop_all(arms, f"stopped by {exc or 'SIGINT'}")
    _record_sharing(arms, started, len(plan))


def _arm(position: int, spec: dict) -> Arm:
    run_dir = Path(spec["run_dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    stream = (run_dir / rundir.EVENTS).open("w", buffering=1)
    try:
        cfg = validate(RunConfig.from_dict(spec["config"]), locate_code=False)
    except (ConfigError, TypeError) as exc:
        arm = Arm(Runner(RunConfig(), run_dir), position, stream)
        with _events_to(stream):
            arm.code = fail(arm.runner, events.CONFIG, str(exc), None, None, code=2)
        return arm
    return Arm(Runner(cfg, run_dir), position, stream)


def _room_to_recompile(arms: int) -> None:
    """Each compiled arm recompiles the model's frames for its own shapes, dtype and backend: past dynamo's limit
    per frame (8) a frame would run eager, and a compiled arm would be timed uncompiled."""
    import torch._dynamo.config as dynamo_config

    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 8 * arms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.arms")
    parser.add_argument("--arms-json", required=True, help='[{"run_dir": DIR, "config": {...}}, ...]')
    parser.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help="blocks of measured steps per arm")
    args = parser.parse_args(argv)
    on_stop_signals(deferrable(raise_cancelled))
    dump_stacks_on_request()
    arms = [_arm(position, spec) for position, spec in enumerate(json.loads(args.arms_json))]
    _room_to_recompile(len(arms))
    measure(arms, args.blocks)
    for arm in arms:
        arm.events_file.close()
    return 0 if all(arm.code is None for arm in arms) else 1


if __name__ == "__main__":
    sys.exit(main())
