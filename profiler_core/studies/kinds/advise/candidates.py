"""The advisor's candidates: the changes the tool can make to a config, each with why it applies or why not, and
the steps of their combination (pure: no torch, nothing run). The plan a budget allows is budget_plan.py's.

A candidate is measured, never assumed (study.py runs it against the baseline, interleaved). The
`prior` below only orders candidates for a budget cut: the gains these changes usually give, not a claim.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field
from typing import Any

from sysprof.profiler_core.base.config import ATTENTION_NAMES, FP8_MIN_CAPABILITY, RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.base.options import flag
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, fit_problem_seen

FUSED_OPTIMIZERS = ("torch.optim.Adam", "torch.optim.AdamW", "torch.optim.SGD")
BATCH_FACTORS = (2, 4)  # a larger batch is judged on tokens/s; two doublings cover where the gain flattens

# Candidates that change the same thing are alternatives: the plan measures one of each group before a second of any,
# and the combination never adds one on top of another (bf16 autocast leaves TF32 no fp32 matmul to speed up).
GROUPS = {"dtype": "precision", "matmul_precision": "precision", "compile": "compile", "compile_mode": "compile",
          "optimizer_impl": "optimizer", "batch": "batch"}


def group_of(changes: dict[str, Any]) -> str:
    return next((GROUPS.get(name, name) for name in changes), "")


@dataclass(frozen=True)
class Candidate:
    name: str
    changes: dict[str, Any]  # RunConfig fields over the baseline's
    moves: str  # the row of the comparison it should move: a phase, or tokens/s for a larger batch
    prior: float  # the usual speed-up of such a change, to order a budget cut
    reason: str | None = None  # why it cannot apply here (None: it applies)
    # What an answer must have taken for this candidate to be tried on top of it in that change's place (FP8 for
    # bf16): a change of a group the answer changed is otherwise an alternative, never added
    refines: dict[str, Any] | None = field(default=None, compare=False)
    config: RunConfig | None = field(default=None, compare=False)

    @property
    def options(self) -> str:
        return options_text(self.changes)

    @property
    def group(self) -> str:
        return group_of(self.changes)


def options_text(changes: dict[str, Any]) -> str:
    """The command-line options a change is (`--compile --compile-mode reduce-overhead`)."""
    return " ".join(flag(name) if value is True else f"{flag(name)} {value}" for name, value in changes.items())


def chain(base: RunConfig, ranked: list[tuple[str, dict[str, Any]]], limit: tuple[int, str] | None,
          seen: Seen | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The second stage's steps: the best candidate alone (measured again: its gain must hold against a fresh
    baseline to be recommended), then each next one added to it, as (names, changes). A candidate of a group
    already changed (a second compile mode, another batch, TF32 after bf16) is an alternative, not an addition, and
    one whose combined config is invalid or cannot fit is left out. ranked: best first."""
    steps: list[tuple[str, dict[str, Any]]] = []
    names: list[str] = []
    changes: dict[str, Any] = {}
    for name, change in ranked:
        merged = changes | change
        combined = dataclasses.replace(base, **merged)
        # any kind it changes already changed: every change at once after one of its parts is an alternative too
        taken = {group_of({f: v}) for f, v in change.items()} & {group_of({f: v}) for f, v in changes.items()}
        if taken or config_problems(combined) or fit_problem_seen(combined, limit, seen or Seen()):
            continue
        names.append(name)
        changes = merged
        steps.append((" + ".join(names), merged))
    return steps


def candidates(cfg: RunConfig, on_gpu: bool, limit: tuple[int, str] | None, seen: Seen = Seen()) -> list[Candidate]:
    """Every change the advisor knows, in order: those that apply carry their config; the others their reason."""
    found = [*_precision(cfg, on_gpu, seen), _attention(cfg, seen.factory_kwargs), *_compiles(cfg, on_gpu),
             *_optimizer(cfg, on_gpu), *_batches(cfg), _checkpointed_batch(cfg, limit, seen),
             *_parallel(cfg, on_gpu)]
    return [_checked(cfg, candidate, limit, seen) for candidate in found]


def _checked(cfg: RunConfig, candidate: Candidate, limit: tuple[int, str] | None, seen: Seen) -> Candidate:
    """The candidate's config, or the reason it cannot run: a problem the config check finds, or no fit."""
    if candidate.reason:
        return candidate
    changed = dataclasses.replace(cfg, **candidate.changes)
    problem = next(iter(config_problems(changed).values()), None) or fit_problem_seen(changed, limit, seen)
    if problem:
        return dataclasses.replace(candidate, reason=problem)
    return dataclasses.replace(candidate, config=changed)


