"""The runner: `python -m sysprof.profiler_core.runner --run-dir DIR --config-json JSON`.

Runs warm-up and measured steps in its own process and reports each as a JSON event on stdout. It writes
the run directory itself, so the directory is complete even if whoever launched it has gone away.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from sysprof.models.nvtx import nvtx_range
from sysprof.models.phases import COMPILE_RANGE, WARMUP_RANGE, step_range
from sysprof.profiler_core.analysis.energy import energy_section
from sysprof.profiler_core.analysis.metrics import build_summary
from sysprof.profiler_core.analysis.ranks import all_ranks_throughput, rank_record, ranks_section
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig, validate
from sysprof.profiler_core.base.events import CAPTURES, SCHEMA_VERSION, ReaderGone, emit
from sysprof.profiler_core.base.options import config_to_args
from sysprof.profiler_core.base.records import RunError, RunSummary, StepRecord
from sysprof.profiler_core.base.stop_signals import (
    STOP_SIGNALS,
    deferrable,
    dump_stacks_on_request,
    held_stop_signals,
    on_stop_signals,
)
from sysprof.profiler_core.runner import distributed
from sysprof.profiler_core.runner.capture import MemoryHistory, measured_capture
from sysprof.profiler_core.runner.energy import EnergyMeter
from sysprof.profiler_core.runner.environment import collect_env
from sysprof.profiler_core.runner.hold import NotNeeded, wait_for_release
from sysprof.profiler_core.runner.inspect_model import counted_step_flops
from sysprof.profiler_core.runner.module_ranges import (
    ModuleRanges,
    describe_modules,
    install_module_ranges,
    tags_supported,
)
from sysprof.profiler_core.runner.timing import StepInstruments, run_step, synchronize
from sysprof.profiler_core.runner.user_model import attention_note
from sysprof.profiler_core.runner.workload import (
    Workload,
    build_workload,
    check_dtype_support,
    cuda_graph_report,
    resolve_device,
)


class Cancelled(Exception):
    """SIGINT or SIGTERM arrived: stop, keep what finished, report it."""


class StepFailure(Exception):
    def __init__(self, kind: str, message: str, phase: str | None, peak_bytes: int | None):
        super().__init__(message)
        self.kind, self.phase, self.peak_bytes = kind, phase, peak_bytes


def _ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def raise_cancelled(signum: int, _frame: object) -> None:
    # One stop is enough: a second one (the terminal's Ctrl-C and the launcher's own SIGINT) arriving while
    # the summary is written would cut it short.
    _ignore_stop_signals()
    raise Cancelled(signal.Signals(signum).name)


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
        command = ["sysprof", "run", *config_to_args(self.cfg)]
        rundir.write_json(self.run_dir / rundir.MANIFEST, {
            "schema": SCHEMA_VERSION, "config": self.cfg.to_dict(), "env": self.env,
            "command": " ".join(command), "argv": command, "capture": self.capture, "started": time.time()})
        if self.capture in ("torch", "memory") and device.type != "cuda":
            raise ConfigError(f"{self.capture} capture records CUDA activity; device {device.type} has none")
        emit(events.HELLO, schema=SCHEMA_VERSION, env=self.env, config=self.cfg.to_dict(), run_dir=str(self.run_dir),
             capture=self.capture)
        emit(events.STAGE, name="build")
        self.work = self.build(device)
        self.tools = StepInstruments(device)
        self.energy = EnergyMeter(device)
        if self.work.model_info:
            if self.capture == "none":  # MFU is the clean pass's: the profiled and memory passes need no count
                self.count_user_model_flops(self.work.model_info)
            self.announce_user_model(self.work.model_info)
        self.record_in_manifest(model=self.work.model_info, optimizer=self.work.optimizer_info,
                                precision=self.work.precision_info,
                                activation_checkpointing=self.work.checkpointing_info)
        self.install_module_ranges()

    def build(self, device: torch.device) -> Workload:
        if not self.rank:
            return build_workload(self.cfg, device)
        # A forward-only step has nothing to share: each rank runs its own (DDP refuses a model without gradients).
        share = distributed.wrapper(self.cfg, device) if self.cfg.mode != "forward" else None
        work = build_workload(self.cfg, device, share, self.rank.rank)
        work.before_forward = distributed.slow_forward(self.rank, device)
        return work

    def count_user_model_flops(self, info: dict) -> None:
        """The closed form is the built-in model's: the user's FLOPs are counted, on a meta copy, for its MFU."""
        info["flops_per_step"], why_not = counted_step_flops(self.cfg)
        if why_not:
            emit(events.NOTICE, message=why_not)
        emit(events.MODEL, params=info["params"], flops_per_step=info["flops_per_step"])

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

    def record_in_manifest(self, **entries: dict | None) -> None:
        """What was built (the user's model, the optimizer): enough to reproduce it, beside the config."""
        manifest = rundir.read_json(self.run_dir / rundir.MANIFEST) or {}
        rundir.write_json(self.run_dir / rundir.MANIFEST, manifest | {k: v for k, v in entries.items() if v})

    def announce_user_model(self, info: dict) -> None:
        where = (f"{info.get('file', info['factory'])} (sha256 {info['sha256'][:12]})" if "sha256" in info
                 else info["factory"])
        emit(events.NOTICE, message=f"model {info['class']} from {where}: {info['params']:,} parameters, "
                                    f"kwargs {info['kwargs']}")
        unused_attention = attention_note(self.cfg, info["kwargs"])
        if unused_attention:
            emit(events.NOTICE, message=unused_attention)

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
        _ignore_stop_signals()  # failures other than a cancel end here too: no signal may cut the summary short
        info = getattr(getattr(self, "work", None), "model_info", None)
        summary = build_summary(self.cfg, self.env, self.steps, status, str(self.run_dir), self.compile_s, error,
                                params=info["params"] if info else None,
                                flops=info.get("flops_per_step") if info else None)
        work = getattr(self, "work", None)
        energy = self.energy_section() if status == events.OK else None  # a failed step's joules: in no step
        if energy:
            summary["energy"] = energy
        if self.rank:
            summary["rank"] = {"rank": self.rank.rank, "local_rank": self.rank.local_rank, "world": self.rank.world}
        compiled = cuda_graph_report(self.cfg, work.device) if work is not None else None
        if compiled:
            summary["compile"] = compiled
        if self.history:
            try:
                self.history.dump_and_stop()  # still recording after an OOM: the snapshot shows what led up to it
            except OSError as exc:
                if not rundir.is_disk_full(exc):
                    raise
                self.history.path.unlink(missing_ok=True)  # half a snapshot: the summary needs the space
            if self.history.path.exists():
                summary["memory_snapshot"] = self.history.path.name
        try:
            rundir.write_json(self.run_dir / rundir.SUMMARY, summary)
        except OSError as exc:
            if not rundir.is_disk_full(exc):
                raise  # on a full disk the last event still carries the summary: the session writes it if it can
        return summary

    def energy_section(self) -> dict | None:
        meter = self.energy
        if meter is None:
            return None
        return energy_section(meter.joules, meter.spans_s, meter.steps, self.cfg.batch * self.cfg.ctx,
                              meter.power_limit_w, meter.clocks_mhz)

    def gather_ranks(self, summary: RunSummary) -> RunSummary:
        """Every rank's record on rank 0, once all have finished their steps: the per-rank table in its summary."""
        assert self.rank is not None
        device = str(self.work.device)
        records = distributed.gather(rank_record(self.rank.rank, summary, self.steps, device), self.rank)
        if records is None:
            return summary
        section = ranks_section(records)
        summary["ranks"] = {"world": self.rank.world, "parallel": self.cfg.parallel, "batch_per_rank": self.cfg.batch,
                            "tokens_per_s_all_ranks": all_ranks_throughput(section["rows"]), **section}
        rundir.write_json(self.run_dir / rundir.SUMMARY, summary)
        return summary


def _current_phase(runner: Runner) -> str | None:
    """The phase a failure happened in; None between two steps (the last step's phase had ended)."""
    if not runner.tools:
        return "build"
    return runner.tools.current_phase or (None if runner.steps else "start")


def _classify(exc: BaseException) -> tuple[str, str]:
    inner = getattr(exc, "inner_exception", None)
    if isinstance(inner, BaseException):  # torch.compile's wrapper: its own first line names only the backend
        kind, message = _classify(inner)
        return kind, f"{message} (inside torch.compile: {type(exc).__name__})"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "CUDA" in text or "cuda" in type(exc).__module__:
        return "cuda", text
    return "error", f"{type(exc).__name__}: {text}"


def _unwrapped(exc: BaseException) -> BaseException:
    """The stop, the OOM or the lost reader that another library wrapped: torch.compile re-raises whatever
    interrupts a compile as BackendCompilerFailed (a SIGTERM during a compile read as a failed run). Only a wrapper's
    own link is followed (its inner_exception, or `raise … from`): an error raised while handling another (its
    __context__, e.g. a model's own fallback after an OOM) is an error of its own, and the tool's verdicts stand."""
    seen: set[int] = set()
    inner: BaseException | None = exc
    while inner is not None and id(inner) not in seen:
        if isinstance(inner, (StepFailure, ConfigError, NotNeeded)):
            return exc
        if isinstance(inner, (Cancelled, KeyboardInterrupt, ReaderGone, torch.OutOfMemoryError)):
            return inner
        seen.add(id(inner))
        inner = getattr(inner, "inner_exception", None) or inner.__cause__
    return exc


def unwrapping(work: Callable[[], None]) -> None:
    """work(), with the stop, the OOM or the lost reader another library wrapped raised as itself."""
    try:
        work()
    except Exception as exc:
        inner = _unwrapped(exc)
        if inner is exc:
            raise
        raise inner from None  # the wrapper only carried it (and keeps it: no cause cycle between the two)


def _start_and_measure(runner: Runner) -> None:
    runner.start()
    runner.run_steps()


def guarded(runner: Runner, work: Callable[[], None]) -> int | None:
    """Run the runner's work; None when it finished, else the exit code once the failure is reported (its summary
    written and its last event sent): every way out of a failed run goes through here."""
    try:
        unwrapping(work)
    except NotNeeded:  # held and never released: nothing was written, nothing to report
        return 0
    except ConfigError as exc:
        return fail(runner, events.CONFIG, str(exc), None, None, code=2)
    except StepFailure as exc:
        return fail(runner, exc.kind, str(exc), exc.phase, exc.peak_bytes)
    except (Cancelled, KeyboardInterrupt) as exc:
        return fail(runner, events.CANCELLED, f"stopped by {exc or 'SIGINT'}", None, None, code=CANCELLED_CODE)
    except ReaderGone:  # the session or `sysprof run` that started it is gone: not an error in the last phase run
        return fail(runner, events.DIED, "the process reading its events went away (the session or `sysprof run` "
                                          f"that started it ended): {_stopped_after(runner)}", None, None)
    except torch.OutOfMemoryError as exc:  # outside a step: building the model or compiling it
        peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
        return fail(runner, events.OOM, str(exc).splitlines()[0], _current_phase(runner), peak)
    except Exception as exc:  # a crash of the workload is a result to report, not a crash of the tool
        if rundir.is_disk_full(exc):  # our own writes: stderr.log is on the same full disk
            return fail(runner, events.DISK_FULL, _disk_full_message(exc, runner), None, None)
        traceback.print_exc(file=sys.stderr)
        kind, message = _classify(exc)
        return fail(runner, kind, message, _current_phase(runner), None)
    return None


CANCELLED_CODE = 130


def execute(runner: Runner) -> int:
    """Run and report; every way out writes summary.json and a last event."""
    code = guarded(runner, lambda: _start_and_measure(runner))
    if code is not None:
        return code
    summary = runner.finish(events.OK)
    if runner.rank:
        summary = runner.gather_ranks(summary)
        distributed.leave()
    with contextlib.suppress(ReaderGone):  # it finished and its summary is written: nobody left to tell is no failure
        emit(events.FINISHED, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)
    return 0


def _disk_full_message(exc: BaseException, runner: Runner) -> str:
    where = getattr(exc, "filename", None) or runner.run_dir
    return f"no space left on the device ({where}): {_stopped_after(runner)}"


def _stopped_after(runner: Runner) -> str:
    done = sum(1 for step in runner.steps if step["kind"] == "measured")
    return f"stopped after {done} of {runner.cfg.steps} measured steps; the steps written before are kept"


def fail(runner: Runner, kind: str, message: str, phase: str | None, peak: int | None, code: int = 1) -> int:
    error: RunError = {"kind": kind, "message": message, "phase": phase, "peak_allocated_bytes": peak}
    status = events.OOM if kind == events.OOM else events.FAILED_STATUS  # a cancel is a failed run of kind "cancelled"
    summary = runner.finish(status, error)
    with contextlib.suppress(ReaderGone):  # the summary is written: a launcher that is gone is told nothing more
        emit(events.FAILED, **error, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)
    return code


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
