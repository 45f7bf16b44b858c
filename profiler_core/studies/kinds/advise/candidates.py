"""The advisor's candidates: the changes the tool can make to a config, each with why it applies or why not, and
the plan a budget allows (pure: no torch, nothing run).

A candidate is measured, never assumed (study.py runs it against the baseline, interleaved). The
`prior` below only orders candidates for a budget cut: the gains these changes usually give, not a claim.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import math
from dataclasses import dataclass, field
from typing import Any

from sysprof.profiler_core.base.config import (
    ATTENTION_NAMES,
    DIMENSION_NAMES,
    FP8_MIN_CAPABILITY,
    RunConfig,
    config_problems,
)
from sysprof.profiler_core.base.options import flag
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, fit_problem_seen

FUSED_OPTIMIZERS = ("torch.optim.Adam", "torch.optim.AdamW", "torch.optim.SGD")
BATCH_FACTORS = (2, 4)  # a larger batch is judged on tokens/s; two doublings cover where the gain flattens
# Seconds a fresh process takes beyond its steps (start, import, build) and a compile's extra, for the plan's
# estimate only; the advisor says "about".
PROCESS_S = {"cpu": 5.0, "cuda": 20.0}
# The same for a shared process (runner/arms.py: one python, no session process), and what each arm in it adds
# beyond its steps (its model's build and its optimizer). From the CS336-style user model (128.6M parameters) on an
# H200: a shared process's own start 6.8 s, an eager arm's build and optimizer 0.3–1.0 s beyond its steps.
SHARED_START_S = {"cpu": 2.5, "cuda": 8.0}
ARM_S = {"cpu": 0.2, "cuda": 1.0}
# A compiled candidate runs in this many processes (at most the baseline's): it compiles in every process it is in (a
# small model's reduce-overhead about 40 s, then 20–25 s from inductor's cache; 2.7B's 82 s, FP8's 192 s), and a
# compile's gain is large. In shared processes its verdict rests on blocks paired inside them (paired.py); in fresh
# ones (models too large to share a process) on Welch's t between the processes' medians, which calls 2.7B's compiled
# gains at p < 0.01 with two processes (the baseline's four vary by 0.03%).
COMPILED_PROCESSES = 2


def processes_of(cfg: RunConfig, base: RunConfig, shared: bool) -> int:
    """The processes a candidate's cell runs: the baseline's, or COMPILED_PROCESSES for one that compiles."""
    del shared  # the same either way: what a compile costs does not depend on it
    return min(base.repeats, COMPILED_PROCESSES) if cfg.compiles else base.repeats


def with_processes(cfg: RunConfig, base: RunConfig, shared: bool) -> RunConfig:
    return dataclasses.replace(cfg, repeats=processes_of(cfg, base, shared))
# A compile's seconds in the first process of a cell, and in the later ones, which inductor's cache on disk serves
# in part, as (seconds, seconds per Transformer block): Dynamo traces every block. Measured on H100s: small (12
# blocks) reduce-overhead 39 s, then 18–19 s; 2.7B (32 blocks) 73–82 s with a cold cache, then 34–48 s.
COMPILE_S = (20.0, 1.8)
CACHED_COMPILE_S = (8.0, 0.9)
# FP8's scaling and casts around every linear layer: 2.7B reduce-overhead on an H200 compiled in 192 s cold and 73 s
# from inductor's cache, against bf16's 82 s cold.
FP8_COMPILE_SCALE = 2.3
AUTOTUNE_COMPILE_S = 360.0  # max-autotune times kernel variants for every shape before it keeps one (small: 320 s)


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


@dataclass(frozen=True)
class Plan:
    chosen: list[Candidate]
    skipped: list[tuple[Candidate, str]]  # each with why: it cannot apply, or the budget
    estimate_s: float  # the baseline and the chosen candidates, every process
    # kept for the second stage: a fresh baseline and the costliest chosen candidate again (none for a lone one)
    second_s: float = 0.0


def plan(found: list[Candidate], budget_s: float, base: RunConfig, device: str,
         step_s: float | None = None, shared: bool = False, min_steps_s: float = 0.0, lanes: int = 1) -> Plan:
    """The applicable candidates in order of their expected gain, as many as the budget's estimate allows.
    step_s: the baseline's measured step (the diagnosis), so each process's steps count in the estimate: a
    candidate's step as the baseline's × its batch's growth ÷ its expected gain; without it only the processes'
    start-up and compiles count. shared: the candidates are arms of the baseline's processes (one start-up a round
    for all of them, studies/shared_rounds.py). min_steps_s: the least a process's steps of a config take (the energy
    goal's blocks last seconds however fast the steps are). lanes: GPUs whose processes run side by side: a cell's
    steps then take the clock time of ceil(processes / lanes) processes' steps, but its compiles are counted as if
    one after another: side by side, each is a cold compile sharing the host's CPUs (on two H200s, 44–70 s each
    against 35–42 s for a first one alone)."""
    start_s = (SHARED_START_S if shared else PROCESS_S).get(device, PROCESS_S["cuda"])
    arm_s = ARM_S.get(device, ARM_S["cuda"]) if shared else 0.0

    def process_s(cfg: RunConfig, gain: float, starts: bool = True) -> float:
        steps_s = 0.0 if step_s is None else (cfg.warmup + cfg.steps) * step_s * cfg.batch / base.batch / gain
        steps_s = max(steps_s, min_steps_s)
        return (start_s if starts else 0.0) + arm_s + steps_s

    def waves(processes: int) -> int:
        return math.ceil(processes / max(lanes, 1))

    spent = baseline_s = waves(base.repeats) * process_s(base, 1.0)  # the baseline's processes
    chosen: list[Candidate] = []
    skipped = [(c, c.reason) for c in found if c.reason]
    costliest = 0.0
    for candidate in by_expected_gain([c for c in found if not c.reason]):
        cfg, gain = candidate.config or base, max(candidate.prior, 1.0)
        processes = processes_of(cfg, base, shared)
        cost = waves(processes) * process_s(cfg, gain, not shared) + compile_s(candidate.config, processes)
        # Measured again as an arm, its graphs are in inductor's cache (the first stage compiled them); a fresh
        # process each still pays its start-up.
        again = cost if not shared else waves(processes) * process_s(cfg, gain, False) + compile_s(
            candidate.config, processes, cached=True)
        # Chosen among others, a gain is recommended only once measured again: the budget keeps room for that
        # (_combine's first step). A lone candidate was chosen among none: its first measurement is its answer.
        reserve = baseline_s + max(costliest, again) if chosen else 0.0
        if spent + cost + reserve > budget_s:
            skipped.append((candidate, f"over the budget (about {cost / 60:.1f} min more)"))
            continue
        chosen.append(candidate)
        spent += cost
        costliest = max(costliest, again)
    return Plan(chosen, skipped, spent, baseline_s + costliest if len(chosen) > 1 else 0.0)


def by_expected_gain(applicable: list[Candidate]) -> list[Candidate]:
    """By expected gain, the best of each group first; a group's second (another compile mode, TF32 beside bf16,
    the other batch) only after every group's first."""
    places: dict[str, int] = {}
    ranked = []
    for candidate in sorted(applicable, key=lambda c: -c.prior):
        ranked.append((places.get(candidate.group, 0), candidate))
        places[candidate.group] = places.get(candidate.group, 0) + 1
    return [candidate for _, candidate in sorted(ranked, key=lambda pair: pair[0])]