def _precision(cfg: RunConfig, on_gpu: bool, seen: Seen) -> list[Candidate]:
    bf16 = Candidate("bf16 autocast", {"dtype": "bf16"}, "step", 2.0)
    tf32 = Candidate("TF32 for fp32 matmuls", {"matmul_precision": "high"}, "step", 1.8)
    fp8 = _fp8(cfg, on_gpu, seen)
    if cfg.dtype != "fp32":
        return [dataclasses.replace(bf16, reason=f"already {cfg.dtype}"),
                dataclasses.replace(tf32, reason=f"{cfg.dtype} autocast: its matmuls are not fp32"), fp8]
    if not on_gpu:
        return [dataclasses.replace(bf16, prior=1.1), dataclasses.replace(tf32, reason="TF32 is a CUDA matmul mode"),
                fp8]
    if cfg.matmul_precision != "highest":
        return [bf16, dataclasses.replace(tf32, reason=f"already --matmul-precision {cfg.matmul_precision}"), fp8]
    return [bf16, tf32, fp8]


def _fp8(cfg: RunConfig, on_gpu: bool, seen: Seen) -> Candidate:
    """FP8 linear layers over bf16 autocast (torchao's float8 training). Its gain grows with the matmuls' size:
    after bf16 it is tried in bf16's place on top of the answer (refine.py). Whether a user's model has
    torch.nn.Linear layers to swap is known only once built: its smoke test says."""
    fp8 = Candidate(FP8_LINEARS, {"dtype": "fp8"}, "step", 1.9, refines={"dtype": "bf16"})
    if cfg.dtype == "fp8":
        return dataclasses.replace(fp8, reason="already fp8")
    if not on_gpu:
        return dataclasses.replace(fp8, reason="FP8 needs a CUDA GPU with FP8 tensor cores")
    if seen.capability and tuple(map(int, seen.capability.split(".")[:2])) < FP8_MIN_CAPABILITY:  # once known
        return dataclasses.replace(fp8, reason=f"this GPU (compute capability {seen.capability}) has no FP8 tensor "
                                               "cores: they need 8.9 or more (H100, H200, L4)")
    if importlib.util.find_spec("torchao") is None:
        return dataclasses.replace(fp8, reason="needs torchao's float8 training: pip install torchao")
    return fp8


def _attention(cfg: RunConfig, factory_kwargs: dict[str, Any] | None) -> Candidate:
    sdpa = Candidate("SDPA attention", {"attention": "sdpa"}, "step", 1.3)
    if cfg.attention == "sdpa":
        return dataclasses.replace(sdpa, reason="already SDPA")
    if not cfg.model_factory:
        return sdpa
    names = ", ".join(ATTENTION_NAMES)
    if factory_kwargs is None:  # before the diagnosis ran the factory
        return dataclasses.replace(sdpa, reason=f"your model's own attention: the tool reaches it only through a "
                                                f"factory parameter named {names}")
    taken = [name for name in ATTENTION_NAMES if name in factory_kwargs]
    if not taken:
        return dataclasses.replace(sdpa, reason=f"your model's own attention: {cfg.model_factory} takes no "
                                                f"parameter named {names}; its code must change")
    name = taken[0]
    pinned = {item.partition("=")[0].strip() for item in cfg.model_args}  # --model-arg NAME=… wins over --attention
    if any(taken_name in pinned for taken_name in taken) or (
            factory_kwargs[name] != ATTENTION_NAMES[name].get(cfg.attention, cfg.attention)):
        return dataclasses.replace(sdpa, reason=f"your model's {name} is set by its own arguments "
                                                f"({name}={factory_kwargs[name]!r}), not by --attention")
    return sdpa


FUSED_STEP = "fused optimizer step"
FP8_LINEARS = "FP8 linear layers (torchao)"
COMPILE_PREFIX = "torch.compile "
# Candidates that leave the compiled model's graphs as they are (the fused step runs outside them): a combination
# step that adds one to a compiled step finds its graphs in inductor's on-disk cache, which the step before
# filled when it ran.
SAME_COMPILED_GRAPHS = frozenset({FUSED_STEP})


