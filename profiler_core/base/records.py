"""The shapes of the documents the tool writes and reads: step records, phase statistics, the run summary
(`sysprof run --json`, summary.json), the model inspection and the events; the kernel analysis is kernel_records.py's.

They stay plain dicts on disk and on the wire (JSON), so these are TypedDicts: mypy checks every key a
producer writes and a consumer reads, and DESIGN.md §2's contract has one place in code. `total=False` marks
documents whose keys depend on what ran (a profiled pass, a memory pass, an error).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict


class PhaseStats(TypedDict):
    """Statistics of one phase over the measured steps of one process (milliseconds)."""

    mean_ms: float | None
    std_ms: float | None
    median_ms: float | None
    min_ms: float | None
    max_ms: float | None
    cv: float | None
    n: int


class BetweenStats(TypedDict):
    """The spread between processes of one config: statistics of their per-process medians (or throughputs).

    Spread needs two processes: with one, q1/q3/iqr/cv_pct/robust_cv_pct are None (unknown, not 0)."""

    n: int
    values: list[float]  # per process, in run order
    median: float | None
    min: float | None
    max: float | None
    q1: float | None
    q3: float | None
    iqr: float | None
    cv_pct: float | None  # sample std / mean × 100
    robust_cv_pct: float | None  # 0.7413·IQR / median × 100 (the std of a normal distribution with that IQR)


class RanWindow(TypedDict):
    """When a process's clean timing pass ran (epoch seconds): compare tells interleaved sides from ordered ones."""

    start: float
    end: float


class _ProcessRecord(TypedDict):
    status: str
    phases: dict[str, float | None]  # phase → that process's median_ms
    std_ms: dict[str, float | None]  # phase → its within-run std
    tokens_per_s: float | None


class ProcessRecord(_ProcessRecord, total=False):
    """One runner process of a group (summary["repeats"]["processes"]): what compare needs of it."""

    ran: RanWindow  # absent in groups saved before it was recorded
    shared_process: dict[str, Any]  # an arm of a shared process: its arms, position, own seconds, blocks
    tokens_per_joule: float  # where the process read the GPU's energy counter (energy.py)


class _Repeats(TypedDict):
    n: int
    ok: int
    failed: int
    processes: list[ProcessRecord]


class RepeatsRecord(_Repeats, total=False):
    """summary["repeats"] of a group summary: N processes of one config, k of them finished ok."""

    dirs: list[str]  # each process's run directory, relative to the group's ("." for the first)


class StepRecord(TypedDict, total=False):
    """One line of steps.jsonl and the payload of a step or warmup_step event."""

    kind: str  # "warmup" | "measured"
    index: int
    wall_ms: float
    phases_ms: dict[str, float]
    loss: float | None  # None when it was NaN or infinite (strict JSON has neither): then loss_not_finite says which
    loss_not_finite: str
    peak_allocated_bytes: dict[str, int]
    peak_reserved_bytes: dict[str, int]
    memory_before_backward_bytes: int | None
    memory_after_step_bytes: int | None
    cpu_wait_ms: float | None  # the main thread's run-queue delay in the step (runner/run_queue.py); None: unknown
    # an arm of a shared process (runner/arms.py): the block it ran in, and the other arms' memory taken off its peaks
    block: int
    others_resident_bytes: int
    # Steps of a profiled or memory pass also carry "pass" (a keyword, so not declarable here).


class RunError(TypedDict):
    kind: str  # one of events.FAILURE_KINDS
    message: str
    phase: str | None
    peak_allocated_bytes: int | None


class PassRecord(TypedDict, total=False):
    """summary["profile"] and summary["memory"]: what a later pass produced, and how much it slowed the steps."""

    status: str
    dir: str
    backend: str
    version: str | None
    clean_median_ms: float | None
    profiled_median_ms: float | None
    recorded_median_ms: float | None
    inflation: float | None
    kernels: str  # profile: kernels/analysis.json
    phase_kernels: str
    gemm_fraction: dict[str, float]
    notes: list[str]
    seconds: dict[str, float]  # profile: where the run's time went (session/clock.profiled_breakdown)
    gpu_ms_per_step: float
    communication: dict[str, Any]  # kernels/communication.py: NCCL kernel time, exposed time, overlap
    ranks: list[dict[str, Any]]  # --nproc > 1: each rank's own figures or its reason for having none
    analysis: str  # memory: memory/analysis.json
    snapshot: str
    peak_allocated_bytes: int
    images: list[str]  # memory/timeline.png and .svg, where matplotlib was there to draw them
    note: str
    error: str


