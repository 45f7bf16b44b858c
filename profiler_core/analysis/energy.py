"""Energy of the measured steps, from the joules the runner read off NVML's counter where each stretch of steps
started and ended (runner/energy.py): joules per step, tokens per joule, the mean power over the steps, and the power
cap and SM clock in force, which say what the figure depends on.

The counter is the whole GPU's: another process on the GPU is counted too, and the section says so. It moves in
steps of its own (about every 0.1 s on an H200), so a figure needs stretches of a second or more, and carries its
resolution (the counter's step over the shortest stretch). A group of processes carries each process's tokens per
joule and their median, as tokens/s does.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

SCOPE = "the whole GPU's counter: other processes on it are counted too"
COUNTER_STEP_S = 0.1  # how often NVML's counter moved on an H200 (benchmarks/energy/counter.py): a read's coarseness
MIN_STRETCH_S = 1.0  # the shortest stretch of steps whose joules are kept: the counter's coarseness is then ≤ 10%


def energy_section(joules: float, stretches_s: list[float], steps: int, tokens_per_step: int,
                   power_limit_w: float | None, clocks_mhz: list[int]) -> dict[str, Any] | None:
    """The measured steps' energy from the counter's joules over their stretches (a run's measured loop, a shared
    process's blocks); None without readings (a CPU run, a GPU without the counter), a reason where the stretches
    were too short for the counter to resolve."""
    if not stretches_s or steps <= 0:
        return None
    shortest = min(stretches_s)
    if shortest < MIN_STRETCH_S or joules <= 0:
        return {"missing": f"the steps ran {shortest:.2f} s at a stretch: NVML's energy counter moves about every "
                           f"{COUNTER_STEP_S:g} s, so {MIN_STRETCH_S:g} s or more is needed", "scope": SCOPE}
    seconds = sum(stretches_s)
    return {"joules_per_step": joules / steps, "tokens_per_joule": tokens_per_step * steps / joules,
            "watts": joules / seconds, "steps": steps, "power_limit_w": power_limit_w,
            "sm_clock_mhz": statistics.median(clocks_mhz) if clocks_mhz else None,
            "resolution_pct": round(100 * COUNTER_STEP_S / shortest, 1), "scope": SCOPE}


def group_energy(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A group summary's section: each process's tokens per joule (run order) and the medians over them; None
    unless every process has a figure."""
    sections = [e for e in (s.get("energy") for s in summaries)
                if isinstance(e, Mapping) and e.get("tokens_per_joule") is not None]
    if not sections or len(sections) != len(summaries):
        return None  # a median over some of the processes would not be the group's
    median = {key: _median([s.get(key) for s in sections])
              for key in ("joules_per_step", "tokens_per_joule", "watts", "power_limit_w", "sm_clock_mhz")}
    return median | {"per_process_tokens_per_joule": [s.get("tokens_per_joule") for s in sections],
                     "steps": sum(s.get("steps") or 0 for s in sections), "scope": SCOPE}


def _median(values: list[Any]) -> float | None:
    present = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(present) if present else None


def tokens_per_joule(summary: Mapping[str, Any]) -> float | None:
    energy = summary.get("energy")
    value = energy.get("tokens_per_joule") if isinstance(energy, Mapping) else None
    return value if isinstance(value, (int, float)) else None


def energy_line(summary: Mapping[str, Any]) -> str | None:
    """One line for a run's report: J/step, tokens/J, mean power against the cap, the SM clock; why there is no
    figure where the counter was read but could not resolve the steps; None without readings."""
    energy = summary.get("energy")
    if not isinstance(energy, Mapping):
        return None
    if energy.get("tokens_per_joule") is None:
        return f"energy N/A ({energy['missing']})" if isinstance(energy.get("missing"), str) else None
    cap = energy.get("power_limit_w")
    clock = energy.get("sm_clock_mhz")
    return (f"energy {energy['joules_per_step']:.3g} J/step · {energy['tokens_per_joule']:,.0f} tokens/J · "
            f"{energy['watts']:.0f} W" + (f" of a {cap:.0f} W cap" if cap else "")
            + (f" · SM {clock:.0f} MHz" if clock else "")
            + (f" (whole GPU; ±{energy['resolution_pct']:g}%)" if energy.get("resolution_pct") else " (whole GPU)"))
