"""The tables the CLI and the app both show, each built once from its document (render/table_model.TableModel):
a run's phase statistics, the per-phase kernel table of a kernel analysis and the per-rank table of a run on
several GPUs."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sysprof.models.phases import DATA, attention_part_labels
from sysprof.models.presets import human_count
from sysprof.profiler_core.analysis.ranks import STRAGGLER_SCORE
from sysprof.profiler_core.base.config import model_label
from sysprof.profiler_core.base.records import phases_of
from sysprof.profiler_core.base.units import NA, format_bytes
from sysprof.profiler_core.kernels.capture_check import WITHHELD
from sysprof.profiler_core.kernels.whole_step import whole_step
from sysprof.profiler_core.tables.launch_cells import short_verdict
from sysprof.profiler_core.tables.model import Column, TableModel, fixed_or_na, plain


def run_title(summary: Mapping[str, Any]) -> str:
    """What ran, on what: model (its true parameter count), ctx, batch, mode, dtype, attention, device, rank."""
    cfg = summary["config"]
    if cfg.get("source") == "trace":  # the user's own loop (sysprof.trace): its name and where it ran
        return f"{cfg.get('model')} · your own loop, traced · {(summary.get('env') or {}).get('device_name')}"
    params, rank = summary.get("params"), summary.get("rank")
    model = model_label(cfg["model"], cfg.get("model_factory")) + (f" ({human_count(params)} params)" if params else "")
    compiled = " · compiled" if cfg["compile"] else ""
    of_world = f" · rank {rank['rank']} of {rank['world']}" if rank else ""
    return (f"{model} · ctx {cfg['ctx']} · batch {cfg['batch']} · {cfg['mode']} · {cfg['dtype']} · "
            f"{cfg['attention']}{compiled} · {(summary.get('env') or {}).get('device_name')}{of_world}")


SHORT_PHASES = {"forward+backward": "fwd+bwd"}  # the reports' name; the export keeps the full one


def compact_ms(value: float | None) -> str:
    """At most 5 characters below 10 s (12.34, 123.4, 1,234), so that a GPU run's phase table with its peak
    memory fits 80 columns whatever the step time; the export keeps every digit."""
    if value is None:
        return NA
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def phase_model(summary: Mapping[str, Any]) -> TableModel:
    """Per-phase statistics over the measured steps, in milliseconds, with each phase's peak memory on a GPU."""
    peaks = summary.get("peak_memory_bytes") or {}
    columns = (Column("phase", "phase", lambda v: SHORT_PHASES.get(v, v), numeric=False),
               *(Column(key, f"{key.removesuffix('_ms')} ms", compact_ms)
                 for key in ("mean_ms", "std_ms", "median_ms", "min_ms", "max_ms")),
               Column("cv", "CV", lambda v: NA if v is None else f"{v:.1%}"), Column("n", "n"),
               *((Column("peak", "peak mem", lambda v: format_bytes(v) if v is not None else ""),) if peaks else ()))
    rows = [{"phase": phase, **stats, "peak": peaks.get(phase)} for phase, stats in phases_of(summary).items()]
    return TableModel("phases", run_title(summary), columns, rows)


TOP_CLASSES = 2  # kernel classes named per phase, largest first
PHASE_KERNEL_COLUMNS = (
    Column("phase", "phase", numeric=False),
    Column("ms_per_step", "ms/step", fixed_or_na(2)),
    Column("gpu_ms", "GPU ms", fixed_or_na(1)),
    Column("kernels", "kernels", fixed_or_na(0)),
    Column("gemm_pct", "GEMM %", lambda v: "" if v is None else f"{v:.0f}"),  # none for attention's parts
    Column("busy_pct", "busy %", lambda v: "" if v is None else f"{v:.0f}"),  # none for the whole step
    Column("bound", "bound", plain, numeric=False),
    Column("top_classes", "top classes (% of phase)", plain, numeric=False),
)


def phase_kernel_model(analysis: Mapping[str, Any]) -> TableModel:
    """Per phase with kernels: GPU time per profiled step and in all, kernel count, GEMM share, busy share of its
    GPU span, launch- or GPU-bound, its biggest kernel classes; then the whole step and naive attention's parts."""
    steps = len(analysis.get("steps") or []) or None
    fractions = analysis.get("gemm_fraction") or {}
    rows: list[Mapping[str, Any]] = [
        _withheld_row(phase) if stats.get(WITHHELD) else
        _phase_row(phase, stats, steps, fractions.get(phase), stats.get("busy_pct"), short_verdict(analysis, phase))
        for phase, stats in phases_of(analysis).items() if stats.get("kernels") or stats.get(WITHHELD)]
    step = whole_step(phases_of(analysis))
    if any(stats.get(WITHHELD) for stats in phases_of(analysis).values()):
        rows.append(_withheld_row("step"))  # a sum without the withheld phase would pass for the whole step
    elif step["kernels"]:
        rows.append(_phase_row("step", step, steps, step["gemm_fraction"], None, ""))
    attention = analysis.get("attention") or {}
    if attention.get("by_part"):
        rows.append(_attention_row(attention, steps))
    source = f"{analysis.get('source_kind') or 'unknown'}: {analysis.get('source') or NA}"
    return TableModel("phase kernels", f"GPU kernels by phase ({source})", PHASE_KERNEL_COLUMNS, rows)


