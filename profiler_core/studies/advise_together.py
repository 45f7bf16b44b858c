"""The candidate an expert tries first on a step that several things hold back: every applicable kind of change at
once, each kind's best (a larger batch, bf16, CUDA graphs, SDPA …), measured beside the baseline like any other.

One at a time, each change is judged against the first bottleneck: on a launch-bound step bf16 reads "within noise"
(the GPU waits for launches, not for matmuls) and a larger batch reads as its own gain only. Together they remove the
launch gaps and then the matmul time (the CS336-style user model on an H200: batch 16 + bf16 + reduce-overhead 16.7×
the baseline's tokens/s, reduce-overhead alone 3.2×, bf16 alone within noise). The combination stage measures it
again and steps on from it; the last stage (advise_refine.py) doubles its batch. Left out of it: a change that may
not apply to a user's code until tried (the compiled optimizer step), max-autotune, whose compile alone takes
minutes, and any change expected to gain under 10% (a CPU's torch.compile: minutes of C++ for a few percent).
"""
from __future__ import annotations

import dataclasses
import math

from sysprof.profiler_core.config import RunConfig
from sysprof.profiler_core.studies.advice import Candidate, Seen, by_expected_gain, chain

LEFT_OUT = frozenset({"compiled optimizer step", "torch.compile max-autotune"})
MIN_PRIOR = 1.1  # a change expected to gain less is left out of it: a CPU's C++ compile (1.05) costs minutes


def together(base: RunConfig, weighted: list[Candidate], limit: tuple[int, str] | None,
             seen: Seen) -> Candidate | None:
    """Each kind's best applicable change (the diagnosis's order) at once, where at least two combine and fit."""
    firsts: dict[str, Candidate] = {}
    usable = [c for c in weighted if c.config is not None and c.name not in LEFT_OUT and c.prior >= MIN_PRIOR]
    for candidate in by_expected_gain(usable):
        firsts.setdefault(candidate.group, candidate)
    steps = chain(base, [(c.name, c.changes) for c in firsts.values()], limit, seen)
    if not steps or " + " not in steps[-1][0]:
        return None
    name, changes = steps[-1]
    members = [c for c in firsts.values() if c.name in name.split(" + ")]
    prior = math.prod(max(c.prior, 1.0) for c in members)
    return Candidate(name, changes, "tokens/s", prior, config=dataclasses.replace(base, **changes))
