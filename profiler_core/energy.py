"""Energy of the measured steps, from the joules the runner read off NVML's counter around each step
(runner/energy.py): joules per step, tokens per joule, the mean power over the steps, and the power cap and SM clock
in force, which say what the figure depends on.

The counter is the whole GPU's: another process on the GPU is counted too, and the section says so. Joules are
summed over the steps, not a median: energy adds up, and the counter's coarse single readings only telescope over
a sum. A group of processes carries each process's tokens per joule and their median, as tokens/s does.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

SCOPE = "the whole GPU's counter: other processes on it are counted too"


def energy_section(steps: Sequence[Mapping[str, Any]], tokens_per_step: int,
                   power_limit_w: float | None) -> dict[str, Any] | None:
    """The measured steps' energy figures; None where no step carries joules (a CPU run, a GPU without the counter)."""
    read = [s for s in steps if s.get("kind") == "measured" and s.get("energy_j") is not None]
    joules = sum(s["energy_j"] for s in read)
    seconds = sum(s["wall_ms"] for s in read) / 1e3
    if not read or joules <= 0 or seconds <= 0:
        return None
    clocks = [s["sm_clock_mhz"] for s in read if s.get("sm_clock_mhz") is not None]
    return {"joules_per_step": joules / len(read), "tokens_per_joule": tokens_per_step * len(read) / joules,
            "watts": joules / seconds, "steps": len(read), "power_limit_w": power_limit_w,
            "sm_clock_mhz": statistics.median(clocks) if clocks else None, "scope": SCOPE}


def group_energy(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A group summary's section: each process's tokens per joule (run order) and the medians over them."""
    sections = [s["energy"] for s in summaries if isinstance(s.get("energy"), Mapping)]
    if not sections:
        return None
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
    """One line for a run's report: J/step, tokens/J, mean power against the cap, the SM clock; None without."""
    energy = summary.get("energy")
    if not isinstance(energy, Mapping) or energy.get("tokens_per_joule") is None:
        return None
    cap = energy.get("power_limit_w")
    clock = energy.get("sm_clock_mhz")
    return (f"energy {energy['joules_per_step']:.3g} J/step · {energy['tokens_per_joule']:,.0f} tokens/J · "
            f"{energy['watts']:.0f} W" + (f" of a {cap:.0f} W cap" if cap else "")
            + (f" · SM {clock:.0f} MHz" if clock else "") + " (whole GPU)")
