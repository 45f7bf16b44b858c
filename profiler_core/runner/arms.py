"""Several configurations in one runner process, measured in interleaved blocks:
`python -m sysprof.profiler_core.runner.arms --arms-json JSON [--blocks N]`, JSON a list of {"run_dir", "config"}.

A fresh process costs seconds to tens of seconds before its first step (imports, the CUDA context, the model's
build): on a 100 ms step that is most of what measuring a candidate costs. Here each configuration is an arm with
its own model, optimizer and batch, built from the same seed (so their losses after as many updates compare), and its
own run directory written as any runner's (manifest, steps.jsonl, summary.json; its events in events.jsonl). Every
arm first builds, compiles and warms up: its smoke test (smoke_test.py), where one that fails (a compile that breaks,
an optimizer that cannot be compiled, an OOM) ends with its reason at that cost while the others go on. Then the
measured steps run in blocks, the arms in order and the order reversed every other block (A B C, C B A, …), so drift
inside the process (clocks, a neighbour) hits every arm alike. Arms that compile come after every eager arm, in a
phase of their own (phases_of_process): a compile in the process slows the eager steps of models of the same code.

One such process is still one process: its allocator, autotuning and clocks are shared by its arms (what each arm's
summary reports as its own share is shared_process.py's). The launcher runs several (session/arms.py) and each arm's
median in each process is one observation, as a fresh process's is.
stdout carries one "arm_done" event per arm as it ends.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TextIO

import torch

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.events import ReaderGone, emit
from sysprof.profiler_core.base.records import StepRecord
from sysprof.profiler_core.base.stop_signals import deferrable, dump_stacks_on_request, on_stop_signals
from sysprof.profiler_core.runner.engine import Runner
from sysprof.profiler_core.runner.failures import CANCELLED_CODE, Cancelled, fail, guarded, raise_cancelled
from sysprof.profiler_core.runner.shared_process import Arm, cudagraph_skips, own_memory, record_sharing, release
from sysprof.profiler_core.runner.smoke_test import smoke_test

DEFAULT_BLOCKS = 4
MIN_BLOCK_STEPS = 3  # a block's median must not rest on its first step after a switch of arms


class Stopped(Exception):
    """The process must stop: a stop signal, or nobody reads its events any more."""

    def __init__(self, reason: str, kind: str = events.CANCELLED):
        super().__init__(reason)
        self.kind = kind


def block_ranges(steps: int, blocks: int) -> list[range]:
    """The measured step indices in contiguous blocks of near-equal length, each of MIN_BLOCK_STEPS or more where
    the steps allow."""
    count = max(1, min(blocks, steps // MIN_BLOCK_STEPS))
    bounds = [round(i * steps / count) for i in range(count + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(count)]


def block_order(arms: list[Arm], block: int) -> list[Arm]:
    """The arms still measured, in order in even blocks and reversed in odd ones."""
    live = [arm for arm in arms if arm.code is None and not arm.finished]
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
    """Run an arm's work with its own matmul precision and memory account; a failure ends the arm, not the process,
    and a stop ends them all (Stopped)."""
    torch.set_float32_matmul_precision(arm.runner.cfg.matmul_precision)  # a process-wide setting: each arm's own
    on_cuda = torch.cuda.is_available() and arm.runner.cfg.device != "cpu"
    others = torch.cuda.memory_allocated() - arm.resident if on_cuda else 0
    arm.runner.amend_record = lambda record: own_memory(arm, record, others)
    started, skips = time.perf_counter(), cudagraph_skips()
    with _events_to(arm.events_file):
        arm.code = guarded(arm.runner, work)
    arm.own_s += time.perf_counter() - started
    arm.cudagraph_skips += cudagraph_skips() - skips
    if arm.code is None:
        return
    release(arm)
    if arm.code == CANCELLED_CODE:
        raise Stopped(_error_of(arm) or "stopped")
    listen_for_stops()  # a failed arm's summary turned stops off while it was written; the others still run


def listen_for_stops() -> None:
    """Ctrl-C, a launcher's stop, a terminal's hang-up: each ends every arm with its summary."""
    on_stop_signals(deferrable(raise_cancelled))


def _error_of(arm: Arm) -> str | None:
    summary = rundir.read_json(arm.runner.run_dir / rundir.SUMMARY) or {}
    return (summary.get("error") or {}).get("message")


def _measure_block(arm: Arm, steps: range, block: int, min_s: float = 0.0) -> None:
    """The block's steps of the arm (indices going on from its last block's), for at least min_s seconds."""
    arm.blocks.append(block)
    amend = arm.runner.amend_record

    def in_block(record: StepRecord) -> StepRecord:
        amended = StepRecord(**(amend(record) if amend else record))
        amended["block"] = block
        return amended
    arm.runner.amend_record = in_block
    arm.measured += arm.runner.measured_steps(range(arm.measured, arm.measured + len(steps)), min_s)


def _finish(arm: Arm) -> None:
    runner = arm.runner
    with _events_to(arm.events_file):
        summary = runner.finish(events.OK)
        with contextlib.suppress(ReaderGone):
            emit(events.FINISHED, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)
    arm.finished = True
    listen_for_stops()  # finish() turned stops off while the summary was written


def _stop_all(arms: list[Arm], stop: Stopped) -> None:
    """The process stops: every arm still measured ends with what it finished (a cancel, or died when nobody reads
    the events any more); an arm already finished keeps its summary."""
    for arm in arms:
        if arm.code is None and not arm.finished:
            with _events_to(arm.events_file):
                arm.code = fail(arm.runner, stop.kind, str(stop), None, None, code=CANCELLED_CODE)


def phases_of_process(arms: list[Arm]) -> list[list[Arm]]:
    """The eager arms, then the arms that compile: once torch.compile has run in a process, the eager steps of a
    model of the same code run slower there (a CS336-style model on an H200: 62 ms, then 77 ms after another copy
    was compiled, 63 ms again after torch._dynamo.reset()), so an eager arm is measured before any compile."""
    eager = [arm for arm in arms if not arm.runner.cfg.compiles]
    return [phase for phase in (eager, [arm for arm in arms if arm.runner.cfg.compiles]) if phase]


def _measure_phase(arms: list[Arm], plan: list[range], min_block_s: float) -> None:
    """The phase's smoke tests, then its measured steps in interleaved blocks (each an arm's for at least
    min_block_s), then its arms' summaries (a stop during a later phase keeps them)."""
    for arm in arms:
        _in_arm(arm, partial(smoke_test, arm.runner, arm.smoke_s))
    for block, steps in enumerate(plan):
        for arm in block_order(arms, block):
            _in_arm(arm, partial(_measure_block, arm, steps, block, min_block_s))
        try:  # one line a block on the process's own stdout: a launcher that went away is noticed here
            emit(events.STAGE, name="block", block=block, of=len(plan))
        except ReaderGone:
            raise Stopped("the process reading its events went away", events.DIED) from None
    for arm in [arm for arm in arms if arm.code is None]:
        _finish(arm)


