"""RunConfig: what to run, checked before anything starts, with a one-line reason for each bad value."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sysprof.models.presets import PRESETS, ModelSpec
from sysprof.profiler_core.base.code_specs import code_location_problems, optimizer_shape_problem
from sysprof.profiler_core.base.errors import ConfigError

MODES = ("forward", "forward_backward", "train")
DTYPES = ("fp32", "bf16", "fp16", "fp8")  # fp8: bf16 autocast, linear layers' matmuls in FP8 (runner/float8.py)
MATMUL_PRECISIONS = ("highest", "high", "medium")
ATTENTIONS = ("naive", "sdpa")
DEVICES = ("auto", "cuda", "cpu", "mps")
PROFILERS = ("none", "nsys", "torch", "auto")
# How torch's Adam/AdamW update the weights: its default (foreach on CUDA), one fused kernel, foreach, a loop; or
# the step compiled by torch.compile (inductor fuses the foreach update into generated kernels; any optimizer).
OPTIMIZER_IMPLS = ("default", "fused", "foreach", "loop", "compiled")
COMPILED_STEP = "compiled"
# torch.compile modes; the two that ask for CUDA graphs are checked for whether inductor used them.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
# How --nproc ranks share the model: DDP replicas with gradients all-reduced, or FSDP2's fully_shard.
PARALLELS = ("ddp", "fsdp")
DDP_COMM_HOOKS = ("none", "fp16", "bf16")  # torch's default_hooks: gradients cast for the all-reduce, then back
DDP_FIELDS = ("ddp_bucket_mb", "ddp_static_graph", "ddp_bucket_view", "ddp_comm_hook")
MAX_NPROC = 64  # ranks per node torchrun starts here; more is a typo, not a node
DEFAULT_OPTIMIZER = "torch.optim.AdamW"
CUSTOM = "custom"
DIM_FIELDS = ("d_model", "d_ff", "layers", "heads", "vocab")

# Dtype facts. Weights (and AdamW's state) stay fp32 under autocast; activations take the autocast dtype.
PARAM_BYTES = 4
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 2}  # bytes per element of an activation (fp8's: bf16)
# Where each of the tool's dimensions may appear in a factory's signature: the CS336 names first, then the
# spellings of other codebases (nanoGPT, Hugging Face, llama-style).
DIMENSION_NAMES: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size", "n_vocab", "vocab", "num_embeddings"),
    "context_length": ("context_length", "block_size", "max_seq_len", "max_position_embeddings", "seq_len",
                       "n_positions", "n_ctx", "max_len"),
    "d_model": ("d_model", "n_embd", "dim", "hidden_size", "embed_dim", "emb_dim", "d_embed"),
    "num_layers": ("num_layers", "n_layer", "n_layers", "num_hidden_layers", "depth"),
    "num_heads": ("num_heads", "n_head", "n_heads", "num_attention_heads"),
    "d_ff": ("d_ff", "ffn_dim", "intermediate_size", "d_hidden", "hidden_dim", "mlp_dim"),
    "rope_theta": ("rope_theta", "theta"),
}
# The tool's --attention (naive|sdpa) goes to a factory parameter of one of these names, in that parameter's own
# spelling, so a sweep's attention axis switches the user's attention too. Hugging Face's attn_implementation
# calls the materialized-scores path "eager" and rejects "naive".
ATTENTION_NAMES: dict[str, dict[str, str]] = {"attention": {}, "attn_impl": {}, "attention_impl": {},
                                              "attn_implementation": {"naive": "eager"}}
FP8_MIN_CAPABILITY = (8, 9)  # --dtype fp8's tensor cores: compute capability 8.9 (Ada) and 9.0 (Hopper) onwards
AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}  # --dtype → the dtype autocast runs in
# torch.set_float32_matmul_precision → what fp32 matmuls run on the tensor cores ("medium" lets the library
# pick bf16 or TF32 per matmul: no single peak applies).
FP32_MATMULS = {"highest": "fp32", "high": "tf32", "medium": "tf32 or bf16"}




@dataclass(frozen=True)
class RunConfig:
    model: str = "small"
    d_model: int | None = None  # None: take it from the preset; any value overrides it
    d_ff: int | None = None
    layers: int | None = None
    heads: int | None = None
    vocab: int | None = None
    ctx: int = 256
    max_ctx: int | None = None  # the context length the model is built for; None: ctx
    batch: int = 4
    mode: str = "train"
    dtype: str = "fp32"
    matmul_precision: str = "highest"
    compile: bool = False
    compile_mode: str = "default"
    attention: str = "naive"
    # Recompute each repeated block's activations in the backward instead of keeping them (runner/checkpointing.py):
    # memory for a larger batch, paid in a second forward of every block.
    activation_checkpointing: bool = False
    warmup: int = 5
    steps: int = 10
    device: str = "auto"
    profiler: str = "none"
    memory: bool = False
    memory_max_entries: int = 200_000  # allocator history entries kept by the memory pass
    seed: int = 0
    # Fresh runner processes measuring this config (session/repeats): the spread between them is the noise a
    # verdict must beat. 1: one process, whose run-to-run noise is unknown.
    repeats: int = 1
    # The user's own model instead of the built-in one; the dims above fill its parameters by name.
    model_factory: str | None = None  # "package.module:callable" or "path/to/file.py:callable"
    model_args: tuple[str, ...] = ()  # "key=value" (JSON literal values): added to or overriding the dims
    loss: str | None = None  # "package.module:fn" called as fn(model_output, targets) -> loss
    optimizer: str = DEFAULT_OPTIMIZER  # "package.module.Class" or "package.module:Class" (lr 1e-4 unless given)
    optimizer_args: tuple[str, ...] = ()  # "key=value" keyword arguments of the optimizer
    optimizer_impl: str = "default"
    # Per-module NVTX ranges (and allocator tags) down to this depth in the profiled and memory passes; never in
    # the clean timing pass, whose numbers the hooks would slow. 0: off.
    nvtx_modules: int = 0
    # Ranks on this node, started by torchrun (one GPU each; gloo on CPU); batch is per rank.
    nproc: int = 1
    parallel: str = "ddp"
    # DDP's own settings (several ranks, --parallel ddp); None, False, "none": torch's defaults.
    ddp_bucket_mb: int | None = None  # gradient bucket size (torch: 25 MB)
    ddp_static_graph: bool = False  # the same parameters used every step: DDP may skip its per-step search
    ddp_bucket_view: bool = False  # gradients as views into the buckets: no copy, less memory
    ddp_comm_hook: str = "none"  # gradients compressed to fp16 or bf16 for their all-reduce
    # Several nodes: the same `sysprof run` on each, meeting at one c10d rendezvous endpoint (HOST:PORT).
    nnodes: int = 1
    rdzv_endpoint: str | None = None

    @property
    def model_name(self) -> str:
        return model_label(self.model, self.model_factory)

    def spec(self) -> ModelSpec:
        """The model's shape: the preset with any explicit dimension overriding it."""
        base = PRESETS.get(self.model, PRESETS["small"])
        overrides = {f: getattr(self, f) for f in DIM_FIELDS if getattr(self, f) is not None}
        name = self.model if not overrides else f"{self.model}*" if self.model != CUSTOM else CUSTOM
        return dataclasses.replace(base, name=name, **overrides)

    @property
    def compiles(self) -> bool:
        """Whether the first step compiles something (the model or the optimizer's step): the run gives it a pass of
        its own, timed as compile time, before the warm-up."""
        return self.compile or self.optimizer_impl == COMPILED_STEP

    @property
    def distributed(self) -> bool:
        """Whether torchrun starts the runner: several ranks on this node, or a share of a job over nodes."""
        return self.nproc > 1 or self.nnodes > 1

    @property
    def context_length(self) -> int:
        return self.max_ctx if self.max_ctx is not None else self.ctx

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> RunConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
        for name in ("model_args", "optimizer_args"):  # JSON has no tuples
            if isinstance(values.get(name), list):
                values = {**values, name: tuple(values[name])}
        return cls(**values)


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


