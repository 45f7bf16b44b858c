"""Instability warnings: what makes a run's numbers less trustworthy than they look, each with its cause and remedy.

Pure functions of a summary, its steps and readings the caller takes while the steps run (the host's load average
and core count, the GPU's other processes, NVML samples), so a live run, a saved directory and a test get the same
answers. Each returns a list of {"code", "message", ...} dicts; the message says what was seen, why it matters and
what to do. Torch-free and UI-free.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.models.phases import FORWARD_BACKWARD, STEP
from sysprof.profiler_core.base.records import phases_of

HIGH_CV = 0.10  # within-run coefficient of variation
SLOW_START = 1.1  # first measured steps this much slower than the rest: still warming up
PRECISION, Z_95 = 0.01, 1.96  # ±1% at 95%
INFLATION_LIMIT = 1.5  # a profiled or memory pass slower than the clean one by more than this
CLOCK_CHANGE = 0.05  # SM clock range over its maximum during the measured steps
# NVML clock-event labels (nvml.THROTTLE_REASONS) that mean the GPU slowed itself down; "idle" (gaps between
# launches), "app clocks" (a fixed setting) and "sync boost" (held to a group's clock) do not move during a run.
THROTTLING = ("power cap", "hw slowdown", "sw thermal", "hw thermal", "power brake")


def _warning(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"code": code, "message": message, **details}


def high_cv_warnings(phases: Mapping[str, Mapping[str, Any]], repeats: int = 1) -> list[dict]:
    """Phases whose steps vary by 10% or more within the run (one warning naming them all)."""
    noisy = {phase: stats["cv"] for phase, stats in phases.items()
             if (stats.get("cv") or 0.0) >= HIGH_CV and phase != FORWARD_BACKWARD}  # its parts are named
    if not noisy:
        return []
    listed = ", ".join(f"{phase} {cv:.0%}" for phase, cv in noisy.items())
    last = "and use --repeats" if repeats <= 1 else "and read the spread between the processes, which compare weighs"
    return [_warning("high_cv", f"steps vary within the run (CV ≥ {HIGH_CV:.0%}: {listed}): something competes for "
                     f"the GPU or the host, or the clocks move; see the other warnings, stop other work on the node, "
                     f"{last}", phases=noisy)]


def measured_walls(steps: Sequence[Mapping[str, Any]]) -> list[float]:
    """Wall times of the clean pass's measured steps (a profiled or memory pass's steps carry "pass")."""
    return [s["wall_ms"] for s in steps if s.get("kind") == "measured" and not s.get("pass") and "wall_ms" in s]


def warmup_warnings(steps: Sequence[Mapping[str, Any]], warmup: int) -> list[dict]:
    """The first measured steps slower than the rest: the warm-up ended before the steps settled."""
    walls = measured_walls(steps)
    if len(walls) < 3:
        return []
    settled = statistics.median(walls[len(walls) // 2:])  # the later half: past any warm-up
    slow = 0
    while slow < len(walls) // 2 and walls[slow] > SLOW_START * settled:
        slow += 1
    if not slow or statistics.median(walls[:slow]) <= SLOW_START * statistics.median(walls[slow:]):
        return []
    first, rest, enough = statistics.median(walls[:slow]), statistics.median(walls[slow:]), warmup + slow
    return [_warning("short_warmup", f"the first {slow} measured step(s) took {first:.2f} ms against {rest:.2f} ms "
                     f"for the rest: warm-up too short; {enough} warm-up steps would do (--warmup {enough})",
                     slow_steps=slow, warmup_needed=enough)]


def steps_needed_warnings(phases: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """Too few steps to know the step time to ±1% at 95% (n = (1.96·CV / 0.01)²)."""
    stats = phases.get(STEP) or {}
    cv, n = stats.get("cv"), stats.get("n") or 0
    if not cv or not n:
        return []
    needed = math.ceil((Z_95 * cv / PRECISION) ** 2)
    if n >= needed:
        return []
    return [_warning("few_steps", f"{n} steps with a CV of {cv:.1%} give the step time to "
                     f"±{Z_95 * cv / math.sqrt(n):.1%}"
                     f" at 95%; {needed} steps would do for ±{PRECISION:.0%} (--steps {needed})", steps_needed=needed)]


def cpu_load_warnings(loadavg: float | Sequence[float] | None, cpu_count: int | None) -> list[dict]:
    """The host's load average (os.getloadavg(), the 1-minute one) above its core count."""
    load = loadavg if isinstance(loadavg, (int, float)) or loadavg is None else loadavg[0]
    if load is None or not cpu_count or load <= cpu_count:
        return []
    return [_warning("cpu_load", f"host CPU load {load:.1f} over {cpu_count} cores: other processes compete for the "
                     "CPU that launches the kernels, so launch-bound steps slow down and vary; run when the host is "
                     "quieter or on cores of your own (taskset)", load=load, cpu_count=cpu_count)]


def process_label(process: Any) -> str:
    """pid 4242 (python3, 1.2 GiB): an other process as NVML and /proc name it."""
    if isinstance(process, Mapping):
        pid, name, used = process.get("pid"), process.get("name"), process.get("used_bytes")
        details = ", ".join(part for part in (name, f"{used / 2**30:.1f} GiB" if used else None) if part)
        return " ".join(part for part in (f"pid {pid}" if pid is not None else None, details and f"({details})")
                        if part)
    return f"pid {process}" if isinstance(process, int) else str(process)