class Throughput(TypedDict):
    flops_per_step: int | None  # None for a user's model until its FLOPs are counted
    precision_used: str
    peak_tflops: float | None
    tokens_per_s: float | None
    tflops: float | None
    mfu: float | None


class RunSummary(Throughput, total=False):
    """summary.json and `sysprof run --json` (DESIGN.md §2)."""

    status: str  # events.OK | OOM | FAILED_STATUS
    state: str  # events.RUN_STATES but running: the status with the failure's kind folded in (events.run_state)
    run_dir: str
    config: dict[str, Any]
    env: dict[str, Any]
    params: int
    phases: dict[str, PhaseStats]  # models.phases.TIMED_PHASES that ran
    warmup_ms: list[float]
    compile_s: float | None
    compile: dict[str, Any]  # mode, and with a mode that asks for CUDA graphs whether inductor used them
    peak_memory_bytes: dict[str, int]
    peak_reserved_bytes: dict[str, int]
    error: RunError
    profile: PassRecord
    memory: PassRecord
    memory_snapshot: str
    # A group summary (N processes of one config, metrics.aggregate_processes): phases are then medians over them.
    ran: RanWindow  # the clean timing pass's wall-clock window (ordering.py)
    between: dict[str, BetweenStats]  # phase or "tokens_per_s" → spread between the processes
    repeats: RepeatsRecord
    warnings: list[dict[str, Any]]  # stability.warnings_for_summary with the readings taken while the steps ran
    rank: dict[str, int]  # a rank of several: rank, local_rank, world
    ranks: dict[str, Any]  # --nproc > 1, rank 0's summary: world, parallel, per-rank rows and findings (ranks.py)
    energy: dict[str, Any]  # joules per step, tokens per joule, power cap and SM clock (energy.py)
    shared_process: dict[str, Any]  # one of several configurations measured in one process (runner/arms.py)


class InspectReport(TypedDict):
    """`sysprof inspect --json` and the Configure screen: the model built on the meta device (runner/inspect_model)."""

    model: str
    model_class: str
    factory: dict[str, Any] | None  # the user's model: what the run manifest would record
    params: dict[str, int]  # total, trainable, embedding, non_embedding
    modules: list[dict[str, Any]]  # name (indices folded to *), type, depth, count, params, share
    flops: dict[str, int | None] | None  # forward, backward, step (FlopCounterMode); None: not countable
    closed_form_flops: int | None  # the built-in model's formula (models/presets.step_flops)
    memory: dict[str, int]  # weights_bytes, gradients_bytes, optimizer_state_bytes, activations_bytes
    residual_stream_per_layer_bytes: int  # B·T·d·activation bytes: one layer's input, the unit of activations
    notes: list[str]
    seconds: float


class Event(TypedDict, total=False):
    """Any event (events.EVENT_KINDS); the keys besides "event" depend on its kind."""

    event: str
    name: str  # stage
    total: int | None  # stage
    message: str  # notice, failed
    kind: str  # failed (error kind), analysis (kernels | memory), study
    phase: str | None  # failed
    peak_allocated_bytes: int | None  # failed
    path: str  # analysis
    summary: RunSummary  # finished, failed
    status: str  # cell_done, cell_result


def phases_of(document: Mapping[str, Any] | None) -> dict[str, Any]:
    """The per-phase statistics of a summary, a kernel analysis or a process record; {} where it has none.

    The one reader of the "phases" key of a document that may lack it (a failed run, an analysis of no ranges)."""
    return (document or {}).get("phases") or {}


def median_ms(summary: Mapping[str, Any] | None, phase: str = "step") -> float | None:
    """The median of a phase (the whole step by default), None when the run has no such statistics.

    summary: a RunSummary, or any summary read from disk."""
    return (phases_of(summary).get(phase) or {}).get("median_ms")


def clean_measured(steps: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The measured steps the statistics are over: not warm-up, not a profiled or memory pass's (which carry "pass";
    a traced loop's steps the allocator history recorded among them)."""
    return [s for s in steps if s.get("kind") == "measured" and not s.get("pass")]
