"""Phase names and the NVTX range names that mark them: the one place both are spelled.

Imported by the model (attention sub-ranges), the runner's timer (phase ranges, step ranges) and the kernel
attribution (which reads the same names back out of a profile). No torch: the analyzers and the app import it.
"""
from __future__ import annotations

import re

FORWARD, BACKWARD, OPTIMIZER = "forward", "backward", "optimizer"
PHASES = (FORWARD, BACKWARD, OPTIMIZER)  # in step order; a mode runs a prefix of them
STEP = "step"  # the whole step's wall time, reported beside the phases
DATA = "data"  # a traced loop's wait for its next batch (sysprof trace): a rank's own time, not a wait for the others
OTHER = "other"  # kernels launched outside every phase range (data, synchronisation, the profiler itself)
FORWARD_BACKWARD = "forward+backward"  # per step, the sum of the two: the reports' "fwd+bwd" (not timed on its own)
TIMED_PHASES = (FORWARD, BACKWARD, FORWARD_BACKWARD, OPTIMIZER, STEP)  # a run's statistics and a comparison cover
ATTRIBUTED_PHASES = (*PHASES, OTHER)  # what a kernel table splits GPU time into

# NVTX range per phase; "optimizer step" is the CS336 handout's name for it.
PHASE_RANGES = {FORWARD: "forward", BACKWARD: "backward", OPTIMIZER: "optimizer step"}
# Reading a profile back: every range name that means a phase (a bare "optimizer" from users' scripts too).
PHASE_OF_RANGE = {**{name: phase for phase, name in PHASE_RANGES.items()}, "optimizer": OPTIMIZER}

# Reading a user's own profile: the names their scripts give each phase, matched without case (the tool's own first).
# `--phase forward=NAME,...` names them where these do not.
PHASE_ALIASES = {
    FORWARD: ("forward", "fwd", "forward pass", "forward_pass", "model forward"),
    BACKWARD: ("backward", "bwd", "backward pass", "backward_pass", "loss.backward", "loss backward"),
    OPTIMIZER: ("optimizer step", "optimizer", "opt", "optim", "optimizer.step", "optimizer_step", "opt step",
                "opt_step"),
}
# A user's step ranges, read as the tool's `step N`: "train step 3", "train_step_3", "iteration 3", "iter 3".
STEP_ALIAS = re.compile(r"^(?:train[ _-]?step|training[ _-]step|step|iteration|iter)[ _#-]?(\d+)$", re.IGNORECASE)

def phase_option(text: str) -> dict[str, str]:
    """`forward=fwd,backward=bwd` → {"forward": "fwd", "backward": "bwd"}; ValueError with the reason."""
    chosen: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        phase, separator, name = item.partition("=")
        phase = phase.strip().lower()
        if not separator or not name.strip():
            raise ValueError(f"{item!r}: expected PHASE=RANGE NAME")
        if phase not in PHASES:
            raise ValueError(f"{phase!r} is not a phase (one of {', '.join(PHASES)})")
        chosen[phase] = name.strip()
    if not chosen:
        raise ValueError("expected PHASE=RANGE NAME, e.g. forward=fwd,backward=bwd,optimizer=opt")
    return chosen


WARMUP_RANGE = "warmup"
COMPILE_RANGE = "compile"
STEP_RANGE = re.compile(r"^step (\d+)$")


def step_range(index: int) -> str:
    """The range around measured step `index` (matches STEP_RANGE)."""
    return f"step {index}"


# The naive attention's ranges, as the CS336 reports time them, with scale and mask in a range of their own so
# that "computing attention scores" is the QKᵀ matmul alone. Profiles made before that split have three parts, and
# their scores range holds the scale and mask kernels too.
ATTENTION_RANGE = "scaled dot product attention"
ATTENTION_SCORES, ATTENTION_MASK = "computing attention scores", "scale and mask"
ATTENTION_SOFTMAX, ATTENTION_OUTPUT = "computing softmax", "final matmul"
ATTENTION_PARTS = (ATTENTION_SCORES, ATTENTION_MASK, ATTENTION_SOFTMAX, ATTENTION_OUTPUT)  # in forward order


def attention_part_labels(mask_range: bool = True) -> dict[str, str]:
    """How tables name each part where a phase would stand (the Kernels screen's `p`); `mask_range` False: a profile
    made before the split, whose scores range holds scale and mask too."""
    return {ATTENTION_SCORES: "attn QKᵀ" if mask_range else "attn QKᵀ+mask", ATTENTION_MASK: "attn mask",
            ATTENTION_SOFTMAX: "attn softmax", ATTENTION_OUTPUT: "attn PV"}


# Per-module ranges (--nvtx-modules): "module:<dotted path>:<class name>", e.g.
# "module:layers.0.attn:CausalSelfAttention". The same text tags the module's allocations in a memory snapshot,
# so one parser reads both back. Paths and class names never hold a ":".
MODULE_RANGE_PREFIX = "module:"


def module_range(path: str, type_name: str) -> str:
    return f"{MODULE_RANGE_PREFIX}{path}:{type_name}"


def parse_module_range(name: str) -> tuple[str, str] | None:
    """(path, class name) of a module range or memory tag; None for any other text."""
    if not name.startswith(MODULE_RANGE_PREFIX):
        return None
    path, separator, type_name = name[len(MODULE_RANGE_PREFIX):].rpartition(":")
    return (path, type_name) if separator and path else None


def is_tool_range(name: str) -> bool:
    """Whether sysprof itself opens ranges of this name (anything else in a profile is the user's own range)."""
    return (name in PHASE_OF_RANGE or name in (WARMUP_RANGE, COMPILE_RANGE, ATTENTION_RANGE, *ATTENTION_PARTS)
            or STEP_RANGE.match(name) is not None or name.startswith(MODULE_RANGE_PREFIX))