def measure(arms: list[Arm], blocks: int, min_block_s: float = 0.0) -> None:
    """Each phase's arms (phases_of_process) smoke-tested and measured, then every arm's summary. Block b of a
    compiled arm is paired with block b of the eager arms (paired.py): the same process, not the same moment."""
    started = time.time()
    plan = block_ranges(min((arm.runner.cfg.steps for arm in arms if arm.code is None), default=0), blocks)
    try:
        for phase in phases_of_process([arm for arm in arms if arm.code is None]):
            _measure_phase(phase, plan, min_block_s)
    except Stopped as stop:
        _stop_all(arms, stop)
    except (Cancelled, KeyboardInterrupt) as exc:  # a stop between two arms' work
        _stop_all(arms, Stopped(f"stopped by {exc or 'SIGINT'}"))
    record_sharing(arms, started, len(plan))


def _arm(position: int, spec: dict) -> Arm:
    arm = _built_arm(position, spec)
    arm.smoke_s = spec.get("smoke_s")
    return arm


def _built_arm(position: int, spec: dict) -> Arm:
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


def _room_to_recompile(arms: list[Arm]) -> None:
    """Each compiled arm recompiles the model's frames for its own shapes, dtype and backend: past dynamo's limit
    per frame (8) a frame would run eager, and a compiled arm would be timed uncompiled."""
    if not any(arm.runner.cfg.compiles for arm in arms):
        return
    import torch._dynamo.config as dynamo_config

    name = "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit"  # older torch
    setattr(dynamo_config, name, max(getattr(dynamo_config, name), 8 * len(arms)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.arms")
    parser.add_argument("--arms-json", required=True, help='[{"run_dir": DIR, "config": {...}}, ...]')
    parser.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help="blocks of measured steps per arm")
    parser.add_argument("--min-block-s", type=float, default=0.0,
                        help="each arm's block goes on past its steps until it has lasted this long (energy)")
    args = parser.parse_args(argv)
    listen_for_stops()
    dump_stacks_on_request()
    arms = [_arm(position, spec) for position, spec in enumerate(json.loads(args.arms_json))]
    listen_for_stops()  # an arm whose config was refused wrote its summary with stops held off
    try:
        _room_to_recompile(arms)
        measure(arms, args.blocks, args.min_block_s)
    finally:
        for arm in arms:
            arm.events_file.close()
    return 0 if all(arm.code is None for arm in arms) else 1


if __name__ == "__main__":
    sys.exit(main())