def _compiles(cfg: RunConfig, on_gpu: bool) -> list[Candidate]:
    modes = [("default", 1.3), ("reduce-overhead", 2.5), ("max-autotune", 1.4)]
    found = [Candidate(f"{COMPILE_PREFIX}{mode}", {"compile": True} | ({"compile_mode": mode} if mode != "default"
                                                                     else {}), "step", prior)
             for mode, prior in modes]
    if cfg.compile:
        return [dataclasses.replace(c, reason=f"already compiled ({cfg.compile_mode})") for c in found]
    if cfg.nvtx_modules:
        return [dataclasses.replace(c, reason="--nvtx-modules needs eager modules") for c in found]
    if not on_gpu:  # inductor on the CPU compiles C++ for tens of seconds; CUDA graphs need CUDA
        return [dataclasses.replace(found[0], prior=1.05), *(dataclasses.replace(c, reason="needs CUDA")
                                                            for c in found[1:])]
    return found


def _optimizer(cfg: RunConfig, on_gpu: bool) -> list[Candidate]:
    fused = Candidate(FUSED_STEP, {"optimizer_impl": "fused"}, "optimizer", 1.15)
    compiled = Candidate("compiled optimizer step", {"optimizer_impl": "compiled"}, "optimizer", 1.15)
    if cfg.mode != "train":
        return [dataclasses.replace(c, reason=f"no optimizer step in mode {cfg.mode}") for c in (fused, compiled)]
    if cfg.optimizer_impl in ("fused", "compiled"):
        return [dataclasses.replace(c, reason=f"already --optimizer-impl {cfg.optimizer_impl}")
                for c in (fused, compiled)]
    if cfg.optimizer not in FUSED_OPTIMIZERS:
        fused = dataclasses.replace(fused, reason=f"{cfg.optimizer} has no fused implementation in torch")
    elif not on_gpu:
        fused = dataclasses.replace(fused, reason="fused kernels are CUDA's here")
    return [fused, compiled]


def _batches(cfg: RunConfig) -> list[Candidate]:
    return [batch_candidate(cfg, factor) for factor in BATCH_FACTORS]


def _checkpointed_batch(cfg: RunConfig, limit: tuple[int, str] | None, seen: Seen) -> Candidate:
    """The largest batch of BATCH_FACTORS that does not fit as it is but fits with activation checkpointing: memory
    bought with a second forward of every block, worth it only where a larger batch needs it."""
    found = Candidate("activation checkpointing", {"activation_checkpointing": True}, "tokens/s", 1.0)
    if cfg.mode == "forward" or cfg.activation_checkpointing:
        return dataclasses.replace(found, reason="already on" if cfg.activation_checkpointing else
                                   "no backward in mode forward")
    for factor in sorted(BATCH_FACTORS, reverse=True):
        larger = dataclasses.replace(cfg, batch=cfg.batch * factor)
        if fit_problem_seen(larger, limit, seen) and not fit_problem_seen(
                dataclasses.replace(larger, activation_checkpointing=True), limit, seen):
            return Candidate(f"batch {larger.batch} with activation checkpointing",
                             {"batch": larger.batch, "activation_checkpointing": True}, "tokens/s",
                             1.0 + factor / 20)  # half a plain batch's: every block's forward runs twice
    return dataclasses.replace(found, reason="every larger batch fits without it (or not even with it): it would "
                                             "only add a forward")


def batch_candidate(cfg: RunConfig, factor: int) -> Candidate:
    return Candidate(f"batch {cfg.batch * factor}", {"batch": cfg.batch * factor}, "tokens/s", 1.0 + factor / 10)


def _parallel(cfg: RunConfig, on_gpu: bool) -> list[Candidate]:
    """FSDP beside DDP, and DDP's own settings: larger buckets (fewer all-reduces), gradients as bucket views (no
    copy), a static graph, gradients compressed for the all-reduce (bf16 where NCCL runs it, fp16 on gloo)."""
    if cfg.nproc < 2 or cfg.parallel != "ddp":
        return []
    hook = "bf16" if on_gpu else "fp16"
    found = [Candidate("FSDP instead of DDP", {"parallel": "fsdp"}, "step", 1.05),
             Candidate("DDP buckets of 100 MB", {"ddp_bucket_mb": 100}, "step", 1.03),
             Candidate("DDP gradients as bucket views", {"ddp_bucket_view": True}, "step", 1.03),
             Candidate("DDP static graph", {"ddp_static_graph": True}, "step", 1.02),
             Candidate(f"DDP {hook} gradient compression", {"ddp_comm_hook": hook}, "step", 1.05)]
    return [candidate if all(getattr(cfg, name) == getattr(RunConfig, name) for name in candidate.changes)
            else dataclasses.replace(candidate, reason="already set") for candidate in found]
