"""What only the whole traced job gives, added by `sysprof trace` (the process that launched it) once the job has
ended, to the summary of its run directory (rank 0's, where every reader looks):

- warnings from the node's readings over the job (other processes on a GPU, clocks, host load: session/watch.py),
  as a `sysprof run` has them;
- a torchrun job's per-rank table and straggler findings, read back from each rank's own directory: the ranks
  never wait for each other on the tool's account, inside the user's job;
- the kernel tables of the steps nsys captured (--profile-steps), per phase, per rank, as a `sysprof run`'s;
- the memory analysis of the steps whose allocator history was recorded (--memory-steps), per rank, as a
  `sysprof run`'s memory pass has it: read here, not in the job, which only dumped the snapshot."""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sysprof.profiler_core.analysis.rank_readings import with_gpu_readings
from sysprof.profiler_core.analysis.ranks import local_ranks, with_findings
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.errors import SysprofError
from sysprof.profiler_core.readers import MEMORY_SNAPSHOT_READER, ReadOptions
from sysprof.profiler_core.session.analysis import analyze_kernels, analyze_rank_kernels, analyze_snapshot_in
from sysprof.profiler_core.session.backends import Backend
from sysprof.profiler_core.session.live import EventLog
from sysprof.profiler_core.session.rank_checks import ranks_read_back, with_rank_failure
from sysprof.profiler_core.session.watch import MeasuredWatch
from sysprof.trace.summary import loop_summary


def settle_job(run_dir: Path, nproc: int, backend: Backend | None, watch: MeasuredWatch,
               memory_window: tuple[int, int] | None = None) -> list[str]:
    """The summary completed and written again, then the run's last event (whoever follows the run ends with the
    completed summary); what to tell the user (one line each). A job killed before its tracker wrote the summary
    gets one from the steps it wrote (a rank killed by torchrun when another failed)."""
    found = rundir.read_summary(run_dir) or killed_summary(run_dir)
    if found is None:
        return [f"{run_dir} has no summary: the job ended before its first step"]
    summary = dict(found)
    if memory_window is not None and "memory_steps" not in summary:  # killed before its tracker said what it recorded
        dumped = (run_dir / rundir.MEMORY_DIR / rundir.MEMORY_SNAPSHOT).is_file()
        summary["memory_steps"] = list(memory_window) if dumped else None
    log = _event_log(run_dir)
    try:
        summary, said = completed(summary, run_dir, nproc, backend, watch, log)
        try:
            watch.save(run_dir)
            rundir.write_json(run_dir / rundir.SUMMARY, summary)
        except (OSError, SysprofError) as exc:
            said.append(f"could not complete {run_dir / rundir.SUMMARY}: {exc}")
        log(dict(events.finish_event(summary)))  # type: ignore[arg-type]
    finally:
        log.close()
    return said


def _event_log(run_dir: Path) -> EventLog:
    try:
        return EventLog(run_dir, to_stdout=False)
    except OSError:  # the summary's own write says why; the analysis goes on without events
        return EventLog(None, to_stdout=False)


def completed(summary: dict[str, Any], run_dir: Path, nproc: int, backend: Backend | None, watch: MeasuredWatch,
              log: EventLog) -> tuple[dict[str, Any], list[str]]:
    """The summary with what only the whole job gives, each analysis announced as a `sysprof run` announces its
    own (the Live screen shows "analysing", then each screen's file); the lines that say what is missing."""
    said = []
    summary["warnings"] = watch.warnings(summary, rundir.read_steps(run_dir))
    if nproc > 1:
        summary = with_rank_failure(summary, run_dir, nproc)  # the rank that failed first, named
        summary["ranks"] = job_ranks(run_dir, summary, nproc, watch)
    if backend is not None or "memory_steps" in summary:
        log({"event": events.STAGE, "name": "analysing"})
    if backend is not None:
        summary["profile"] = profiled_steps(backend, run_dir, summary, nproc)
        said += _announced(log, "kernels", summary["profile"], "kernel tables unavailable")
    if "memory_steps" in summary:  # the tracker was asked for them (None: it recorded none, and says why)
        summary["memory"] = recorded_memory(run_dir, summary, nproc)
        said += _announced(log, "memory", summary["memory"], "memory analysis unavailable")
    return summary, said


def _announced(log: EventLog, kind: str, record: dict[str, Any], unavailable: str) -> list[str]:
    if error := record.get("error"):
        return [f"{unavailable}: {error}"]
    log({"event": events.ANALYSIS, "kind": kind, "path": record["kernels" if kind == "kernels" else "analysis"]})
    return []


def killed_summary(run_dir: Path) -> dict[str, Any] | None:
    """The summary a killed job's tracker could not write, from its manifest and the steps it wrote."""
    manifest = rundir.read_json(run_dir / rundir.MANIFEST)
    if manifest is None:
        return None
    failure = {"kind": events.KILLED, "message": "the job was killed before its tracker could finish the run",
               "phase": None, "peak_allocated_bytes": None}
    steps: list[dict[str, Any]] = [dict(step) for step in rundir.read_steps(run_dir)]
    return loop_summary(manifest.get("config") or {}, manifest.get("env") or {}, steps,
                        str(run_dir), failure)


