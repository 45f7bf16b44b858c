"""RunConfig: what to run, the values each field allows, and the dtype facts the runner and the analyses share.

Whether a config can run, with a one-line reason for each bad value, is config_checks.py's to say."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sysprof.models.presets import PRESETS, ModelSpec
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
