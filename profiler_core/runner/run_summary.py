"""The summary a runner writes as it ends (summary.json): the steps' figures, with what only the runner knows beside
them (the measured stretch's energy, its rank, the compile's CUDA graphs, the memory snapshot), and on rank 0 of a
distributed run every rank's record.

Apart from the steps (engine.py): it is written once, whichever way the run ended, a failure's included
(failures.py), and it must still come out on a full disk.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sysprof.profiler_core.analysis.energy import energy_section
from sysprof.profiler_core.analysis.metrics import build_summary
from sysprof.profiler_core.analysis.ranks import all_ranks_throughput, rank_record, ranks_section
from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.records import RunError, RunSummary
from sysprof.profiler_core.runner import distributed
from sysprof.profiler_core.runner.capture import MemoryHistory
from sysprof.profiler_core.runner.workload import cuda_graph_report

if TYPE_CHECKING:  # the runner hands itself in: only its type is needed
    from sysprof.profiler_core.runner.engine import Runner


def write_summary(runner: Runner, status: str, error: RunError | None) -> RunSummary:
    """The run's summary, also written to summary.json where the disk has room for it."""
    work = getattr(runner, "work", None)  # none before the build, nor once a shared process released a failed arm's
    info = getattr(work, "model_info", None)
    summary = build_summary(runner.cfg, runner.env, runner.steps, status, str(runner.run_dir), runner.compile_s,
                            error, params=info["params"] if info else None,
                            flops=info.get("flops_per_step") if info else None)
    energy = _energy(runner) if status == events.OK else None  # a failed step's joules: in no step
    if energy:
        summary["energy"] = energy
    if runner.rank:
        summary["rank"] = {"rank": runner.rank.rank, "local_rank": runner.rank.local_rank, "world": runner.rank.world}
    compiled = cuda_graph_report(runner.cfg, work.device) if work is not None else None
    if compiled:
        summary["compile"] = compiled
    if runner.history:
        _keep_memory_snapshot(runner.history, summary)
    try:
        rundir.write_json(runner.run_dir / rundir.SUMMARY, summary)
    except OSError as exc:
        if not disk_space.is_disk_full(exc):
            raise  # on a full disk the last event still carries the summary: the session writes it if it can
    return summary


def _keep_memory_snapshot(history: MemoryHistory, summary: RunSummary) -> None:
    try:
        history.dump_and_stop()  # still recording after an OOM: the snapshot shows what led up to it
    except OSError as exc:
        if not disk_space.is_disk_full(exc):
            raise
        history.path.unlink(missing_ok=True)  # half a snapshot: the summary needs the space
    if history.path.exists():
        summary["memory_snapshot"] = history.path.name


def _energy(runner: Runner) -> dict | None:
    meter = runner.energy
    if meter is None:
        return None
    return energy_section(meter.joules, meter.spans_s, meter.steps, runner.cfg.batch * runner.cfg.ctx,
                          meter.power_limit_w, meter.clocks_mhz)


def gather_ranks(runner: Runner, summary: RunSummary) -> RunSummary:
    """Every rank's record on rank 0, once all have finished their steps: the per-rank table in its summary."""
    assert runner.rank is not None
    device = str(runner.work.device)
    records = distributed.gather(rank_record(runner.rank.rank, summary, runner.steps, device), runner.rank)
    if records is None:
        return summary
    section = ranks_section(records)
    summary["ranks"] = {"world": runner.rank.world, "parallel": runner.cfg.parallel,
                        "batch_per_rank": runner.cfg.batch,
                        "tokens_per_s_all_ranks": all_ranks_throughput(section["rows"]), **section}
    rundir.write_json(runner.run_dir / rundir.SUMMARY, summary)
    return summary