def model_label(model: str, factory: str | None) -> str:
    """What titles and directory names call the model: the preset, or the factory's module (or file) and callable."""
    if not factory:
        return model
    target, _, name = factory.rpartition(":")
    return f"{target.rsplit('/', 1)[-1].removesuffix('.py').rsplit('.', 1)[-1]}.{name}"


def model_column(config: Mapping[str, Any]) -> str:
    """What a table's model column reads for a config (a dict, as saved): the preset, or the factory's label with
    the preset whose dims fill its parameters, so two sizes of one factory stay two rows."""
    label = model_label(config["model"], config.get("model_factory"))
    return f"{label} ({config['model']})" if config.get("model_factory") else label


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
    found.update(_choice_problems(cfg))
    for name, problem in _user_code_problems(cfg).items():  # never over a problem found above (a bad choice)
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


MAX_REPEATS = 100


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


def _spec_problem(name: str, spec: str | None) -> str | None:
    target, _, attribute = (spec or "").rpartition(":")
    if spec is not None and not (target and attribute.isidentifier()):
        return f"{name} must be module:callable or path/to/file.py:callable; got {spec!r}"
    return None


def _user_code_problems(cfg: RunConfig) -> dict[str, str | None]:
    """The shape of --model-factory, --model-arg, --loss and --optimizer; whether their files or modules are there
    is code_specs' to say, whether they import the runner's."""
    args_problem = _pairs_problem("--model-arg", cfg.model_args) or (
        "--model-arg needs --model-factory" if cfg.model_args and not cfg.model_factory else None)
    return {"model_factory": _spec_problem("model_factory", cfg.model_factory),
            "loss": _spec_problem("loss", cfg.loss),
            "optimizer": optimizer_shape_problem(cfg.optimizer),
            "model_args": args_problem,
            "optimizer_args": _pairs_problem("--optimizer-arg", cfg.optimizer_args),
            "optimizer_impl": _impl_problem(cfg)}


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


MAX_BUCKET_MB = 10_000


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


def _impl_problem(cfg: RunConfig) -> str | None:
    if cfg.optimizer_impl == COMPILED_STEP and cfg.dtype == "fp16":
        return "--optimizer-impl compiled does not combine with fp16: its GradScaler steps the optimizer itself"
    if cfg.optimizer_impl in ("default", COMPILED_STEP) or cfg.optimizer.startswith("torch.optim"):
        return None
    return f"--optimizer-impl {cfg.optimizer_impl} is for torch.optim's optimizers (fused: Adam, AdamW, SGD)"


def _pairs_problem(option: str, items: tuple[str, ...]) -> str | None:
    malformed = [item for item in items if "=" not in item or not item.partition("=")[0].isidentifier()
                 or not item.partition("=")[2].strip()]
    return f"{option} takes NAME=VALUE; got {malformed[0]!r}" if malformed else None


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
