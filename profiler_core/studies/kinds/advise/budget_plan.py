"""The plan a budget allows: what a candidate's cell is estimated to cost (its processes' start-up, their steps, its
compiles) and which candidates fit, in order of their expected gain (pure: no torch, nothing run).

Apart from candidates.py, which knows the changes and whether each applies: this is the clock's arithmetic, which
the first stage's plan and the stages after it (refine.py, together.py) estimate and order with. The estimates only
choose what to measure; the advisor says "about".
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from sysprof.profiler_core.base.config import DIMENSION_NAMES, RunConfig
from sysprof.profiler_core.studies.kinds.advise.candidates import Candidate

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
    clock = _Clock(base, device, step_s, shared, min_steps_s, lanes)
    spent = baseline_s = clock.waves(base.repeats) * clock.process_s(base, 1.0)  # the baseline's processes
    chosen: list[Candidate] = []
    skipped = [(c, c.reason) for c in found if c.reason]
    costliest = 0.0
    for candidate in by_expected_gain([c for c in found if not c.reason]):
        cost, again = clock.cell_s(candidate)
        # Chosen among others, a gain is recommended only once measured again: the budget keeps room for that
        # (the combination's first step). A lone candidate was chosen among none: its first measurement is its answer.
        reserve = baseline_s + max(costliest, again) if chosen else 0.0
        if spent + cost + reserve > budget_s:
            skipped.append((candidate, f"over the budget (about {cost / 60:.1f} min more)"))
            continue
        chosen.append(candidate)
        spent += cost
        costliest = max(costliest, again)
    return Plan(chosen, skipped, spent, baseline_s + costliest if len(chosen) > 1 else 0.0)


@dataclass(frozen=True)
class _Clock:
    """The plan's seconds for a process and for a candidate's cell, from plan's arguments."""
    base: RunConfig
    device: str
    step_s: float | None
    shared: bool
    min_steps_s: float
    lanes: int

    def process_s(self, cfg: RunConfig, gain: float, starts: bool = True) -> float:
        start_s = (SHARED_START_S if self.shared else PROCESS_S).get(self.device, PROCESS_S["cuda"])
        arm_s = ARM_S.get(self.device, ARM_S["cuda"]) if self.shared else 0.0
        steps_s = 0.0 if self.step_s is None else (
            (cfg.warmup + cfg.steps) * self.step_s * cfg.batch / self.base.batch / gain)
        steps_s = max(steps_s, self.min_steps_s)
        return (start_s if starts else 0.0) + arm_s + steps_s

    def waves(self, processes: int) -> int:
        return math.ceil(processes / max(self.lanes, 1))

    def cell_s(self, candidate: Candidate) -> tuple[float, float]:
        """(what the candidate's cell costs, what measuring it again costs)."""
        cfg, gain = candidate.config or self.base, max(candidate.prior, 1.0)
        processes = processes_of(cfg, self.base, self.shared)
        processes_s = self.waves(processes) * self.process_s(cfg, gain, not self.shared)
        cost = processes_s + compile_s(candidate.config, processes)
        # Measured again as an arm, its graphs are in inductor's cache (the first stage compiled them); a fresh
        # process each still pays its start-up.
        again = cost if not self.shared else self.waves(processes) * self.process_s(cfg, gain, False) + compile_s(
            candidate.config, processes, cached=True)
        return cost, again


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
