"""Memory tables across the cells of a sweep with a memory pass (`sweep --memory`): the reports' largest single
allocation per category, full precision against autocast, per mode × context length.

Categories are the allocation categories every memory analysis has (attention scores: the T×T scores, masked
scores and softmax output; activations; gradients; optimizer state; parameters; temporaries) and, with
--nvtx-modules, the module types (attention, FFN, norm, embedding, head, ...), whose largest allocation is the
largest block made inside a module of that type. Each cell's memory/analysis.json is read as it is.
"""
from __future__ import annotations

from collections.abc import Sequence

from sysprof.profiler_core.documents.run_document import MEMORY, Run
from sysprof.profiler_core.studies.kernel_tables import keyed, row_keys

BASELINE = "fp32"
MIB = 2**20


def largest_allocations(memory: dict) -> dict[str, int]:
    """{category: bytes of its largest single allocation}: module types first (with --nvtx-modules), then the
    allocation categories."""
    modules = {f"module: {row['category']}": row["size_bytes"]
               for row in (memory.get("modules") or {}).get("largest") or [] if row.get("size_bytes")}
    categories = {category: row["size_bytes"] for category, row in (memory.get("largest_by_category") or {}).items()}
    return modules | categories


def largest_allocation_rows(rows: list[dict], runs: Sequence[Run | None]) -> list[dict]:
    """Per model × ctx × mode (and every other field the cells vary but dtype) × category: the largest single
    allocation in fp32 and under each autocast dtype, with Δ = autocast − fp32 and its %. A cell that ran out of
    memory or has no memory pass shows its status."""
    cells = [(row, run.analysis(MEMORY) if run else None) for row, run in zip(rows, runs)]
    fields = [key for key in row_keys(rows) if key != "dtype"]  # what a baseline and its autocast cells share
    table = []
    for key in dict.fromkeys(tuple(repr(row.get(f)) for f in fields) for row, _ in cells):
        group = [(row, memory) for row, memory in cells if tuple(repr(row.get(f)) for f in fields) == key]
        baseline = next(((row, memory) for row, memory in group if row.get("dtype") == BASELINE), None)
        for row, memory in group:
            if baseline is None or row is baseline[0]:
                continue
            table.extend(_compare(keyed(row, fields), baseline, (row, memory)))
    return table


def _compare(head: dict, baseline: tuple[dict, dict | None], other: tuple[dict, dict | None]) -> list[dict]:
    (base_row, base_memory), (row, memory) = baseline, other
    base, autocast = largest_allocations(base_memory or {}), largest_allocations(memory or {})
    head = head | {"autocast": row.get("dtype")}
    if not base or not autocast:
        status = base_row["status"] if not base else row["status"]
        return [head | {"category": None, "status": f"no memory analysis ({status})"}]
    out = []
    for category in dict.fromkeys([*base, *autocast]):
        before, after = base.get(category), autocast.get(category)
        delta = None if before is None or after is None else after - before
        out.append(head | {"category": category, "status": "ok", f"{BASELINE} MiB": _mib(before),
                           "autocast MiB": _mib(after), "Δ MiB": _mib(delta),
                           "Δ %": round(100 * delta / before, 1) if delta is not None and before else None})
    return out


def _mib(size: int | None) -> float | None:
    return None if size is None else round(size / MIB, 2)


def memory_sweep_tables(rows: list[dict], runs: Sequence[Run | None]) -> dict[str, list[dict]]:
    """The cross-cell memory table, when the sweep has fp32 and autocast cells with a memory pass (else none)."""
    table = largest_allocation_rows(rows, runs)
    if not any(row.get("status") == "ok" for row in table):
        return {}
    return {"largest single allocation per category, fp32 vs autocast (Δ = autocast − fp32)": table}
