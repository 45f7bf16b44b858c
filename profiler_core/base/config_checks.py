"""A RunConfig checked before anything starts: every reason it cannot run, one line each, keyed by field.

Apart from config.py, which every floor reads for RunConfig alone: these rules (value ranges, choices, combinations
that cannot run, the user code's shape and whereabouts) are wanted only where a config is about to run or be shown
as a form."""
from __future__ import annotations

import dataclasses

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.base.code_specs import code_location_problems
from sysprof.profiler_core.base.config import (
    ATTENTIONS,
    COMPILE_MODES,
    CUSTOM,
    DDP_COMM_HOOKS,
    DEVICES,
    DIM_FIELDS,
    DTYPES,
    MATMUL_PRECISIONS,
    MODES,
    OPTIMIZER_IMPLS,
    PARALLELS,
    PROFILERS,
    RunConfig,
)
from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.base.user_code_checks import user_code_problems

MAX_NPROC = 64  # ranks per node torchrun starts here; more is a typo, not a node
MAX_REPEATS = 100
MAX_STEPS = 1_000_000  # per process: more is a training job (trace it with sysprof.trace), not a measurement
SEED_RANGE = range(0, 2**63)  # torch.manual_seed takes a 64-bit integer
MAX_BUCKET_MB = 10_000
DDP_FIELDS = ("ddp_bucket_mb", "ddp_static_graph", "ddp_bucket_view", "ddp_comm_hook")


def type_problems(cfg: RunConfig) -> dict[str, str]:
    """Fields whose value is not of the field's type (a config from JSON, or a form's text in a number field)."""
    found = {field.name: _type_problem(field, getattr(cfg, field.name)) for field in dataclasses.fields(cfg)}
    return {name: problem for name, problem in found.items() if problem}


def _type_problem(field: dataclasses.Field, value: object) -> str | None:
    annotation = str(field.type)
    if value is None:
        return None if "None" in annotation else f"{field.name} needs a value"
    if annotation.startswith("tuple"):
        ok, kind = isinstance(value, list | tuple) and all(isinstance(item, str) for item in value), "a list of strings"
    elif annotation.startswith("bool"):
        ok, kind = isinstance(value, bool), "true or false"
    elif annotation.startswith("int"):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    else:
        ok, kind = isinstance(value, str), "a string"
    return None if ok else f"{field.name} must be {kind}; got {value!r:.40}"

def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str | None:
    if value not in allowed:
        return f"{name} must be one of {', '.join(allowed)}; got {value!r}"
    return None


