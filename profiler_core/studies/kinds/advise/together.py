"""The candidate an expert tries first on a step that several things hold back: every applicable kind of change at
once, each kind's best (a larger batch, bf16, CUDA graphs, SDPA …), measured beside the baseline like any other.

One at a time, each change is judged against the first bottleneck: on a launch-bound step bf16 reads "within noise"
(the GPU waits for launches, not for matmuls) and a larger batch reads as its own gain only. Together they remove the
launch gaps and then the matmul time (the CS336-style user model on an H200: batch 16 + bf16 + reduce-overhead 16.7×
the baseline's tokens/s, reduce-overhead alone 3.2×, bf16 alone within noise). Once the launch gaps are gone the
batch is what is left to grow (the same at batch 32 30.9×, at batch 64 37.5×): together takes the largest batch of
up to 16× the baseline's that the diagnosis's measured memory says fits in half the device. The combination stage
measures it again and steps on from it; the last stage (refine.py) doubles its batch. Left out of it: a change
that may not apply to a user's code until tried (the compiled optimizer step; FP8, which needs torch.nn.Linear
layers: on the CS336-style user model, whose Linear is its own, it failed and took the whole candidate with it,
on an H200), max-autotune, whose compile alone
takes minutes, and any change expected to gain under 10% (a CPU's torch.compile: minutes of C++ for a few percent).
"""
from __future__ import annotations

import dataclasses
import math

from sysprof.profiler_core.config import RunConfig
from sysprof.profiler_core.memory.fit import HOST_MEMORY
from sysprof.profiler_core.studies.kinds.advise.candidates import (
    FP8_LINEARS,
    Candidate,
    batch_candidate,
    by_expected_gain,
    chain,
)
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, estimated_peak

LEFT_OUT = frozenset({"compiled optimizer step", FP8_LINEARS, "torch.compile max-autotune"})
MIN_PRIOR = 1.1  # a change expected to gain less is left out of it: a CPU's C++ compile (1.05) costs minutes
LADDER = (4, 8, 16)  # the batches it may take, × the baseline's
# Of the device's memory, the most its larger batch may be estimated to need: the other arms of its shared processes
# need the rest, and the estimate (memory.py) is of a config not yet run.
LADDER_SHARE = 0.5


def together(base: RunConfig, weighted: list[Candidate], limit: tuple[int, str] | None,
             seen: Seen) -> Candidate | None:
    """Each kind's best applicable change (the diagnosis's order) at once, where at least two combine and fit, at
    the largest batch the measured memory allows."""
    firsts: dict[str, Candidate] = {}
    usable = [c for c in weighted if c.config is not None and c.name not in LEFT_OUT and c.prior >= MIN_PRIOR]
    for candidate in by_expected_gain(usable):
        firsts.setdefault(candidate.group, candidate)
    if "batch" in firsts:
        firsts["batch"] = _largest_batch(base, firsts, limit, seen)
    steps = chain(base, [(c.name, c.changes) for c in firsts.values()], limit, seen)
    if not steps or " + " not in steps[-1][0]:
        return None
    name, changes = steps[-1]
    members = [c for c in firsts.values() if c.name in name.split(" + ")]
    prior = math.prod(max(c.prior, 1.0) for c in members)
    return Candidate(name, changes, "tokens/s", prior, config=dataclasses.replace(base, **changes))


def _largest_batch(base: RunConfig, firsts: dict[str, Candidate], limit: tuple[int, str] | None,
                   seen: Seen) -> Candidate:
    """The batch group's candidate at the largest factor of LADDER whose config with every first change is
    estimated to need at most LADDER_SHARE of the device; the group's own where none larger is (a CPU, whose
    memory is not measured; no measured peak)."""
    chosen = firsts["batch"]
    if limit is None or limit[1] == HOST_MEMORY:
        return chosen
    others = {field: value for c in firsts.values() if c.group != "batch" for field, value in c.changes.items()}
    for factor in LADDER:
        larger = batch_candidate(base, factor)
        if larger.changes["batch"] <= chosen.changes["batch"]:
            continue
        estimate = estimated_peak(dataclasses.replace(base, **others, **larger.changes), seen)
        if estimate is None or estimate > limit[0] * LADDER_SHARE:
            break
        chosen = larger
    return chosen
