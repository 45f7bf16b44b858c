"""Findings about a training loop from its own steps (a traced loop: sysprof.trace): pure functions of the step
records, each finding saying what it rests on.

- input-bound: the share of each step spent waiting for the next batch (the data phase). On CUDA the data phase is
  GPU time between two events, so it is the time the GPU sat idle for the batch, not the host's loading time.
- periodic spikes: steps far above the median that recur every N steps (evaluation, checkpointing, logging), named
  with their period and kept out of nothing but the headline: the medians already leave them out.
- drift: steps getting slower over the job (or memory growing), with the step where it began.
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from sysprof.profiler_core.base.records import clean_measured

DATA_PHASES = ("data", "dataloader", "input", "batch", "load")
INPUT_BOUND_SHARE = 0.20  # a data phase this share of the median step or more: the loop waits for its input
# (a prefetched batch still costs its hand-over from a worker: on a busy 2-core host up to a tenth of a small step)
SPIKE_FACTOR = 1.5  # a step this many times the median, and far outside the steps' spread, is a spike
SPIKE_MADS = 6.0
DRIFT_RATIO = 1.10  # the last fifth's median this much above the first fifth's
DRIFT_P = 0.01
MIN_STEPS = 10


def loop_findings(steps: list[dict[str, Any]]) -> list[dict[str, str]]:
    measured = [dict(s) for s in clean_measured(steps)]
    if len(measured) < MIN_STEPS:
        return []
    found = [input_bound(measured), periodic_spikes(measured), drift(measured), memory_growth(measured)]
    return [finding for finding in found if finding]


def _clock(steps: list[dict[str, Any]]) -> str:
    return "GPU time between CUDA events" if steps[0].get("clock") == "cuda" else "the host's clock"


def input_bound(steps: list[dict[str, Any]]) -> dict[str, str] | None:
    name = next((p for p in DATA_PHASES if all(p in s["phases_ms"] for s in steps)), None)
    if name is None:
        return None
    data = statistics.median(s["phases_ms"][name] for s in steps)
    step = statistics.median(s["wall_ms"] for s in steps)
    share = data / step if step else 0.0
    if share < INPUT_BOUND_SHARE:
        return None
    waits = "the GPU waits" if steps[0].get("clock") == "cuda" else "the loop waits"
    return {"kind": "input-bound",
            "text": f"input-bound: {waits} {share:.0%} of each step for the next batch ({name} {data:.1f} ms of a "
                    f"{step:.1f} ms step, medians of {len(steps)} steps); more DataLoader workers, pinned memory "
                    f"or prefetching would hide it",
            "rests_on": f"the '{name}' phase timed with {_clock(steps)}, against the step's"}


def _spike_indices(steps: list[dict[str, Any]]) -> list[int]:
    walls = [s["wall_ms"] for s in steps]
    median = statistics.median(walls)
    mad = statistics.median(abs(w - median) for w in walls) or 1e-9
    return [s["index"] for s, w in zip(steps, walls)
            if w > SPIKE_FACTOR * median and (w - median) / (1.4826 * mad) > SPIKE_MADS]


def periodic_spikes(steps: list[dict[str, Any]]) -> dict[str, str] | None:
    found = _spike_indices(steps)
    period = _period(found)
    spikes = _on_the_period(found, period) if period else []
    if len(spikes) < 3:
        return None
    by_index = {s["index"]: s for s in steps}
    spiked = statistics.median(by_index[i]["wall_ms"] for i in spikes)
    usual = statistics.median(s["wall_ms"] for s in steps if s["index"] not in set(found))
    where = _where_the_time_went(steps, spikes, set(found))
    return {"kind": "periodic spikes",
            "text": f"every {period} steps a step takes {spiked:.1f} ms against {usual:.1f} ms (steps "
                    f"{', '.join(map(str, spikes[:4]))}{', …' if len(spikes) > 4 else ''}; {len(spikes)} in all), "
                    f"{where}: evaluation, checkpointing or logging every {period} steps? The medians leave them out",
            "rests_on": f"step times ({_clock(steps)}) above {SPIKE_FACTOR}× the median and {SPIKE_MADS:g} MADs "
                        f"out, recurring at one period"}


def _period(spikes: list[int]) -> int | None:
    """The distance at which most spikes have another spike after them: the neighbours' gaps and the gaps two and
    three spikes on are the candidates (two events of one period at different offsets alternate their gaps); the
    shortest wins a tie. None when it pairs too few of them to be a period."""
    if len(spikes) < 3:
        return None
    at = set(spikes)
    candidates = Counter(b - a for k in (1, 2, 3) for a, b in zip(spikes, spikes[k:])).most_common(5)
    pairs = {gap: sum(index + gap in at for index in spikes) for gap, _ in candidates}
    period = min(pairs, key=lambda gap: (-pairs[gap], gap))
    return period if pairs[period] >= max(2, (len(spikes) - 1) // 2) else None


def _on_the_period(spikes: list[int], period: int) -> list[int]:
    """The spikes that recur at the period (two events of one period at different offsets both do): a lone spike
    from something else on the host (step 2 of 5, 10, 15, …) is neither listed nor counted where the time went."""
    residues = Counter(index % period for index in spikes)
    return [index for index in spikes if residues[index % period] >= 2]


def _where_the_time_went(steps: list[dict[str, Any]], spikes: list[int], every_spike: set[int]) -> str:
    """The phase (or the time outside every phase) that grew most in the spiked steps, against the steps that are
    no spike at all."""
    def parts(step: dict[str, Any]) -> dict[str, float]:
        return step["phases_ms"] | {"outside the phases": step["wall_ms"] - sum(step["phases_ms"].values())}
    spiked = [parts(s) for s in steps if s["index"] in set(spikes)]
    usual = [parts(s) for s in steps if s["index"] not in every_spike]
    names = dict.fromkeys(name for p in spiked for name in p)  # a phase only the spiked steps have (eval) counts
    growth = {name: statistics.median(p.get(name, 0.0) for p in spiked) - statistics.median(p.get(name, 0.0)
                                                                                            for p in usual)
              for name in names}
    name = max(growth, key=lambda key: growth[key])
    return f"the extra time in {name}" if name == "outside the phases" else f"the extra time in the {name} phase"


def drift(steps: list[dict[str, Any]]) -> dict[str, str] | None:
    from scipy.stats import mannwhitneyu

    fifth = max(len(steps) // 5, 3)
    first, last = [s["wall_ms"] for s in steps[:fifth]], [s["wall_ms"] for s in steps[-fifth:]]
    ratio = statistics.median(last) / statistics.median(first)
    if ratio < DRIFT_RATIO or mannwhitneyu(first, last, alternative="less").pvalue > DRIFT_P:
        return None
    began = _drift_began(steps, statistics.median(first))
    return {"kind": "drift",
            "text": f"steps got slower over the job: the last {fifth} steps' median is {ratio:.2f}× the first "
                    f"{fifth}'s, from about step {began}; clocks (heat, power cap), memory growth or a neighbour "
                    f"on the GPU",
            "rests_on": f"step times ({_clock(steps)}), the first and last fifths compared (Mann-Whitney, "
                        f"p ≤ {DRIFT_P})"}


def _drift_began(steps: list[dict[str, Any]], baseline_ms: float) -> int:
    """The first step of the first of 20 blocks from which every block's median stays above the first fifth's
    by half the drift threshold."""
    size = max(len(steps) // 20, 1)
    blocks = [steps[i:i + size] for i in range(0, len(steps), size)]
    above = [statistics.median(s["wall_ms"] for s in block) > baseline_ms * (1 + (DRIFT_RATIO - 1) / 2)
             for block in blocks]
    last_below = max((i for i, is_above in enumerate(above) if not is_above), default=-1)
    return blocks[min(last_below + 1, len(blocks) - 1)][0]["index"]


def memory_growth(steps: list[dict[str, Any]]) -> dict[str, str] | None:
    peaks = [max(s["peak_allocated_bytes"].values()) for s in steps if s.get("peak_allocated_bytes")]
    if len(peaks) < MIN_STEPS:
        return None
    fifth = max(len(peaks) // 5, 3)
    first, last = statistics.median(peaks[:fifth]), statistics.median(peaks[-fifth:])
    if last < first * 1.10 or last - first < 64 * 2**20:
        return None
    return {"kind": "memory growth",
            "text": f"peak memory grew over the job, from {first / 2**30:.2f} GiB to {last / 2**30:.2f} GiB a step: "
                    f"tensors kept across steps (a loss summed without .item(), a list of outputs)?",
            "rests_on": "torch.cuda.max_memory_allocated() per phase, the first and last fifths of the steps"}
