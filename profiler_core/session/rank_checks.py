"""Several ranks, as the session sees them: whether the node has a GPU per rank (NVML, before anything starts),
which rank failed when a run of several did not finish ok, and what the ranks that measured steps show (from the
ranks' directories)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sysprof.profiler_core.analysis.ranks import all_ranks_throughput, local_ranks, rank_record, ranks_section
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_count


def gpus_problem(cfg: RunConfig, visible: int | None = None) -> str | None:
    """--nproc on GPUs takes one visible GPU per rank; on a node without GPUs (device auto) the ranks are CPU
    processes. Checked before anything starts: NVML answers in milliseconds, a launch takes seconds.
    visible: the count already asked (the Configure form asks once, not at every keystroke)."""
    if cfg.device == "cuda" and not cfg.distributed:  # refused here, not by a runner seconds after it started
        visible = visible_gpu_count() if visible is None else visible
        return None if visible else "--device cuda: no CUDA GPU is visible here (CUDA_VISIBLE_DEVICES, nvidia-smi)"
    if not cfg.distributed or cfg.device not in ("auto", "cuda"):
        return None
    visible = visible_gpu_count() if visible is None else visible
    if (cfg.device == "cuda" or visible > 0) and cfg.nproc > visible:
        return f"--nproc {cfg.nproc} needs one GPU per rank; {visible} visible here (CUDA_VISIBLE_DEVICES, nvidia-smi)"
    return None


def with_rank_failure(summary: dict[str, Any], run_dir: Path, nproc: int) -> dict[str, Any]:
    """A run whose first rank did not finish ok takes the reason of the rank that failed first, named."""
    found = rank_failure(run_dir, nproc) if summary.get("status") != events.OK else None
    if found is None:
        return summary
    rank, error = found
    error = {**error, "message": f"rank {rank}: {error.get('message')}" if rank is not None else error["message"]}
    status = events.OOM if error.get("kind") == events.OOM else events.FAILED_STATUS
    return {**summary, "status": status, "error": error, "state": events.run_state({"status": status, "error": error})}


def rank_failure(run_dir: Path, nproc: int) -> tuple[int | None, dict[str, Any]] | None:
    """The first of this node's other ranks that did not finish ok, with its error; a rank that left no summary
    was killed. (None, error) when a rank of the node left no directory at all.

    torchrun stops every rank when one fails, so the first rank's own record then says "cancelled": the reason is
    in the rank that failed."""
    found = sorted((run_dir / rundir.RANKS_DIR).glob("[0-9]*")) if (run_dir / rundir.RANKS_DIR).is_dir() else []
    failed = []
    for directory in found:
        summary = rundir.read_summary(directory)
        if summary is None:
            return int(directory.name), {"kind": events.KILLED,
                                         "message": "exited without a summary (killed, or lost its host)"}
        error: dict[str, Any] = dict(summary.get("error") or {})
        if summary.get("status") != events.OK and error.get("kind") != events.CANCELLED:
            failed.append((directory, error or {"kind": events.FAILED_STATUS, "message": summary.get("status")}))
    if failed:  # the first to fail: the others' errors (a peer's closed connection) follow from it
        directory, error = min(failed, key=lambda found: (found[0] / rundir.SUMMARY).stat().st_mtime)
        return int(directory.name), error
    if len(found) < nproc - 1:
        return None, {"kind": events.KILLED, "message": f"{nproc - 1 - len(found)} of this node's ranks exited "
                                                        "before writing anything"}
    return None


def surviving_ranks(run_dir: Path, summary: dict[str, Any], cfg: RunConfig) -> dict[str, Any] | None:
    """A run whose ranks never reached the gather (one failed or was killed): the per-rank table and the per-step
    test of this node's ranks that measured steps (their steps.jsonl), the others named. None: none measured any."""
    section = ranks_read_back(run_dir, summary, cfg.nproc)
    if section is None:
        return None
    return {"world": cfg.nproc * cfg.nnodes, "parallel": cfg.parallel, "batch_per_rank": cfg.batch, **section}


def ranks_read_back(run_dir: Path, summary: dict[str, Any], nproc: int) -> dict[str, Any] | None:
    """The ranks section of this node's ranks from their own directories (each rank's summary and steps.jsonl): the
    rows, the per-step test and the findings, with the job's tokens/s; the ranks that measured no step named. None:
    none measured any."""
    records, without = [], []
    for rank, local in local_ranks(summary, nproc):
        directory = rundir.rank_dir(run_dir, rank, local)
        own = summary if local == 0 else rundir.read_summary(directory)
        steps = rundir.read_steps(directory) if directory.is_dir() else []
        if not any(step.get("kind") == "measured" for step in steps):
            without.append(rank)
            continue
        records.append(rank_record(rank, own or {"status": events.KILLED}, steps))
    if not records:
        return None
    kept = ", ".join(str(r["rank"]) for r in records)
    missing = [f"rank {rank} measured no step before the run stopped: the per-step test covers rank(s) {kept}"
               for rank in without]
    section = ranks_section(records, missing)
    return {"tokens_per_s_all_ranks": all_ranks_throughput(section["rows"]), **section}
