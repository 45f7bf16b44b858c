"""Turn a finished profiled or memory pass into the analysis files the app and `sysprof analyze` read."""
from __future__ import annotations

from pathlib import Path

from profiler_core import rundir
from profiler_core.config import RunConfig
from profiler_core.errors import KernelReportError
from profiler_core.kernels.summary import analyze_attribution, phase_kernel_table
from profiler_core.memory import analyze_snapshot
from profiler_core.memory.accounting import compare_predicted, predict_memory
from profiler_core.memory.snapshot import SnapshotError
from models.presets import count_params

BYTES_PER_ELEMENT = {"fp32": 4, "bf16": 2, "fp16": 2}


def analyze_kernels(backend, pass_dir: Path, run_dir: Path) -> dict:
    """kernels/analysis.json and kernels/phase_kernels.csv; {"error": reason} when there is nothing to read."""
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


def memory_prediction(cfg: RunConfig) -> dict:
    spec = cfg.spec()
    # Under autocast the weights stay fp32; activations are mostly in the autocast dtype.
    return predict_memory(params=count_params(spec), d_model=spec.d_model, d_ff=spec.d_ff, layers=spec.layers,
                          heads=spec.heads, vocab=spec.vocab, ctx=cfg.ctx, batch=cfg.batch, param_bytes=4,
                          activation_bytes=BYTES_PER_ELEMENT[cfg.dtype], mode=cfg.mode)


def analyze_memory(cfg: RunConfig, pass_dir: Path, recorded: dict) -> dict:
    """memory/analysis.json from the pass's snapshot, with the predicted accounting beside it."""
    snapshot = pass_dir / rundir.MEMORY_SNAPSHOT
    if not snapshot.is_file():
        return {"error": f"no allocator snapshot was written ({recorded['status']})"}
    spec = cfg.spec()
    hint = {"batch": cfg.batch, "heads": spec.heads, "ctx": cfg.ctx, "bytes_per_element": BYTES_PER_ELEMENT[cfg.dtype]}
    try:
        analysis = analyze_snapshot(snapshot, shape_hint=hint)
    except SnapshotError as exc:
        return {"error": str(exc)}
    analysis["predicted"] = memory_prediction(cfg)
    analysis["predicted_vs_measured"] = compare_predicted(analysis["predicted"], analysis["max_by_category"])
    analysis["snapshot"] = snapshot.name  # beside this file: the run directory may be copied elsewhere
    rundir.write_json(pass_dir / rundir.ANALYSIS, analysis)
    return {"analysis": f"{rundir.MEMORY_DIR}/{rundir.ANALYSIS}", "snapshot": f"{rundir.MEMORY_DIR}/{rundir.MEMORY_SNAPSHOT}",
            "peak_allocated_bytes": analysis["peak_allocated_bytes"]}
