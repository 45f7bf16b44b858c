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
Two exceptions. On a GPU the fused optimizer step and SDPA join whatever their expected gain: neither compiles on its
own nor is slower than what it replaces, and the change at once compiles anyway. FP8 takes bf16's place in it for the
built-in model from FP8_MIN_WIDTH wide on a GPU with FP8 tensor cores: its Linear is swapped for torch's, and its
matmuls are large enough that FP8's casts pay (2.7B, 2560 wide: 1.19× bf16's tokens/s on an H200). That one compile,
2.3× bf16's, is what a 10-minute budget can afford for 2.7B: bf16 alone first would leave no room for it.
"""
from __future__ import annotations

import dataclasses
import math

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.memory.fit import HOST_MEMORY
from sysprof.profiler_core.studies.kinds.advise.budget_plan import by_expected_gain
from sysprof.profiler_core.studies.kinds.advise.candidates import (
    FP8_LINEARS,
    FUSED_STEP,
    Candidate,
    batch_candidate,
    chain,
)
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, estimated_peak

LEFT_OUT = frozenset({"compiled optimizer step", FP8_LINEARS, "torch.compile max-autotune"})
MIN_PRIOR = 1.1  # a change expected to gain less is left out of it: a CPU's C++ compile (1.05) costs minutes
LADDER = (4, 8, 16)  # the batches it may take, × the baseline's
# Of the device's memory, the most its larger batch may be estimated to need: the other arms of its shared processes
# need the rest, and the estimate (memory.py) is of a config not yet run.
LADDER_SHARE = 0.5
FREE = frozenset({FUSED_STEP, "SDPA attention"})  # on a GPU: no compile of their own, never slower
# The built-in model's width from which FP8 joins: torchao's float8 training pays where the matmuls are large
# (thousands wide); 2.7B (2560) gained 1.19× on an H200. Narrower presets were not measured with FP8.
FP8_MIN_WIDTH = 2048


def together(base: RunConfig, weighted: list[Candidate], limit: tuple[int, str] | None,
             seen: Seen) -> Candidate | None:
    """Each kind's best applicable change (the diagnosis's order) at once, where at least two combine and fit, at
    the largest batch the measured memory allows."""
    on_gpu = limit is not None and limit[1] != HOST_MEMORY
    usable = [c for c in weighted if _joins(base, c, on_gpu)]
    firsts: dict[str, Candidate] = {}
    for candidate in by_expected_gain(usable):
        firsts.setdefault(candidate.group, candidate)
    for fp8 in (c for c in usable if c.name == FP8_LINEARS):  # in bf16's place, where it joins at all
        firsts[fp8.group] = fp8
    if "batch" in firsts:
        firsts["batch"] = _largest_batch(base, firsts, limit, seen)
    steps = chain(base, [(c.name, c.changes) for c in firsts.values()], limit, seen)
    if not steps or " + " not in steps[-1][0]:
        return None
    name, changes = steps[-1]
    members = [c for c in firsts.values() if c.name in name.split(" + ")]
    prior = math.prod(max(c.prior, 1.0) for c in members)
    return Candidate(name, changes, "tokens/s", prior, config=dataclasses.replace(base, **changes))


def _joins(base: RunConfig, candidate: Candidate, on_gpu: bool) -> bool:
    """Whether a candidate may be part of the change at once (the module's docstring says which and why)."""
    if candidate.config is None:
        return False
    if candidate.name == FP8_LINEARS:
        return on_gpu and not base.model_factory and base.spec().d_model >= FP8_MIN_WIDTH
    if candidate.name in LEFT_OUT:
        return False
    return candidate.prior >= MIN_PRIOR or (on_gpu and candidate.name in FREE)


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
