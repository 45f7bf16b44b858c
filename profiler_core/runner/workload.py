"""The work a step does on the device: model, batch, loss, backward, AdamW (runner side; imports torch)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange

from sysprof.models.transformer import TransformerLM
from sysprof.profiler_core.base.config import AUTOCAST_DTYPES as AUTOCAST_DTYPE_NAMES
from sysprof.profiler_core.base.config import COMPILED_STEP, CUDA_GRAPH_MODES, ConfigError, RunConfig
from sysprof.profiler_core.runner.checkpointing import checkpoint_blocks
from sysprof.profiler_core.runner.float8 import check_fp8_support, to_float8
from sysprof.profiler_core.runner.model_checks import check_placement, check_vocabulary
from sysprof.profiler_core.runner.user_model import build_optimizer, build_user_model, load_callable, logits_of

AUTOCAST_DTYPES = {name: getattr(torch, torch_name) for name, torch_name in AUTOCAST_DTYPE_NAMES.items()}


def resolve_device(requested: str) -> torch.device:
    """auto → cuda when present, else cpu; an explicit device that is not present is a config error."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda requested but no CUDA GPU is visible (torch.cuda.is_available() is False)")
    if requested == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("device mps requested but MPS is not available on this machine")
    return torch.device(requested)


def check_dtype_support(device: torch.device, dtype: str) -> None:
    """Refuse half precision where the device cannot run it, before building anything."""
    if dtype == "fp8":
        check_fp8_support(device)
    if device.type == "cuda" and dtype in ("bf16", "fp8") and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"bf16 is not supported on {torch.cuda.get_device_name(device)}")
    if dtype in AUTOCAST_DTYPES and not _autocast_works(device, AUTOCAST_DTYPES[dtype]):
        raise ConfigError(f"{dtype} autocast is not supported on device {device.type}")


def _autocast_works(device: torch.device, dtype: torch.dtype) -> bool:
    try:
        with torch.autocast(device.type, dtype=dtype):
            probe = torch.ones(2, 2, device=device)
            return (probe @ probe).dtype == dtype
    except (RuntimeError, AssertionError):
        return False


def loss_of(output: Any, targets: torch.Tensor, loss_fn: Callable[[Any, torch.Tensor], torch.Tensor] | None,
            users_model: bool) -> torch.Tensor:
    """The user's --loss, else cross-entropy of the logits against the shifted targets."""
    if loss_fn is not None:
        return loss_fn(output, targets)
    logits = logits_of(output) if users_model else output  # (B, T, V)
    return F.cross_entropy(rearrange(logits, "b t v -> (b t) v"), rearrange(targets, "b t -> (b t)"))


@dataclass
class Workload:
    cfg: RunConfig
    device: torch.device
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    scaler: torch.amp.GradScaler | None
    tokens: torch.Tensor
    targets: torch.Tensor
    loss_fn: Callable[[Any, torch.Tensor], torch.Tensor] | None = None
    model_info: dict[str, Any] | None = None  # the user's model: what the manifest records
    optimizer_info: dict[str, Any] | None = None
    compiled_step: Callable[[], Any] | None = None  # --optimizer-impl compiled: torch.compile of optimizer.step
    before_forward: Callable[[], None] | None = None  # a test's delay on one rank (runner/distributed.slow_forward)
    precision_info: dict[str, int] | None = None  # --dtype fp8: the linear layers swapped to FP8 and those left
    checkpointing_info: dict[str, object] | None = None  # --activation-checkpointing: the blocks it wrapped

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.cfg.dtype in AUTOCAST_DTYPES:
            return torch.autocast(self.device.type, dtype=AUTOCAST_DTYPES[self.cfg.dtype])
        return contextlib.nullcontext()

    def forward(self) -> torch.Tensor:
        """Model forward plus the loss; without autograd in forward mode."""
        grad_mode = torch.no_grad() if self.cfg.mode == "forward" else contextlib.nullcontext()
        if self.before_forward:
            self.before_forward()
        with grad_mode, self.autocast():
            return loss_of(self.model(self.tokens), self.targets, self.loss_fn, self.cfg.model_factory is not None)

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def optimizer_step(self) -> None:
        assert self.optimizer is not None  # build_workload makes one for train mode, the only mode that steps
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            (self.compiled_step or self.optimizer.step)()
        self.optimizer.zero_grad(set_to_none=True)

    def zero_grad(self) -> None:
        self.model.zero_grad(set_to_none=True)


