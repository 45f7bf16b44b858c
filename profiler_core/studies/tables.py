"""Result tables of a sweep in the seed reports' shape, and pivots of them."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.analysis.energy import tokens_per_joule
from sysprof.profiler_core.analysis.metrics import summarize_ms
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import ConfigError, RunConfig, model_column
from sysprof.profiler_core.base.records import PhaseStats, phases_of

if TYPE_CHECKING:
    from sysprof.profiler_core.studies.document import Study

CONFIG_COLUMNS = ("model", "d_model", "ctx", "batch", "mode", "dtype", "matmul_precision", "compile",
                  "attention", "warmup", "device")


def _mean_std(stats: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    return (stats or {}).get("mean_ms"), (stats or {}).get("std_ms")


def _summed(steps: list[dict], parts: tuple[str, ...]) -> PhaseStats | None:
    """The sum of these phases per measured step of the clean pass (the seeds' "fwd+bwd", "bwd+opt")."""
    sums = [sum(s["phases_ms"][p] for p in parts) for s in steps if s.get("kind") == "measured"
            and not s.get("pass") and all(s.get("phases_ms", {}).get(p) is not None for p in parts)]
    return summarize_ms(sums) if sums else None


def _clean_walls(steps: list[dict], kind: str) -> list[float]:
    return [s["wall_ms"] for s in steps if s.get("kind") == kind and not s.get("pass") and "wall_ms" in s]


def cell_row(cfg: dict, summary: dict | None, steps: list[dict], profiled: dict | None = None) -> dict:
    """One cell as a row; `profiled`: the summary of its profiled pass, whose medians the row carries apart."""
    summary = summary or {"status": events.PENDING}
    phases = phases_of(summary)
    preset = PRESETS.get(cfg["model"], PRESETS["small"])
    dims = {name: cfg.get(name) or getattr(preset, name) for name in ("d_model", "d_ff", "layers", "heads")}
    row = {name: cfg.get(name) for name in CONFIG_COLUMNS} | {"model": model_column(cfg), "status": summary["status"]}
    row |= {name: value for name, value in cfg.items() if name not in row}  # any field a sweep may vary
    row |= dims  # a factory's model is built with the preset's dims unless its own arguments say otherwise
    row["params"] = summary.get("params")
    for item in cfg.get("model_args") or ():  # a model argument a sweep varies is a column of its own name
        name, _, value = item.partition("=")
        row[name if name not in row else f"model_arg.{name}"] = value
    device = (summary.get("env") or {}).get("device_name")
    row["device"] = device or cfg.get("device")
    row["device type"] = (summary.get("env") or {}).get("device_type") or cfg.get("device")
    row["gpu"] = (summary.get("env") or {}).get("cuda_visible_devices")  # sweep --gpus: which GPU ran the cell
    for label, stats in (("fwd", phases.get("forward")), ("bwd", phases.get("backward")),
                         ("fwd+bwd", _summed(steps, ("forward", "backward"))), ("opt", phases.get("optimizer")),
                         ("bwd+opt", _summed(steps, ("backward", "optimizer"))), ("step", phases.get("step"))):
        row[f"{label} mean ms"], row[f"{label} std ms"] = _mean_std(stats)
        row[f"{label} median ms"] = (stats or {}).get("median_ms")
    row["tokens/s"] = summary.get("tokens_per_s")
    row["MFU %"] = round(summary["mfu"] * 100, 2) if summary.get("mfu") is not None else None
    row["tokens/J"] = tokens_per_joule(summary)
    row["compile s"] = summary.get("compile_s")
    peaks = summary.get("peak_memory_bytes") or {}
    row["peak GiB"] = max(peaks.values()) / 2**30 if peaks else None
    reserved = summary.get("peak_reserved_bytes") or {}
    row["peak reserved GiB"] = max(reserved.values()) / 2**30 if reserved else None
    row["first step ms"] = next(iter(_clean_walls(steps, "measured")), None)
    warmups, measured = _clean_walls(steps, "warmup"), _clean_walls(steps, "measured")
    row["warm-up s"] = sum(warmups) / 1e3 if steps else None  # every warm-up step, the compiling one included
    row["total s"] = (sum(warmups) + sum(measured)) / 1e3 if steps else None
    profiled_phases = phases_of(profiled)
    row["profiled fwd ms"] = (profiled_phases.get("forward") or {}).get("median_ms")  # under nsys: not step times
    row["profiled step ms"] = (profiled_phases.get("step") or {}).get("median_ms")
    row["inflation"] = (summary.get("profile") or {}).get("inflation")
    between = (summary.get("between") or {}).get("step")  # with repeats: the spread between the processes
    row["procs"] = between["n"] if between else None
    row["step CV between %"] = between["cv_pct"] if between else None
    return row


def planned_columns(configs: list) -> list[str]:
    """Every column the sweep's rows will have, known before any cell runs (a pivot is checked against it)."""
    return list(dict.fromkeys(column for cfg in configs for column in cell_row(cfg.to_dict(), None, [])))


def sweep_document(study: Study) -> dict:
    """`sysprof sweep --json`: {"cells": [{"config", "status", "phases", ...}]}."""
    cells = []
    for cell in study.cells:
        summary = cell.summary or {"status": events.PENDING}
        cells.append({"config": cell.config.to_dict(), "status": summary["status"],
                      "phases": phases_of(summary), "run_dir": summary.get("run_dir"),
                      "error": summary.get("error"), "peak_memory_bytes": summary.get("peak_memory_bytes"),
                      "compile_s": summary.get("compile_s")})
    return {"sweep_dir": str(study.path), "varied": study.varied, "cells": cells}


def visible_columns(rows: list[dict], varied: list[str]) -> list[str]:
    """The seeds' columns: what varied, then timings and status; constant config columns are dropped."""
    keep = [c for c in (*CONFIG_COLUMNS, *varied) if c in varied or c in ("model", "ctx")]
    sizes = {r.get("params") for r in rows} - {None}
    keep += ["params"] if len(sizes) > 1 else []  # sizes differ: the x axis of the report's throughput figure
    timing = [c for c in rows[0] if c.endswith(" ms") and not c.endswith(" median ms")
              and any(r[c] is not None for r in rows)] if rows else []
    extra = [c for c in ("tokens/s", "MFU %", "tokens/J", "inflation", "compile s", "peak GiB", "peak reserved GiB",
                         "procs", "step CV between %")
             if rows and any(r[c] is not None for r in rows)]
    extra += ["gpu"] if len({r["gpu"] for r in rows}) > 1 else []
    return list(dict.fromkeys(keep + ["status"] + timing + extra))


def _cell_text(status: str | None) -> str:
    """What a pivot shows for a cell without a value: "OOM" for an out-of-memory cell, else its status."""
    return "OOM" if status == events.OOM else str(status or events.PENDING)


def _pivot_cell(values):
    """Numbers → their mean; only texts (OOM, failed, or a text value such as status) → the distinct ones."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if numbers:
        return sum(numbers) / len(numbers)
    return "/".join(dict.fromkeys(str(v) for v in values if v is not None)) or None


def _first_seen(rows: list[dict], columns: list[str]):
    """Sort key of pivot column keys: per level, the position of the value's first appearance in the rows."""
    seen = [list(dict.fromkeys(row[column] for row in rows)) for column in columns]
    return lambda key: tuple(order.index(part) for order, part in zip(seen, key if isinstance(key, tuple) else (key,)))


def pivot_problem(columns: list[str], index: list[str], across: list[str], value: str) -> str | None:
    """Why a pivot over these row keys cannot be built (None when it can): checked before a sweep runs."""
    missing = [c for c in [*index, *across, value] if c not in columns]
    if missing:
        return f"no column {missing[0]!r}; choose from {', '.join(columns)}"
    if not index:
        return "a pivot needs at least one row field before the ':' (e.g. ctx:d_model)"
    fields = [*index, *across]
    if len(set(fields)) < len(fields):
        twice = next(field for field in fields if fields.count(field) > 1)
        return f"{twice!r} is named twice; a field is either a row or a column of the pivot"
    return None


def pivot_fields(text: str) -> tuple[list[str], list[str]]:
    """"ctx,model:d_model,compile" → (["ctx", "model"], ["d_model", "compile"])."""
    index_text, _, columns_text = text.partition(":")
    split = lambda part: [c.strip() for c in part.split(",") if c.strip()]  # noqa: E731
    return split(index_text), split(columns_text)


def pivot_or_error(rows: list[dict], text: str, value: str):
    """The pivot `--pivot TEXT --value VALUE` asks for, or a one-line usage error naming what is wrong."""
    try:
        return pivot(rows, *pivot_fields(text), value)
    except KeyError as exc:
        raise ConfigError(f"--pivot/--value: {exc.args[0]}") from None


def pivot(rows: list[dict], index: list[str], columns: list[str], value: str):
    """A pivot of `value` (the mean over cells that share a position), e.g. forward ms by ctx × d_model ×
    compile. A cell without a value shows why ("OOM", "failed"), so rows and columns that are all OOM stay."""
    import pandas as pd

    problem = pivot_problem(list(rows[0]) if rows else [], index, columns, value)
    if problem:
        raise KeyError(problem)
    finished = [row for row in rows if row.get("status") == events.OK]
    if finished and all(row.get(value) is None for row in finished):
        device = ", ".join(sorted({str(row.get("device")) for row in finished}))
        raise KeyError(f"no finished cell has a value for {value!r} (ran on {device})"
                       + ("; peak memory is measured on CUDA only" if value == "peak GiB" else ""))
    frame = pd.DataFrame(rows)
    frame["_cell"] = [row[value] if row.get(value) is not None or row.get("status") == events.OK
                      else _cell_text(row.get("status")) for row in rows]
    grouped = frame.groupby(index + columns, sort=True, dropna=False)["_cell"].agg(_pivot_cell)
    table = grouped.unstack(columns) if columns else grouped.to_frame(value)
    if columns:  # each level in the order its values first came (fp32 before bf16, eager before sdpa)
        table = table.reindex(columns=sorted(table.columns, key=_first_seen(rows, columns)))  # [False] is a mask
        # "compile=True" rather than a bare "True" as a column name
        table.columns = [" ".join(f"{name}={part}" for name, part in zip(columns, key if isinstance(key, tuple)
                                                                         else (key,))) for key in table.columns]
    flat = table.reset_index().astype(object)
    return flat.where(flat.notna(), None)


def averaged_over(rows: list[dict], index: list[str], columns: list[str]) -> dict[str, list]:
    """The config fields a pivot leaves out that vary inside one of its cells (each such cell is then the mean of
    several cells), with their values."""
    shown = {*index, *columns, "device"}  # a row's device is the GPU's name once it ran: not a varied field
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(repr(row.get(key)) for key in [*index, *columns]), []).append(row)
    return {f.name: list(dict.fromkeys(repr(row.get(f.name)) for row in rows))
            for f in dataclasses.fields(RunConfig) if f.name not in shown
            and any(len({repr(row.get(f.name)) for row in group}) > 1 for group in groups.values())}


def averaging_note(rows: list[dict], index: list[str], columns: list[str]) -> str | None:
    """One line saying what a pivot averages over, or None when each of its cells is one cell of the sweep."""
    found = averaged_over(rows, index, columns)
    if not found:
        return None
    fields = "; ".join(f"{name} ({', '.join(str(v).strip(chr(39)) for v in values)})"
                       for name, values in found.items())
    return f"note: each value of the pivot is the mean over {fields}: name it in --pivot to see each"


def compact(table: list[dict]) -> list[dict]:
    """For the terminal: "X mean ms" and "X std ms" become one "X ms" cell reading "mean ± std"."""
    rows = []
    for row in table:
        merged = {}
        for column, value in row.items():
            if column.endswith(" std ms"):
                continue
            if column.endswith(" mean ms") and column.replace(" mean ", " std ") in row:
                std = row[column.replace(" mean ", " std ")]
                column = column.replace(" mean ", " ")
                value = None if value is None else f"{value:.2f} ± {std or 0:.2f}"
            merged[column] = value
        rows.append(merged)
    return rows