def _phase_row(phase: str, stats: Mapping[str, Any], steps: int | None, gemm: float | None, busy: float | None,
               bound: str) -> dict[str, Any]:
    gpu_ns = stats.get("gpu_ns") or 0
    classes = sorted((stats.get("by_class") or {}).items(), key=lambda item: -item[1])[:TOP_CLASSES]
    return {"phase": phase, "ms_per_step": _per_step_ms(gpu_ns, steps), "gpu_ms": gpu_ns / 1e6,
            "kernels": stats.get("kernels", 0), "gemm_pct": None if gemm is None else 100 * gemm,
            "busy_pct": busy, "bound": bound,
            "top_classes": " ".join(f"{name} {ns / (gpu_ns or 1):.0%}" for name, ns in classes)}


def _withheld_row(phase: str) -> dict[str, Any]:
    """A phase whose kernel figures would double count (kernels/capture_check.py): no number, the note says why."""
    return {"phase": phase, "ms_per_step": None, "gpu_ms": None, "kernels": None, "gemm_pct": None,
            "busy_pct": None, "bound": "", "top_classes": "withheld: its ranges overlap (see the note)"}


def _attention_row(attention: Mapping[str, Any], steps: int | None) -> dict[str, Any]:
    labels = attention_part_labels(attention.get("mask_range", False))
    parts = " ".join(f"{labels.get(part, part).removeprefix('attn ')} {ns / 1e6:.1f}ms"
                     for part, ns in attention["by_part"].items())
    return {"phase": "attention", "ms_per_step": _per_step_ms(attention["gpu_ns"], steps),
            "gpu_ms": attention["gpu_ns"] / 1e6, "kernels": attention["kernels"], "gemm_pct": None,
            "busy_pct": None, "bound": "", "top_classes": parts}


def _per_step_ms(gpu_ns: float, steps: int | None) -> float | None:
    return gpu_ns / steps / 1e6 if steps else None


RANK_COLUMNS = (
    Column("rank", "rank", numeric=False),
    Column("step", "step", fixed_or_na(1)),
    Column("step_p90_ms", "p90", fixed_or_na(1)),
    Column("forward", "fwd", fixed_or_na(1)),
    Column("backward", "bwd", fixed_or_na(1)),
    Column("optimizer", "opt", fixed_or_na(1)),
    Column("peak_allocated_bytes", "peak mem", lambda v: format_bytes(v) if v else "—"),
    Column("straggler_score", "score", fixed_or_na(2)),
    Column("note", "mark", plain, numeric=False),
)


DATA_COLUMN = Column(DATA, "data", fixed_or_na(1))  # a traced job's wait for its next batch, per rank


def ranks_setup(ranks: Mapping[str, Any]) -> str:
    """How the ranks share the work: `ddp · batch 4 per rank`; a traced torchrun job's are its own."""
    if ranks.get("parallel") is None:
        return "split by the traced job itself"
    return f"{ranks['parallel']} · batch {ranks['batch_per_rank']} per rank"


def ranks_model(ranks: Mapping[str, Any]) -> TableModel:
    """--nproc: one row per rank (ms with one decimal, so that a row fits 80 columns with its peak memory), the
    slowest and fastest marked, a flagged straggler score named; the findings below. A traced job's ranks have
    their wait for data beside the phases."""
    total = ranks.get("tokens_per_s_all_ranks")
    title = (f"{ranks['world']} ranks · {ranks_setup(ranks)} · tokens/s all ranks "
             f"{NA if total is None else f'{total:,.0f}'} · score: fastest step / this step "
             f"(flagged < {STRAGGLER_SCORE})")
    columns: tuple[Column, ...] = RANK_COLUMNS
    if any(DATA in row["median_ms"] for row in ranks["rows"]):
        columns = (*RANK_COLUMNS[:3], DATA_COLUMN, *RANK_COLUMNS[3:])
    return TableModel("ranks", title, columns, [_rank_row(row) for row in ranks["rows"]],
                      tuple(ranks.get("findings") or ()))


def _rank_row(row: Mapping[str, Any]) -> dict[str, Any]:
    ms = row["median_ms"]
    note = row["mark"] if row["status"] == "ok" else row["status"]
    if row.get("flagged"):
        note = f"{note} straggler".strip()
    return {"rank": row["rank"], **{phase: ms.get(phase) for phase in ("step", DATA, "forward", "backward",
                                                                       "optimizer")},
            "step_p90_ms": row["step_p90_ms"], "peak_allocated_bytes": row["peak_allocated_bytes"],
            "straggler_score": row["straggler_score"], "note": note}