def _where(processes: Sequence[Any]) -> str:
    """'on GPU 1, rank 1's' (several ranks), 'on GPU 0' (one), or 'on this GPU' (old records without it)."""
    places = []
    for process in processes:
        if isinstance(process, Mapping) and process.get("gpu") is not None:
            rank = f", rank {process['rank']}'s" if process.get("rank") is not None else ""
            places.append(f"GPU {process['gpu']}{rank}")
    return "on " + " and ".join(dict.fromkeys(places)) if places else "on this GPU"


def gpu_process_warnings(gpu_processes: Sequence[Any] | None) -> list[dict]:
    """Other processes on the run's GPUs (pids, names, or NVML's {"pid", "name", "used_bytes", "gpu", "rank"}),
    naming the GPU and, with several ranks, the rank whose GPU each one shares."""
    if not gpu_processes:
        return []
    labels = ", ".join(process_label(p) for p in gpu_processes)
    return [_warning("gpu_shared", f"{len(gpu_processes)} other process(es) {_where(gpu_processes)} ({labels}): they "
                     "share its SMs and memory bandwidth, so the step times include their load; use a GPU of your "
                     "own (CUDA_VISIBLE_DEVICES) or wait until it is free", processes=labels)]


def _reading(sample: Any, name: str) -> Any:
    """A field of a telemetry sample: a dict (telemetry.jsonl) or an nvml.GpuTelemetry."""
    return sample.get(name) if isinstance(sample, Mapping) else getattr(sample, name, None)


def telemetry_warnings(samples: Sequence[Any] | None) -> list[dict]:
    """SM clock changes and throttling during the measured steps, from NVML samples ({"sm_clock_mhz",
    "throttle_reasons"} as nvml.GpuTelemetry has them)."""
    samples = samples or []
    warnings: list[dict] = []
    clocks = [c for s in samples if (c := _reading(s, "sm_clock_mhz")) is not None]
    if len(clocks) > 1 and (max(clocks) - min(clocks)) / max(clocks) >= CLOCK_CHANGE:
        warnings.append(_warning(
            "clock_change",
            f"the SM clock moved between {min(clocks)} and {max(clocks)} MHz during the measured steps: "
            "step times follow it; lock the clocks on a node you manage (nvidia-smi -lgc) or compare with --repeats, "
            "which interleaves runs", min_mhz=min(clocks), max_mhz=max(clocks)))
    seen = Counter(r for s in samples for r in set(_reading(s, "throttle_reasons") or ()) if r in THROTTLING)
    if seen:
        counts = ", ".join(f"{reason} in {count} of {len(samples)} samples" for reason, count in seen.most_common())
        warnings.append(_warning(
            "throttling", f"the GPU throttled during the measured steps ({counts}): it slowed its clocks for power or "
            "heat, so steps are slower and vary; check cooling and the power limit (nvidia-smi -q -d PERFORMANCE) or "
            "let it cool between runs", reasons=dict(seen)))
    return warnings


def inflation_warnings(summary: Mapping[str, Any]) -> list[dict]:
    """A profiled or memory pass that ran more than ×1.5 slower than the clean pass."""
    warnings = []
    # Older summaries kept only a path under "memory": no pass record, nothing to check.
    profile, memory = (record if isinstance(record := summary.get(key), Mapping) else {}
                       for key in ("profile", "memory"))
    if (profile.get("inflation") or 0.0) > INFLATION_LIMIT:
        warnings.append(_warning(
            "profile_inflation", f"the {profile.get('backend') or 'profiled'} pass ran ×{profile['inflation']:.2f} "
            "slower than the clean pass: the profiler stretches what it measures; the step times come from the clean "
            "pass, and its kernel tables are best read as shares, not absolute times", inflation=profile["inflation"]))
    if (memory.get("inflation") or 0.0) > INFLATION_LIMIT:
        warnings.append(_warning(
            "memory_inflation", f"the memory pass ran ×{memory['inflation']:.2f} slower than the clean pass (allocator "
            "history recording): its step times are not the step times; its memory figures are unaffected",
            inflation=memory["inflation"]))
    return warnings


def loss_warnings(steps: Sequence[Mapping[str, Any]]) -> list[dict]:
    """A loss that was NaN or infinite: the step still timed, but what it timed is not a sound training step (an
    overflow, a bad input, a bug in the model), and timings of broken numbers can differ from working ones."""
    broken = [s for s in steps if s.get("loss_not_finite") or _not_finite(s.get("loss"))]
    if not broken:
        return []
    first = broken[0]
    value = first.get("loss_not_finite") or str(first.get("loss"))
    return [_warning("loss_not_finite", f"the loss was {value} in {len(broken)} of {len(steps)} steps (first: "
                     f"{first.get('kind', 'step')} step {first.get('index', '?')}): the model's numbers are broken, so "
                     "these are not a working training step's timings; fix the model, its inputs or its precision "
                     "(fp16 overflows where bf16 does not)", steps=len(broken))]


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def warnings_for_summary(summary: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], *,
                         loadavg: float | Sequence[float] | None = None, cpu_count: int | None = None,
                         gpu_processes: Sequence[Any] | None = None,
                         telemetry: Sequence[Any] | None = None) -> list[dict]:
    """Every warning that applies to a run: from its summary and steps, plus the readings given (None: not read)."""
    phases = phases_of(summary)
    warmup = (summary.get("config") or {}).get("warmup") or 0
    repeats = (summary.get("config") or {}).get("repeats") or 1
    return [*high_cv_warnings(phases, repeats), *warmup_warnings(steps, warmup), *steps_needed_warnings(phases),
            *cpu_load_warnings(loadavg, cpu_count), *gpu_process_warnings(gpu_processes),
            *telemetry_warnings(telemetry), *inflation_warnings(summary), *loss_warnings(steps)]