def _positive(name: str, value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return f"{name} must be a positive integer; got {value!r}"
    return None


def config_problems(cfg: RunConfig, locate_code: bool = True) -> dict[str, str]:
    """Every reason the config cannot run, keyed by field; empty when it is valid.

    Device presence and dtype support need torch, so the runner checks those (runner_checks). locate_code: also
    whether the user code's files and modules are there (code_specs); off where a config is read back from a
    directory that may have moved to another machine, and in the runner, whose own import says it better.
    """
    typed = type_problems(cfg)
    if typed:  # the checks below read each field as its type: they see the defaults in place of these
        defaults = RunConfig()
        rest = _value_problems(dataclasses.replace(cfg, **{name: getattr(defaults, name) for name in typed}))
        return typed | {name: problem for name, problem in rest.items() if name not in typed}
    problems = _value_problems(cfg)
    if not locate_code:
        return problems
    return problems | {name: problem for name, problem in code_location_problems(cfg).items() if name not in problems}


def _value_problems(cfg: RunConfig) -> dict[str, str]:
    found: dict[str, str | None] = {}  # None: checked and fine
    if cfg.model != CUSTOM and cfg.model not in PRESETS:
        found["model"] = f"unknown preset {cfg.model!r}; choose one of {', '.join(PRESETS)} or custom"
    if cfg.model == CUSTOM:
        for name in DIM_FIELDS[:4]:
            if getattr(cfg, name) is None:
                found[name] = f"a custom model needs --{name.replace('_', '-')}"
    for name, value in _sizes(cfg):
        found.setdefault(name, _positive(name, value))
    found["repeats"] = _repeats_problem(cfg.repeats)
    if cfg.warmup is None or not isinstance(cfg.warmup, int) or cfg.warmup < 0:
        found["warmup"] = f"warmup must be 0 or more; got {cfg.warmup!r}"
    found.update(_bound_problems(cfg))
    found.update(_choice_problems(cfg))
    for name, problem in user_code_problems(cfg).items():  # never over a problem found above (a bad choice)
        found[name] = found.get(name) or problem
    found["nvtx_modules"] = _nvtx_modules_problem(cfg)
    if cfg.activation_checkpointing and cfg.mode == "forward":
        found["activation_checkpointing"] = ("--activation-checkpointing recomputes activations for a backward; "
                                             "mode forward has none")
    found.update(_ranks_problems(cfg))
    found.update(_ddp_problems(cfg))
    problems = {k: v for k, v in found.items() if v}
    if not problems:
        problems.update(_shape_problems(cfg) or _capture_problems(cfg))
    return problems


def _bound_problems(cfg: RunConfig) -> dict[str, str | None]:
    """Numbers too large to mean what they say: a run that would never end, a seed torch cannot take."""
    found: dict[str, str | None] = {}
    for name in ("steps", "warmup"):
        value = getattr(cfg, name)
        if isinstance(value, int) and value > MAX_STEPS:
            found[name] = (f"--{name} {value:,} is more than the {MAX_STEPS:,} a measurement takes; for a training "
                           "job, trace it (sysprof.trace)")
    if isinstance(cfg.seed, int) and cfg.seed not in SEED_RANGE:
        found["seed"] = f"--seed must be 0 to 2**63-1; got {cfg.seed}"
    return found


def _choice_problems(cfg: RunConfig) -> dict[str, str | None]:
    found = {name: _choice(name, getattr(cfg, name), allowed) for name, allowed in (
        ("mode", MODES), ("dtype", DTYPES), ("matmul_precision", MATMUL_PRECISIONS), ("attention", ATTENTIONS),
        ("device", DEVICES), ("profiler", PROFILERS), ("optimizer_impl", OPTIMIZER_IMPLS),
        ("compile_mode", COMPILE_MODES), ("ddp_comm_hook", DDP_COMM_HOOKS))}
    if cfg.compile_mode != "default" and not cfg.compile and not found["compile_mode"]:
        found["compile_mode"] = f"--compile-mode {cfg.compile_mode} needs --compile"
    return found


def _repeats_problem(repeats: object) -> str | None:
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= MAX_REPEATS:
        return f"repeats must be 1 to {MAX_REPEATS} fresh processes; got {repeats!r}"
    return None


def _nvtx_modules_problem(cfg: RunConfig) -> str | None:
    if not isinstance(cfg.nvtx_modules, int) or isinstance(cfg.nvtx_modules, bool) or cfg.nvtx_modules < 0:
        return f"nvtx_modules must be 0 (off) or a module depth; got {cfg.nvtx_modules!r}"
    if cfg.nvtx_modules and cfg.compile:
        return "--nvtx-modules needs eager modules: torch.compile fuses them, so their hooks would not fire per module"
    return None


def _ranks_problems(cfg: RunConfig) -> dict[str, str | None]:
    """--nproc and --parallel; whether that many GPUs are visible is the launcher's to check (it needs NVML)."""
    if not isinstance(cfg.nproc, int) or isinstance(cfg.nproc, bool) or not 1 <= cfg.nproc <= MAX_NPROC:
        return {"nproc": f"nproc must be 1 to {MAX_NPROC} ranks; got {cfg.nproc!r}"}
    problems = {"parallel": _choice("parallel", cfg.parallel, PARALLELS), "nnodes": _nodes_problem(cfg)}
    if cfg.distributed and cfg.device == "mps":
        problems["nproc"] = "--nproc needs CUDA GPUs (NCCL) or the CPU (gloo); MPS has no process-group backend here"
    if cfg.parallel != RunConfig.parallel and not problems["parallel"] and not cfg.distributed:
        problems["parallel"] = (f"--parallel {cfg.parallel} shards over ranks: give --nproc 2 or more (one process "
                                "would run the plain model)")
    return problems


def _ddp_problems(cfg: RunConfig) -> dict[str, str | None]:
    """DDP's settings: only where DDP runs, a bucket size in range, bf16 compression where NCCL runs it."""
    changed = [name for name in DDP_FIELDS if getattr(cfg, name) != getattr(RunConfig, name)]
    if changed and not (cfg.distributed and cfg.parallel == "ddp"):
        return {changed[0]: f"--{changed[0].replace('_', '-')} is a DDP setting: give --nproc 2 or more with "
                            "--parallel ddp"}
    size = cfg.ddp_bucket_mb
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_BUCKET_MB):
        return {"ddp_bucket_mb": f"ddp_bucket_mb must be 1 to {MAX_BUCKET_MB} MB; got {size!r}"}
    if cfg.ddp_comm_hook == "bf16" and cfg.device == "cpu":
        return {"ddp_comm_hook": "bf16 gradient compression needs NCCL (CUDA GPUs); gloo on the CPU takes "
                                 "--ddp-comm-hook fp16"}
    return {}


