"""Turn a finished profiled or memory pass into the analysis files the app and `sysprof analyze` read.

pandas and numpy load when a pass is analysed, not when the session starts: a run without a profiler needs neither.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import DTYPE_BYTES, RunConfig
from sysprof.profiler_core.base.errors import KernelReportError, SnapshotError
from sysprof.profiler_core.base.records import PassRecord, RunSummary
from sysprof.profiler_core.memory.accounting import compare_predicted, predict_run_memory
from sysprof.profiler_core.readers import MEMORY_SNAPSHOT_READER, ReadOptions

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution
    from sysprof.profiler_core.session.backends import Backend


def attention_shape(cfg: RunConfig) -> dict | None:
    """What the attention FLOPs table needs (batch, heads, ctx, d_head): None for SDPA, which has no sub-ranges,
    and for a model of your own, whose attention is not ours."""
    if cfg.model_factory is not None or cfg.attention != "naive":
        return None
    spec = cfg.spec()
    return {"batch": cfg.batch, "heads": spec.heads, "ctx": cfg.ctx, "d_head": spec.d_head}


def analyze_kernels(backend: Backend, pass_dir: Path, run_dir: Path, kernels_dir: Path | None = None,
                    shape: dict | None = None) -> PassRecord:
    """The kernel tables of a profiled pass in run_dir/kernels (or kernels_dir: one rank's); {"error": reason}
    when there is nothing to read. `shape`: attention_shape."""
    try:
        attribution = backend.attribute(pass_dir)
    except KernelReportError as exc:
        return {"error": str(exc)}
    kernels_dir = kernels_dir or run_dir / rundir.KERNELS_DIR
    analysis = write_kernel_tables(attribution, kernels_dir, str(pass_dir.relative_to(run_dir)), backend.name, shape)
    steps = max(len(analysis["steps"]), 1)
    return {"kernels": str((kernels_dir / rundir.ANALYSIS).relative_to(run_dir)),
            "phase_kernels": str((kernels_dir / rundir.PHASE_KERNELS).relative_to(run_dir)),
            "gemm_fraction": analysis["gemm_fraction"], "notes": analysis["notes"],
            "gpu_ms_per_step": analysis["totals"]["gpu_ns"] / steps / 1e6,
            "communication": analysis["communication"]}


def write_kernel_tables(attribution: KernelAttribution, kernels_dir: Path, source: str, source_kind: str,
                        shape: dict | None) -> dict:
    """analysis.json, phase_kernels.csv and, with naive attention, attention_kernels.csv; the analysis."""
    from sysprof.profiler_core.kernels.attention_flops import profiled_flops_rows
    from sysprof.profiler_core.kernels.kernel_stats import attention_kernel_table
    from sysprof.profiler_core.kernels.summary import analyze_attribution, phase_kernel_table

    kernels_dir.mkdir(parents=True, exist_ok=True)
    analysis = analyze_attribution(attribution, source, source_kind)
    analysis["attention"] |= {"shape": shape, "flops": profiled_flops_rows(analysis["attention"], shape)}
    rundir.write_json(kernels_dir / rundir.ANALYSIS, analysis)
    phase_kernel_table(attribution).to_csv(kernels_dir / rundir.PHASE_KERNELS, index=False)
    parts = attention_kernel_table(attribution)
    if not parts.empty:
        parts.to_csv(kernels_dir / rundir.ATTENTION_KERNELS, index=False)
    return analysis


def analyze_rank_kernels(backend: Backend, pass_dir: Path, run_dir: Path, ranks: list[tuple[int, int]],
                         shape: dict | None = None) -> PassRecord:
    """Each of this node's ranks' reports analysed as a single run's: the first rank's tables where a single run
    keeps them (kernels/, so every reader of a run reads it), the others' in kernels/ranks/NN; `ranks` lists every
    rank's analysis or its own reason for having none (no report, an unreadable one)."""
    backend.place_rank_outputs(pass_dir)
    first, rows = None, []
    for rank, local in ranks:
        own = run_dir / rundir.KERNELS_DIR / (rundir.rank_dir(Path(), rank, local))
        record = analyze_kernels(backend, rundir.rank_dir(pass_dir, rank, local), run_dir, own, shape)
        first = first or record
        rows.append(rank_kernel_row(rank, record))
    return {**(first or {}), "ranks": rows}


def rank_kernel_row(rank: int, record: PassRecord) -> dict:
    """One rank's line of the all-ranks kernel summary: GPU time and communication per measured step."""
    if record.get("error"):
        return {"rank": rank, "error": f"rank {rank}: {record['error']}"}
    comm = record["communication"]
    return {"rank": rank, "kernels": record["kernels"], "gpu_ms_per_step": record["gpu_ms_per_step"],
            "gemm_fraction": record["gemm_fraction"], "comm_ms": comm["per_step_ms"]["kernel"],
            "exposed_comm_ms": comm["per_step_ms"]["exposed"], "overlap_pct": comm["overlap_pct"],
            "comm_share_pct": comm["share_pct"]}


def memory_analysis(cfg: RunConfig, snapshot: Path) -> dict:
    """The snapshot's analysis with the config's predicted memory beside what was measured (SnapshotError if
    unreadable). The Memory screen shows exactly this prediction: nothing recomputes it elsewhere."""
    spec = cfg.spec()
    hint = {"batch": cfg.batch, "heads": spec.heads, "ctx": cfg.ctx, "bytes_per_element": DTYPE_BYTES[cfg.dtype]}
    # the reader `sysprof analyze` uses
    analysis = MEMORY_SNAPSHOT_READER.read(snapshot, ReadOptions(), shape_hint=hint)
    if cfg.model_factory is not None:  # the closed-form prediction is the built-in model's: no table beats a wrong one
        analysis["notes"] = [*analysis.get("notes", []), "no predicted memory for your own model (yet)"]
        return analysis
    analysis["predicted"] = predict_run_memory(cfg)
    measured = {**analysis["max_by_category"], "peak": analysis.get("peak_allocated_bytes")}
    analysis["predicted_vs_measured"] = compare_predicted(analysis["predicted"], measured)
    return analysis


def analyze_memory(cfg: RunConfig, pass_dir: Path, recorded: RunSummary, where: str = rundir.MEMORY_DIR) -> PassRecord:
    """memory/analysis.json from the pass's snapshot, with the predicted accounting beside it (where: the pass
    directory's path in the run directory)."""
    label = f"{cfg.model} · ctx {cfg.ctx} · batch {cfg.batch} · {cfg.dtype} · {cfg.mode}"
    return analyze_snapshot_in(pass_dir, where, lambda snapshot: memory_analysis(cfg, snapshot), label,
                               f"no allocator snapshot was written ({recorded['status']})")


def analyze_snapshot_in(pass_dir: Path, where: str, analysis_of, label: str, missing: str) -> PassRecord:
    """pass_dir's snapshot analysed (analysis_of) into its analysis.json and timeline images; the record that points
    at them, or {"error": missing} without a snapshot. A traced loop's memory steps come through here too."""
    snapshot = pass_dir / rundir.MEMORY_SNAPSHOT
    if not snapshot.is_file():
        return {"error": missing}
    try:
        analysis = analysis_of(snapshot)
    except SnapshotError as exc:
        return {"error": str(exc)}
    analysis["snapshot"] = snapshot.name  # beside this file: the run directory may be copied elsewhere
    images = timeline_images(label, analysis, pass_dir)
    analysis["images"] = images.get("images", [])
    analysis["notes"] = [*analysis.get("notes", []), *([images["note"]] if "note" in images else [])]
    rundir.write_json(pass_dir / rundir.ANALYSIS, analysis)
    return {"analysis": f"{where}/{rundir.ANALYSIS}", "snapshot": f"{where}/{rundir.MEMORY_SNAPSHOT}",
            "peak_allocated_bytes": analysis["peak_allocated_bytes"],
            "images": [f"{where}/{name}" for name in analysis["images"]]}


def timeline_images(label: str, analysis: dict, pass_dir: Path) -> dict:
    """memory/timeline.png and .svg: {"images": [names]}, or {"note": why not} (no matplotlib, no timeline, a
    plotting error): the analysis is worth keeping without them. label: what ran, for the title."""
    from sysprof.profiler_core.render.memory_plot import MISSING_MATPLOTLIB, write_timeline_images

    timeline = analysis.get("timeline") or {}
    if not timeline.get("active_bytes"):
        return {"note": "no memory timeline image: the snapshot recorded no allocations"}
    steps = len({mark.get("step") for mark in timeline.get("phase_marks") or []})
    title = f"{label}: active memory over {steps} recorded step{'s' if steps != 1 else ''}"
    try:
        return {"images": [path.name for path in write_timeline_images(timeline, pass_dir, title)]}
    except ImportError:
        return {"note": MISSING_MATPLOTLIB}
    except (OSError, ValueError, RuntimeError) as exc:
        return {"note": f"no memory timeline image: {exc}"}


def analyze_rank_memory(cfg: RunConfig, pass_dir: Path, ranks: list[tuple[int, int]]) -> list[dict]:
    """These ranks' snapshots of the memory pass analysed in their own directories: each peak, or why there is none."""
    rows = []
    for rank, local in ranks:
        own = rundir.rank_dir(pass_dir, rank, local)
        recorded = rundir.read_summary(own) or {"status": "no summary"}
        record = analyze_memory(cfg, own, cast("RunSummary", recorded),
                                f"{rundir.MEMORY_DIR}/{own.relative_to(pass_dir)}")
        rows.append({"rank": rank, **({"error": f"rank {rank}: {record['error']}"} if record.get("error") else record)})
    return rows
