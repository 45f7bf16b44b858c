"""The runner as one rank of several (--nproc, started by torchrun): its process group, device and model wrapper,
and the gather of every rank's record once the measured steps are over (nothing is synchronised inside a step
beyond what DDP or FSDP do themselves)."""
from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NoReturn

import torch
import torch.distributed as dist

from sysprof.profiler_core.analysis.ranks import test_delay_ms
from sysprof.profiler_core.base.config import ConfigError, RunConfig

# A rank that died leaves the others blocked in a collective; torchrun stops them first, this is the backstop.
GROUP_TIMEOUT = timedelta(minutes=10)
SLEEP_CYCLES_PER_MS = 1_980_000  # torch.cuda._sleep spins clock cycles: 1 ms at an H200's top SM clock, longer below


@dataclass(frozen=True)
class Rank:
    rank: int
    local_rank: int
    world: int


def rank_from_env() -> Rank | None:
    """This process's place among torchrun's ranks; None for a plain single-process run."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return None
    return Rank(int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), world)


def rank_device(device: torch.device, rank: Rank) -> torch.device:
    """One GPU per rank (cuda:LOCAL_RANK), or the CPU for every rank."""
    if device.type != "cuda":
        return device
    visible = torch.cuda.device_count()
    if rank.local_rank >= visible:
        raise ConfigError(f"--nproc {rank.world} needs one GPU per rank; {visible} visible here")
    torch.cuda.set_device(rank.local_rank)
    return torch.device("cuda", rank.local_rank)


def join(device: torch.device) -> None:
    """The process group: NCCL between GPUs, gloo between CPU processes."""
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=GROUP_TIMEOUT, device_id=device if device.type == "cuda" else None)


def leave() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def end_gloo_rank(code: int) -> NoReturn:
    """A gloo rank's end (a rank off the GPU: see join), once its summary is written and its last event sent: no
    object is freed after it. Freeing the model frees the group, whose destructor joins gloo's threads with the GIL
    held; a thread of theirs still dropping a finished collective's tensor waits for that GIL, and the rank hangs for
    good (seen in ranks a warm start forked, in the test suite on a busy 2-core machine)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def wrapper(cfg: RunConfig, device: torch.device) -> Callable[[torch.nn.Module], torch.nn.Module]:
    """What shares the model between ranks, applied before the optimizer is built (FSDP changes the parameters)."""
    if cfg.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        # No buffer broadcast before each forward: an LM's buffers (RoPE tables) are constants, and that collective
        # would put a slow rank's wait inside every rank's forward, where its phase times could not tell the
        # straggler from its victims; the gradient all-reduce leaves the wait in the victims' backward.
        # Where torch has forward_sync_buffers (broadcast_buffers warns there), the same per-forward switch; it also
        # copies rank 0's buffers once when the model is wrapped, which constants do not mind.
        takes = inspect.signature(DistributedDataParallel.__init__).parameters
        no_sync: dict[str, Any] = {
            "forward_sync_buffers" if "forward_sync_buffers" in takes else "broadcast_buffers": False}
        return lambda model: _with_hook(DistributedDataParallel(model, device_ids=ids, **no_sync, **ddp_settings(cfg)),
                                        cfg.ddp_comm_hook)
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        raise ConfigError(f"--parallel fsdp needs FSDP2 (fully_shard); torch {torch.__version__} has none") from None
    return lambda model: _shard(model, fully_shard)


def ddp_settings(cfg: RunConfig) -> dict[str, Any]:
    """DistributedDataParallel's keyword arguments for the DDP options given (torch's defaults for the others)."""
    found: dict[str, Any] = {"static_graph": cfg.ddp_static_graph, "gradient_as_bucket_view": cfg.ddp_bucket_view}
    if cfg.ddp_bucket_mb is not None:
        found["bucket_cap_mb"] = cfg.ddp_bucket_mb
    return found


def _with_hook(model: Any, hook_name: str) -> Any:
    """The DDP model with its gradients compressed for the all-reduce (torch's default hooks), where asked."""
    if hook_name == "none":
        return model
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    hook = {"fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}[hook_name]
    try:
        model.register_comm_hook(None, hook)
    except TypeError as exc:  # bf16 on gloo: "BF16 all reduce communication hook required … NCCL 2.10+"
        raise ConfigError(f"--ddp-comm-hook {hook_name}: {exc}") from None
    return model


def _shard(model: torch.nn.Module, fully_shard: Callable[..., Any]) -> torch.nn.Module:
    """FSDP2's usual policy: each block of every ModuleList its own unit (its all-gather overlaps the previous
    block's compute), then the root for what is left (embeddings, final norm, head)."""
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList):
            for block in module:
                fully_shard(block)
    fully_shard(model)
    return model


def slow_forward(rank: Rank | None, device: torch.device) -> Callable[[], None] | None:
    """The test switch's delay for this rank (ranks.test_delay_ms), about MS ms whatever bounds the step.

    On a GPU the delay is queued on the stream (CUDA events see it; it delays a GPU-bound step) and the host sleeps
    as long while the GPU spins: a launch-bound step, whose GPU idles between launches, would absorb a GPU-only
    delay into its slack (seen on the H200s: 30 ms queued moved the small model's forward by 8 ms), and a GPU-bound
    one would absorb a host-only delay into its queue. The two run at once, so together they cost MS, not twice."""
    delay_ms = test_delay_ms(rank.rank) if rank else None
    if delay_ms is None:
        return None
    if device.type != "cuda":
        return lambda: time.sleep(delay_ms / 1e3)

    def gpu_and_host() -> None:
        torch.cuda._sleep(int(delay_ms * SLEEP_CYCLES_PER_MS))
        time.sleep(delay_ms / 1e3)

    return gpu_and_host


def gather(record: dict[str, Any], rank: Rank) -> list[dict[str, Any]] | None:
    """Every rank's record on rank 0 (None elsewhere), after the measured steps."""
    records: list[dict[str, Any] | None] = [None] * rank.world
    dist.all_gather_object(records, record)
    return [r for r in records if r is not None] if rank.rank == 0 else None
