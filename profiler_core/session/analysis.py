"""Turn a finished profiled or memory pass into the analysis files the app and `sysprof analyze` read.

pandas and numpy load when a pass is analysed, not when the session starts: a run without a profiler needs neither.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profiler_core import rundir
from profiler_core.config import DTYPE_BYTES, RunConfig
from profiler_core.errors import KernelReportError, SnapshotError
from profiler_core.memory.accounting import compare_predicted, predict_run_memory
from profiler_core.records import PassRecord, RunSummary

if TYPE_CHECKING:
    from profiler_core.session.backends import Backend


def analyze_kernels(backend: Backend, pass_dir: Path, run_dir: Path) -> PassRecord:
    """kernels/analysis.json and kernels/phase_kernels.csv; {"error": reason} when there is nothing to read."""
    from profiler_core.kernels.summary import analyze_attribution, phase_kernel_table

    try:
        attribution = backend.attribute(pass_dir)
    except KernelReportError as exc:
        return {"error": str(exc)}
    kernels_dir = run_dir / rundir.KERNELS_DIR
    kernels_dir.mkdir(exist_ok=True)
    analysis = analyze_attribution(attribution, str(pass_dir.relative_to(run_dir)), f"{backend.name}")
    rundir.write_json(kernels_dir / rundir.ANALYSIS, analysis)
    phase_kernel_table(attribution).to_csv(kernels_dir / rundir.PHASE_KERNELS, index=False)
    return {"kernels": f"{rundir.KERNELS_DIR}/{rundir.ANALYSIS}",
            "phase_kernels": f"{rundir.KERNELS_DIR}/{rundir.PHASE_KERNELS}",
            "gemm_fraction": analysis["gemm_fraction"], "notes": analysis["notes"]}



def memory_analysis(cfg: RunConfig, snapshot: Path) -> dict:
    """The snapshot's analysis with the config's predicted memory beside what was measured (SnapshotError if
    unreadable). The Memory screen shows exactly this prediction: nothing recomputes it elsewhere."""
    from profiler_core.memory.analyze import analyze_snapshot

    spec = cfg.spec()
    hint = {"batch": cfg.batch, "heads": spec.heads, "ctx": cfg.ctx, "bytes_per_element": DTYPE_BYTES[cfg.dtype]}
    analysis = analyze_snapshot(snapshot, shape_hint=hint)
    if cfg.model_factory is not None:  # the closed-form prediction is the built-in model's: no table beats a wrong one
        analysis["notes"] = [*analysis.get("notes", []), "no predicted memory for your own model (yet)"]
        return analysis
    analysis["predicted"] = predict_run_memory(cfg)
    analysis["predicted_vs_measured"] = compare_predicted(analysis["predicted"], analysis["max_by_category"])
    return analysis


def analyze_memory(cfg: RunConfig, pass_dir: Path, recorded: RunSummary) -> PassRecord:
    """memory/analysis.json from the pass's snapshot, with the predicted accounting beside it."""
    snapshot = pass_dir / rundir.MEMORY_SNAPSHOT
    if not snapshot.is_file():
        return {"error": f"no allocator snapshot was written ({recorded['status']})"}
    try:
        analysis = memory_analysis(cfg, snapshot)
    except SnapshotError as exc:
        return {"error": str(exc)}
    analysis["snapshot"] = snapshot.name  # beside this file: the run directory may be copied elsewhere
    rundir.write_json(pass_dir / rundir.ANALYSIS, analysis)
    return {"analysis": f"{rundir.MEMORY_DIR}/{rundir.ANALYSIS}", "snapshot": f"{rundir.MEMORY_DIR}/{rundir.MEMORY_SNAPSHOT}",
            "peak_allocated_bytes": analysis["peak_allocated_bytes"]}
