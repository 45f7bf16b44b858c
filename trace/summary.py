"""The summary of a traced loop: statistics of every phase it named and of the whole step over the measured steps,
tokens/s where the tokens of a step are known, peak memory per phase, and the findings about the loop."""
from __future__ import annotations

from typing import Any

from sysprof.profiler_core.analysis.loop_findings import loop_findings
from sysprof.profiler_core.analysis.metrics import peak_memory_by_phase, summarize_ms
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.records import PhaseStats, clean_measured


def loop_phase_stats(measured: list[dict[str, Any]]) -> dict[str, PhaseStats]:
    """Every phase in the order the loop first ran it, then the step."""
    names = list(dict.fromkeys(name for step in measured for name in step["phases_ms"]))
    stats = {name: summarize_ms([s["phases_ms"][name] for s in measured if name in s["phases_ms"]])
             for name in names}
    return stats | {"step": summarize_ms([s["wall_ms"] for s in measured])}


def _tokens_per_s(measured: list[dict[str, Any]], step_median_ms: float | None) -> float | None:
    tokens = [s["tokens"] for s in measured if s.get("tokens")]
    if not tokens or len(tokens) < len(measured) or not step_median_ms:
        return None
    return sorted(tokens)[len(tokens) // 2] / (step_median_ms / 1e3)


def loop_summary(config: dict[str, Any], env: dict[str, Any], steps: list[dict[str, Any]], run_dir: str,
                 failure: dict[str, Any] | None) -> dict[str, Any]:
    measured = [dict(s) for s in clean_measured(steps)]
    phases: dict[str, Any] = dict(loop_phase_stats(measured)) if measured else {}
    summary: dict[str, Any] = {
        "status": events.FAILED_STATUS if failure else events.OK, "run_dir": run_dir, "config": config, "env": env,
        "phases": phases, "warmup_ms": [s["wall_ms"] for s in steps if s["kind"] == "warmup"], "compile_s": None,
        "peak_memory_bytes": peak_memory_by_phase(measured),  # type: ignore[arg-type]
        "tokens_per_s": _tokens_per_s(measured, (phases.get("step") or {}).get("median_ms")),
        "flops_per_step": None, "precision_used": None, "peak_tflops": None, "tflops": None, "mfu": None,
        "findings": loop_findings(steps)}
    if failure:
        summary["error"] = failure
    summary["state"] = events.run_state(summary)
    return summary
