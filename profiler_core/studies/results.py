"""A study's tables, rebuilt from its directory alone: the CLI prints them, the app shows them live and
offline, `sysprof export` writes them. One function per kind, so every consumer gets the same shape."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core import events, rundir
from sysprof.profiler_core.errors import StudyError
from sysprof.profiler_core.studies.attention_tables import attention_tables
from sysprof.profiler_core.studies.derived import (
    compile_table,
    passes_table,
    precision_memory_table,
    precision_table,
    warmup_table,
)
from sysprof.profiler_core.studies.kernel_tables import profiled_sweep_tables
from sysprof.profiler_core.studies.memory_tables import memory_sweep_tables
from sysprof.profiler_core.studies.tables import pivot, sweep_rows, sweep_run_dirs, sweep_summaries, visible_columns
from sysprof.profiler_core.study_plans import study_kind

PIVOT_VALUE = "fwd mean ms"


def study_tables(study_dir: Path) -> dict[str, list[dict]]:
    """Title → records, the main table first. Cells not yet run show as pending rows."""
    kind = study_kind(study_dir)
    if kind is None:
        raise StudyError(f"{study_dir} is not a sweep or study directory")
    if kind == "attention":
        return attention_tables(study_dir)
    rows = sweep_rows(study_dir)
    summaries = sweep_summaries(study_dir)
    derived = {"warmup": ("warm-up study", lambda: warmup_table(rows)),
               "compile": ("torch.compile study", lambda: compile_table(rows, summaries)),
               "precision": (_precision_title(rows), lambda: precision_table(rows, summaries)),
               "passes": ("forward vs forward+backward (same steps)", lambda: passes_table(rows))}
    if kind in derived:
        title, build = derived[kind]
        tables = {title: build()}
        memory = precision_memory_table(rows) if kind == "precision" else []
        if memory:
            tables["peak memory, fp32 vs bf16 autocast (Δ = bf16 − fp32)"] = memory
        return tables | (_lab_tables(study_dir) if kind == "precision" else {}) | {"cells": _sweep_table(study_dir, rows)}
    return ({"sweep results": _sweep_table(study_dir, rows)} | _default_pivot(study_dir, rows)
            | profiled_sweep_tables(rows, sweep_run_dirs(study_dir)) | memory_sweep_tables(rows, sweep_run_dirs(study_dir)))


def _precision_title(rows: list[dict]) -> str:
    if any(row.get("device type") == "cuda" for row in rows) or not rows:
        return "fp32 vs tf32 vs bf16 (speedups from the medians)"
    return (f"fp32 vs bf16 on {rows[0].get('device type')} (speedups from the medians; TF32 is a CUDA matmul mode, "
            "so its cells are left out)")


def _varied(study_dir: Path) -> list[str]:
    plan = rundir.read_json(study_dir / rundir.SWEEP_PLAN) or {}
    return plan.get("varied", [])


def _sweep_table(study_dir: Path, rows: list[dict]) -> list[dict]:
    columns = visible_columns(rows, _varied(study_dir))
    return [{c: row[c] for c in columns} for row in rows]


def _default_pivot(study_dir: Path, rows: list[dict]) -> dict[str, list[dict]]:
    """With two or more varied fields: forward ms by all but the last of them × the last."""
    varied = [name if name != "model" else "d_model" for name in _varied(study_dir)]
    if len(varied) < 2 or not any(row.get(PIVOT_VALUE) is not None for row in rows):
        return {}
    index, columns = varied[:-1], varied[-1:]
    table = pivot(rows, index, columns, PIVOT_VALUE)
    return {f"{PIVOT_VALUE} by {' × '.join(index)} × {columns[0]}": table.to_dict("records")}


def _lab_tables(study_dir: Path) -> dict[str, list[dict]]:
    lab = rundir.read_json(study_dir / rundir.PRECISION_LAB)
    if not lab:
        return {}
    autocast = [{"tensor": name, **{dtype: lab["autocast"][dtype][name] for dtype in lab["autocast"]}}
                for name in lab["autocast"]["fp16"]]
    title = f"dtypes under autocast ({lab['device']}, torch {lab['torch_version']})"
    if lab["device"] != "cuda":
        norm = lab["autocast"]["bf16"].get("LayerNorm output")
        title += (f": {lab['device']} autocast has its own op lists, not CUDA's (here LayerNorm output is {norm}; "
                  "CUDA's autocast keeps layer norm in float32): run the study on the GPU for the GPU's answer")
    return {f"accumulating 0.01 a thousand times ({lab['device']})": lab["accumulation"], title: autocast}


def all_cells_done(tables: dict[str, list[dict]]) -> bool:
    """Every cell finished (ok or oom) in every table that has a status (a compared pair reads "ok/oom");
    a precision table has none of its own, so its cells table decides."""
    return all(part in events.DONE_STATUSES for rows in tables.values() for row in rows
               for part in str(row.get("status", events.OK)).split("/"))
