"""What a run's JSON documents hold where every reader looks. Valid JSON of the wrong shape (`phases` a string, a
number where a table's rows go) is a damaged file, named as such when it is read, not a traceback deep in a table.
Only the fields readers rely on are checked; a field that is absent or null is left to each reader's default."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Kinds = type | tuple[type, ...]
Shape = Mapping[str, Kinds]
NUMBER: tuple[type, ...] = (int, float)

MANIFEST: Shape = {"config": dict, "env": dict, "argv": list}
SUMMARY: Shape = {"status": str, "config": dict, "env": dict, "phases": dict, "peak_memory_bytes": dict,
           "peak_reserved_bytes": dict, "error": dict, "repeats": dict, "between": dict, "profile": dict,
           "warmup_ms": list, "tokens_per_s": NUMBER, "tflops": NUMBER, "mfu": NUMBER, "params": NUMBER,
           "compile_s": NUMBER, "findings": list}
KERNELS: Shape = {"kernels": list, "phases": dict, "gemm_fraction": dict, "attention": dict, "steps": list,
           "modules": dict, "communication": dict, "totals": dict, "notes": list}
MEMORY: Shape = {"peak": dict, "top_allocations": list, "by_category": dict, "max_by_category": dict, "timeline": dict,
          "notes": list, "predicted": dict, "predicted_vs_measured": list, "peak_allocated_bytes": NUMBER,
          "peak_reserved_bytes": NUMBER}
SWEEP_PLAN: Shape = {"cells": list, "varied": list, "study": str, "command": str}
ATTENTION_PLAN: Shape = {"cells": list, "study": str, "machine": dict}
ADVICE: Shape = {"candidates": list, "skipped": list, "baseline": dict, "hints": dict, "combination": dict,
                 "refine": dict, "earlier_combinations": list, "budget_s": NUMBER, "per_cell_s": NUMBER}
WITH_PHASE_OBJECTS = ("phases",)  # each value an object: a phase's statistics
LISTS_OF_OBJECTS = ("cells", "candidates", "skipped", "earlier_combinations")  # each item an object


def _a(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(type(value), "a number")


def _expected(kinds: Kinds) -> str:
    return "a number" if kinds == NUMBER else _a(kinds())  # type: ignore[operator]


def _fits(value: Any, kinds: Kinds) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, bool) and kinds == NUMBER)


def shape_problem(document: Mapping[str, Any], shape: Mapping[str, Kinds]) -> str | None:
    """Why the document does not have the shape (the first field that does not), or None."""
    for key, kinds in shape.items():
        value = document.get(key)
        if value is not None and not _fits(value, kinds):
            return f"'{key}' is {_a(value)}, not {_expected(kinds)}"
    for key in LISTS_OF_OBJECTS:
        items = document.get(key)
        if key in shape and isinstance(items, list) and not all(isinstance(item, dict) for item in items):
            return f"'{key}' holds {_a(next(i for i in items if not isinstance(i, dict)))}, not only objects"
    for key in WITH_PHASE_OBJECTS:
        found = document.get(key)
        if not isinstance(found, dict) or key not in shape:
            continue
        bad = next((name for name, stats in found.items() if not isinstance(stats, dict)), None)
        if bad is not None:
            return f"'{key}' has '{bad}' as {_a(found[bad])}, not an object"
    return None
