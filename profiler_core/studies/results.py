"""A study's tables, rebuilt from its directory alone: the CLI prints them, the app shows them live and
offline, `sysprof export` writes them. One function per kind, so every consumer gets the same shape."""
from __future__ import annotations

from pathlib import Path

from profiler_core import events, rundir
from profiler_core.errors import StudyError
from profiler_core.studies import attention
from profiler_core.studies.catalog import study_kind
from profiler_core.studies.derived import (
    compile_table,
    passes_table,
    precision_memory_table,
    precision_table,
    warmup_table,
)
from profiler_core.studies.tables import pivot, sweep_rows, sweep_summaries, visible_columns

PIVOT_VALUE = "fwd mean ms"
CELL_KEYS = ("impl", "dtype", "d", "seq", "status")
MEMORY_COLUMNS = ("inputs MiB", "fwd peak MiB", "before backward MiB", "saved for backward MiB", "T×T tensors saved",
                  "one T×T tensor MiB", "bwd peak MiB", "after backward MiB", "peak MiB")


def study_tables(study_dir: Path) -> dict[str, list[dict]]:
    """Title → records, the main table first. Cells not yet run show as pending rows."""
    kind = study_kind(study_dir)
    if kind is None:
        raise StudyError(f"{study_dir} is not a sweep or study directory")
    if kind == "attention":
        return _attention_tables(study_dir)
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
    return {"sweep results": _sweep_table(study_dir, rows)} | _default_pivot(study_dir, rows)


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


def _attention_tables(study_dir: Path) -> dict[str, list[dict]]:
    """The cells; FLOPs against time for the eager parts; forward ms, backward ms and memory before backward by
    d × seq with implementation (and dtype) as columns and the speedups over eager."""
    plan = rundir.read_json(study_dir / rundir.ATTENTION_PLAN) or {}
    batch, default_dtype = int(plan.get("batch") or 1), plan.get("dtype", "fp32")  # one dtype per study before dtypes
    key = lambda cell: (cell["impl"], cell.get("dtype", default_dtype), cell["d"], cell["seq"])  # noqa: E731
    done = {key(r): r for r in rundir.read_jsonl(study_dir / rundir.ATTENTION_CELLS)}
    rows, flops = [], []
    for cell in plan.get("cells", []):
        result = done.get(key(cell))
        dtype = key(cell)[1]
        rows.append(attention.summarize_cell(result, batch, dtype) if result
                    else cell | {"dtype": dtype, "status": events.PENDING})
        if cell["impl"] == "eager":
            flops.append(attention.flops_row((result or cell | {"status": events.PENDING}) | {"dtype": dtype}, batch))
    bf16 = "bf16 under autocast" if plan.get("precision") == "autocast" else "bf16 inputs"
    dtypes = plan.get("dtypes") or [default_dtype]
    title = (f"attention microbenchmark, batch {batch}, {plan.get('device', 'cuda')}, {', '.join(dtypes)}"
             + (f" ({bf16})" if "bf16" in dtypes else ""))
    tables = {title: [{k: v for k, v in row.items() if k not in MEMORY_COLUMNS or k == "peak MiB"} for row in rows],
              "attention memory (MiB; before backward: the handout's memory in use; saved: before backward less the "
              "inputs and the output)": [{k: v for k, v in row.items() if k in CELL_KEYS or k in MEMORY_COLUMNS}
                                         for row in rows]}
    if flops:
        tables["attention FLOPs vs time (eager parts; softmax 5 FLOPs per score, scale and mask 1 each)"] = flops
    return tables | _attention_pivots(rows)


def _attention_pivots(rows: list[dict]) -> dict[str, list[dict]]:
    across = ["dtype", "impl"] if len({row["dtype"] for row in rows}) > 1 else ["impl"]
    tables = {}
    for value in ("fwd mean ms", "bwd mean ms", "before backward MiB"):
        if not any(row.get(value) is not None for row in rows) or not rows:
            continue
        table = pivot(rows, ["d", "seq"], across, value).to_dict("records")
        tables[f"{value} by d × seq"] = [_with_speedups(_short_names(record)) if value.endswith("ms")
                                         else _short_names(record) for record in table]
    return tables


def _short_names(record: dict) -> dict:
    """"dtype=fp32 impl=eager" → "fp32 eager"."""
    return {" ".join(part.partition("=")[2] or part for part in name.split(" ")): value
            for name, value in record.items()}


def _with_speedups(record: dict) -> dict:
    """eager time / compiled (and SDPA) time per dtype, where both ran."""
    speedups = {}
    for name, eager in record.items():
        prefix = name[: -len("eager")]
        for impl in ("compiled", "sdpa") if name.endswith("eager") else ():
            if prefix + impl in record:  # the column exists in every record; the value only where both ran
                other = record[prefix + impl]
                both = isinstance(eager, float) and isinstance(other, float) and other > 0
                speedups[f"{prefix}{impl} speedup"] = round(eager / other, 2) if both else None
    return record | speedups


def all_cells_done(tables: dict[str, list[dict]]) -> bool:
    """Every cell finished (ok or oom) in every table that has a status (a compared pair reads "ok/oom");
    a precision table has none of its own, so its cells table decides."""
    return all(part in events.DONE_STATUSES for rows in tables.values() for row in rows
               for part in str(row.get("status", events.OK)).split("/"))