def compile_s(cfg: RunConfig | None, processes: int, cached: bool = False) -> float:
    """The plan's estimate of what compiling costs a cell of `processes` fresh processes; cached: its graphs are in
    inductor's cache already (a stage before compiled them), its first process too."""
    if cfg is None or not cfg.compiles:
        return 0.0
    blocks = _blocks(cfg)
    first = (CACHED_COMPILE_S[0] + CACHED_COMPILE_S[1] * blocks) if cached else COMPILE_S[0] + COMPILE_S[1] * blocks
    if cfg.compile and cfg.compile_mode.startswith("max-autotune") and not cached:
        first = AUTOTUNE_COMPILE_S
    scale = FP8_COMPILE_SCALE if cfg.dtype == "fp8" else 1.0
    return scale * (first + (processes - 1) * (CACHED_COMPILE_S[0] + CACHED_COMPILE_S[1] * blocks))


def _blocks(cfg: RunConfig) -> int:
    """The Transformer blocks the config builds: a --model-arg that sets a factory's depth (n_layer=48), else the
    dims' (a factory that sets its own depth inside is counted at them too)."""
    for item in cfg.model_args:
        name, _, text = item.partition("=")
        if name.strip() in DIMENSION_NAMES["num_layers"] and text.strip().isdigit():
            return int(text)
    return cfg.spec().layers