def job_ranks(run_dir: Path, summary: dict[str, Any], nproc: int, watch: MeasuredWatch) -> dict[str, Any] | None:
    section = ranks_read_back(run_dir, summary, nproc)
    if section is None:
        return None
    ranks = {"world": nproc, "parallel": None, "batch_per_rank": None, **section}
    return with_findings(with_gpu_readings(ranks, watch.per_gpu_medians(), summary.get("rank")))


def profiled_steps(backend: Backend, run_dir: Path, summary: dict[str, Any], nproc: int) -> dict[str, Any]:
    """The profiled steps' record: which were captured and how much the capture slowed them against the job's other
    measured steps, then the kernel tables (or why there are none)."""
    pass_dir = run_dir / rundir.PROFILED_DIR
    window = summary.get("profiled_steps")  # [first, last] the tracker captured, None when none
    record: dict[str, Any] = {"backend": backend.name, "version": backend.version(), "dir": rundir.PROFILED_DIR,
                              "steps": window, **_slowdown(rundir.read_steps(run_dir), window)}
    if window is None:
        return record | {"error": _window_text(summary) or "no step was profiled"}
    if nproc > 1:
        return record | analyze_rank_kernels(backend, pass_dir, run_dir, local_ranks(summary, nproc))
    return record | analyze_kernels(backend, pass_dir, run_dir)


def recorded_memory(run_dir: Path, summary: dict[str, Any], nproc: int) -> dict[str, Any]:
    """The memory steps' record: which steps the allocator history holds and how much recording slowed them against
    the job's other measured steps, then each rank's snapshot analysed (or why there is none)."""
    window = summary.get("memory_steps")  # [first, last] the tracker recorded, None when none
    record: dict[str, Any] = {
        "status": summary["status"], "dir": rundir.MEMORY_DIR, "steps": window,
        "note": "allocator history is recorded over the chosen steps only: it slows the steps it records",
        **_slowdown(rundir.read_steps(run_dir), window)}
    if window is None:
        return record | {"error": _window_text(summary, "memory steps") or "the job ended before any was dumped"}
    label = f"{summary['config'].get('model')} (traced loop)"
    record |= _rank_memory(run_dir, rundir.MEMORY_DIR, label, "no allocator snapshot was written")
    if nproc > 1:
        (first, _), *others = local_ranks(summary, nproc)
        own = {"error": f"rank {first}: {record['error']}"} if record.get("error") else \
            {"peak_allocated_bytes": record["peak_allocated_bytes"], "analysis": record["analysis"]}
        record["ranks"] = [{"rank": first, **own}, *(_rank_row(run_dir, rank, local, label) for rank, local in others)]
    return record


def _rank_row(run_dir: Path, rank: int, local: int, label: str) -> dict[str, Any]:
    """Another rank's snapshot, in its own directory (ranks/NN/memory, as its tracker wrote it)."""
    where = f"{rundir.rank_dir(Path(), rank, local).as_posix()}/{rundir.MEMORY_DIR}"
    found = _rank_memory(run_dir, where, label, "no allocator snapshot was written")
    return {"rank": rank, **({"error": f"rank {rank}: {found['error']}"} if found.get("error") else found)}


def _rank_memory(run_dir: Path, where: str, label: str, missing: str) -> dict[str, Any]:
    try:
        found = analyze_snapshot_in(run_dir / where, where, _snapshot_analysis, label, missing)
    except OSError as exc:  # the analysis could not be written beside the snapshot
        return {"error": f"cannot write the memory analysis: {exc}"}
    return dict(found)


def _snapshot_analysis(snapshot: Path) -> dict:
    analysis = MEMORY_SNAPSHOT_READER.read(snapshot, ReadOptions())
    analysis["notes"] = [*analysis.get("notes", []), "no predicted memory for a traced loop: its model is yours",
                         "a traced loop gives no attention shape: its attention scores count as activations"]
    return analysis


def _window_text(summary: dict[str, Any], kind: str = "profiled steps") -> str | None:
    return next((f["text"] for f in summary.get("findings") or [] if f.get("kind") == kind), None)


def _slowdown(steps: Sequence[Mapping[str, Any]], window: list[int] | None) -> dict[str, Any]:
    if window is None:
        return {}
    inside = [s["wall_ms"] for s in steps if s.get("kind") == "measured" and window[0] <= s["index"] <= window[1]]
    others = [s["wall_ms"] for s in steps if s.get("kind") == "measured" and not window[0] <= s["index"] <= window[1]]
    clean, recorded = (statistics.median(v) if v else None for v in (others, inside))
    return {"clean_median_ms": clean, "recorded_median_ms": recorded,
            "inflation": recorded / clean if clean and recorded else None}
