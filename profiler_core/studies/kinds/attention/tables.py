"""The attention study's tables, rebuilt from its directory: the cells, their memory, FLOPs against time for the
eager parts, and pivots by d × seq with the speedups over eager."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.code_specs import short_specs
from sysprof.profiler_core.studies.kinds.attention import cells as attention
from sysprof.profiler_core.studies.kinds.attention import memory as attention_memory
from sysprof.profiler_core.studies.tables import pivot

CELL_KEYS = ("impl", "dtype", "d", "seq", "status")
MEMORY_COLUMNS = ("weights MiB", "inputs MiB", "fwd peak MiB", "before backward MiB", "saved for backward MiB",
                  "T×T tensors saved", "one T×T tensor MiB", "bwd peak MiB", "after backward MiB", "peak MiB")


def attention_tables(study_dir: Path) -> dict[str, list[dict]]:
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
    tables[attention_memory.TITLE] = attention_memory.tensor_table(rows, batch)
    if flops:
        tables["attention FLOPs vs time (eager parts; softmax 5 FLOPs per score, scale and mask 1 each)"] = flops
    return tables | _attention_pivots(rows)


def _attention_pivots(rows: list[dict]) -> dict[str, list[dict]]:
    across = ["dtype", "impl"] if len({row["dtype"] for row in rows}) > 1 else ["impl"]
    short = short_specs({row["impl"] for row in rows})
    tables = {}
    for value in ("fwd mean ms", "bwd mean ms", "fwd+bwd mean ms", "before backward MiB"):
        if not any(row.get(value) is not None for row in rows) or not rows:
            continue
        table = pivot(rows, ["d", "seq"], across, value).to_dict("records")
        tables[f"{value} by d × seq"] = [_with_speedups(_short_names(record, short)) if value.endswith("ms")
                                         else _short_names(record, short) for record in table]
    return tables


def _short_names(record: dict, short: dict[str, str]) -> dict:
    """"dtype=fp32 impl=eager" → "fp32 eager", and a user's attention by its file and name (short)."""
    return {" ".join(_header_part(part, short) for part in name.split(" ")): value for name, value in record.items()}


def _header_part(part: str, short: dict[str, str]) -> str:
    value = part.partition("=")[2] or part
    return short.get(value, value)


def _with_speedups(record: dict) -> dict:
    """eager time / each other implementation's (compiled, SDPA, the user's) per dtype, where both ran."""
    speedups = {}
    for name, eager in record.items():
        if not name.endswith("eager"):
            continue
        prefix = name[: -len("eager")]
        others = [column for column in record if column.startswith(prefix) and column not in (name, "d", "seq")]
        for column in others:  # the column exists in every record; the value only where both ran
            other = record[column]
            both = isinstance(eager, float) and isinstance(other, float) and other > 0
            speedups[f"{column} speedup"] = round(eager / other, 2) if both else None
    return record | speedups