def _nodes_problem(cfg: RunConfig) -> str | None:
    if not isinstance(cfg.nnodes, int) or isinstance(cfg.nnodes, bool) or cfg.nnodes < 1:
        return f"nnodes must be a positive integer; got {cfg.nnodes!r}"
    if cfg.nnodes > 1 and not cfg.rdzv_endpoint:
        return f"--nnodes {cfg.nnodes} needs --rdzv-endpoint HOST:PORT, the same on every node"
    host, _, port = (cfg.rdzv_endpoint or "").rpartition(":")
    if cfg.rdzv_endpoint and not (host and port.isdigit()):
        return f"--rdzv-endpoint takes HOST:PORT; got {cfg.rdzv_endpoint!r}"
    return None


def _capture_problems(cfg: RunConfig) -> dict[str, str]:
    if cfg.device not in ("cpu", "mps"):
        return {}
    if cfg.profiler in ("nsys", "torch"):
        return {"profiler": f"kernel tables need CUDA kernels; device {cfg.device} has none (use --profiler none)"}
    if cfg.dtype == "fp8":
        return {"dtype": f"--dtype fp8 needs a CUDA GPU with FP8 tensor cores; device {cfg.device} has none"}
    if cfg.memory:
        return {"memory": f"allocator history is a CUDA feature; device {cfg.device} has none"}
    return {}


def _sizes(cfg: RunConfig) -> list[tuple[str, object]]:
    spec_values = [(f, getattr(cfg, f)) for f in DIM_FIELDS if getattr(cfg, f) is not None]
    extra = [("max_ctx", cfg.max_ctx)] if cfg.max_ctx is not None else []
    return spec_values + extra + [("ctx", cfg.ctx), ("batch", cfg.batch), ("steps", cfg.steps),
                                  ("memory_max_entries", cfg.memory_max_entries)]


def _shape_problems(cfg: RunConfig) -> dict[str, str]:
    spec = cfg.spec()
    if spec.d_model % spec.heads:
        return {"heads": f"heads ({spec.heads}) must divide d_model ({spec.d_model})"}
    if spec.d_head % 2:
        return {"heads": f"head dimension d_model/heads = {spec.d_head} must be even for RoPE"}
    if cfg.ctx > cfg.context_length:
        return {"ctx": f"context length {cfg.ctx} exceeds the {cfg.context_length} the model is built for"}
    return {}


def validate(cfg: RunConfig, locate_code: bool = True) -> RunConfig:
    """Return cfg, or raise ConfigError with the first problem as its one-line reason."""
    problems = config_problems(cfg, locate_code)
    if problems:
        raise ConfigError(next(iter(problems.values())))
    return cfg