def cuda_graph_report(cfg: RunConfig, device: torch.device) -> dict | None:
    """Whether a compile mode that asks for CUDA graphs got them: inductor counts each graph it could not capture
    (graph inputs mutated, CPU tensors, dynamic shapes…) in counters["inductor"]["cudagraph_skips"]."""
    if not cfg.compile:
        return None
    if cfg.compile_mode not in CUDA_GRAPH_MODES:
        return {"mode": cfg.compile_mode, "cuda_graphs": "not asked"}
    if device.type != "cuda":
        return {"mode": cfg.compile_mode, "cuda_graphs": f"none on {device.type}"}
    from torch._dynamo.utils import counters

    skips = counters["inductor"]["cudagraph_skips"]
    return {"mode": cfg.compile_mode, "cudagraph_skips": skips,
            "cuda_graphs": "used" if not skips else f"skipped for {skips} graph(s) (TORCH_LOGS=perf_hints says why)"}


def build_workload(cfg: RunConfig, device: torch.device,
                   share: Callable[[torch.nn.Module], torch.nn.Module] | None = None, rank: int = 0) -> Workload:
    """The model, optimizer and batch of cfg on device. share: DDP or FSDP for a rank of several (before the
    optimizer, which must see FSDP's sharded parameters); rank: each rank draws its own tokens."""
    torch.manual_seed(cfg.seed)
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    spec = cfg.spec()
    with device:  # initialize on the device: a 2.7B model's init on the CPU takes longer than its steps
        model, info = (TransformerLM(spec, cfg.context_length, cfg.attention), None) if cfg.model_factory is None \
            else build_user_model(cfg)
    vocab = info["vocab_size"] if info else spec.vocab
    if info:
        check_placement(model, device)
        check_vocabulary(model, vocab)
    loss_fn = load_callable(cfg.loss, "--loss")[0] if cfg.loss else None
    precision = to_float8(model) if cfg.dtype == "fp8" else None  # before DDP/FSDP and the optimizer see it
    checkpointed = checkpoint_blocks(model) if cfg.activation_checkpointing else None
    if cfg.mode == "forward":
        model.requires_grad_(False)
    if share:
        model = share(model)
    optimizer, optimizer_info = build_optimizer(cfg, model.parameters()) if cfg.mode == "train" else (None, None)
    scaler = torch.amp.GradScaler(device.type) if cfg.dtype == "fp16" and cfg.mode != "forward" else None
    if cfg.compile:
        mode = None if cfg.compile_mode == "default" else cfg.compile_mode
        model = torch.compile(model, mode=mode)  # type: ignore[assignment]  # an OptimizedModule, not a Callable
    # PyTorch's recipe for a compiled optimizer: the bound step, compiled on its first call (the compile pass).
    compiled_step = torch.compile(optimizer.step) if optimizer and cfg.optimizer_impl == COMPILED_STEP else None
    shape = (cfg.batch, cfg.ctx)
    if rank:
        torch.manual_seed(cfg.seed + rank)  # the weights are rank 0's (DDP broadcasts them); the data is each rank's
    tokens = torch.randint(vocab, shape, device=device)
    targets = torch.randint(vocab, shape, device=device)
    return Workload(cfg, device, model, optimizer, scaler, tokens, targets, loss_fn, info, optimizer_info,
                    compiled_step, precision_info=precision, checkpointing_info=checkpointed)
