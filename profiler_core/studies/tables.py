"""Result tables of a sweep in the seed reports' shape, and pivots of them."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from models.presets import PRESETS
from profiler_core import events, rundir
from profiler_core.config import model_column
from profiler_core.metrics import summarize_ms
from profiler_core.records import PhaseStats
from profiler_core.studies.sweep import cell_dir, cell_summary, load_plan

CONFIG_COLUMNS = ("model", "d_model", "ctx", "batch", "mode", "dtype", "matmul_precision", "compile",
                  "attention", "warmup", "device")


def _mean_std(stats: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    return (stats or {}).get("mean_ms"), (stats or {}).get("std_ms")


def _fwd_bwd(steps: list[dict]) -> PhaseStats | None:
    """forward + backward per measured step, the seeds' "fwd+bwd" column."""
    sums = [s["phases_ms"]["forward"] + s["phases_ms"]["backward"] for s in steps
            if s.get("kind") == "measured" and "backward" in s.get("phases_ms", {})]
    return summarize_ms(sums) if sums else None


def cell_row(cfg: dict, summary: dict | None, steps: list[dict]) -> dict:
    summary = summary or {"status": events.PENDING}
    phases = summary.get("phases") or {}
    d_model = cfg.get("d_model") or PRESETS.get(cfg["model"], PRESETS["small"]).d_model
    row = {name: cfg.get(name) for name in CONFIG_COLUMNS} | {"model": model_column(cfg), "d_model": d_model,
                                                              "status": summary["status"]}
    row |= {name: value for name, value in cfg.items() if name not in row}  # any field a sweep may vary
    for item in cfg.get("model_args") or ():  # a model argument a sweep varies is a column of its own name
        name, _, value = item.partition("=")
        row[name if name not in row else f"model_arg.{name}"] = value
    device = (summary.get("env") or {}).get("device_name")
    row["device"] = device or cfg.get("device")
    row["gpu"] = (summary.get("env") or {}).get("cuda_visible_devices")  # sweep --gpus: which GPU ran the cell
    for label, stats in (("fwd", phases.get("forward")), ("bwd", phases.get("backward")),
                         ("fwd+bwd", _fwd_bwd(steps)), ("opt", phases.get("optimizer")), ("step", phases.get("step"))):
        row[f"{label} mean ms"], row[f"{label} std ms"] = _mean_std(stats)
    row["compile s"] = summary.get("compile_s")
    peaks = summary.get("peak_memory_bytes") or {}
    row["peak GiB"] = max(peaks.values()) / 2**30 if peaks else None
    row["first step ms"] = next((s["wall_ms"] for s in steps if s.get("kind") == "measured"), None)
    between = (summary.get("between") or {}).get("step")  # with repeats: the spread between the processes
    row["procs"] = between["n"] if between else None
    row["step CV between %"] = between["cv_pct"] if between else None
    return row


def sweep_rows(sweep_dir: Path) -> list[dict]:
    configs, _ = load_plan(sweep_dir)
    rows = []
    for index, cfg in enumerate(configs):
        path = cell_dir(sweep_dir, index, cfg)
        rows.append(cell_row(cfg.to_dict(), cell_summary(path), rundir.read_jsonl(path / rundir.STEPS)))
    return rows


def sweep_summaries(sweep_dir: Path) -> list[dict | None]:
    """Each cell's summary (None before it ran), in plan order: what compare needs beyond a row."""
    configs, _ = load_plan(sweep_dir)
    return [cell_summary(cell_dir(sweep_dir, index, cfg)) for index, cfg in enumerate(configs)]


def sweep_document(sweep_dir: Path) -> dict:
    """`sysprof sweep --json`: {"cells": [{"config", "status", "phases", ...}]}."""
    configs, varied = load_plan(sweep_dir)
    cells = []
    for index, cfg in enumerate(configs):
        summary = cell_summary(cell_dir(sweep_dir, index, cfg)) or {"status": events.PENDING}
        cells.append({"config": cfg.to_dict(), "status": summary["status"], "phases": summary.get("phases") or {},
                      "run_dir": summary.get("run_dir"), "error": summary.get("error"),
                      "peak_memory_bytes": summary.get("peak_memory_bytes"), "compile_s": summary.get("compile_s")})
    return {"sweep_dir": str(sweep_dir), "varied": varied, "cells": cells}


def visible_columns(rows: list[dict], varied: list[str]) -> list[str]:
    """The seeds' columns: what varied, then timings and status; constant config columns are dropped."""
    keep = [c for c in (*CONFIG_COLUMNS, *varied) if c in varied or c in ("model", "ctx")]
    timing = [c for c in rows[0] if c.endswith(" ms") and any(r[c] is not None for r in rows)] if rows else []
    extra = [c for c in ("compile s", "peak GiB", "procs", "step CV between %")
             if rows and any(r[c] is not None for r in rows)]
    extra += ["gpu"] if len({r["gpu"] for r in rows}) > 1 else []
    return list(dict.fromkeys(keep + ["status"] + timing + extra))


def pivot(rows: list[dict], index: list[str], columns: list[str], value: str):
    """A pandas pivot (mean of `value`), e.g. forward ms by ctx × d_model × compile."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    missing = [c for c in [*index, *columns, value] if c not in frame.columns]
    if missing:
        raise KeyError(f"no column {missing[0]!r}; choose from {', '.join(frame.columns)}")
    table = frame.pivot_table(index=index, columns=columns or None, values=value, aggfunc="mean")
    if columns:  # "compile=True" rather than a bare "True" as a column name
        table.columns = [" ".join(f"{name}={part}" for name, part in zip(columns, key if isinstance(key, tuple)
                                                                         else (key,))) for key in table.columns]
    return table.reset_index()


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
