"""`--activation-checkpointing`: each repeated block of the model (the Transformer blocks) keeps only its input for
the backward and runs its forward again there, through torch's checkpoint wrapper (non-reentrant), before any
compile, DDP or FSDP wraps the model.

The blocks are the elements of the model's largest torch.nn.ModuleList whose elements are all of one class: the
built-in model's `layers`, nanoGPT's `transformer.h`, a Hugging Face model's `layers`. A model without one has no
block to checkpoint and is refused in one line.
"""
from __future__ import annotations

from functools import partial

from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)

from sysprof.profiler_core.base.errors import ConfigError


def checkpoint_blocks(model: nn.Module) -> dict[str, object]:
    """Wrap the model's repeated blocks, in place; which ones (for the manifest)."""
    path, blocks = repeated_blocks(model)
    if not blocks:
        raise ConfigError("--activation-checkpointing: the model has no torch.nn.ModuleList of blocks of one class "
                          "(its Transformer blocks) to checkpoint")
    chosen = {id(block) for block in blocks}
    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
        check_fn=lambda module: id(module) in chosen)
    return {"checkpointed_blocks": len(blocks), "block_class": type(blocks[0]).__name__, "blocks_at": path}


def repeated_blocks(model: nn.Module) -> tuple[str, list[nn.Module]]:
    """(dotted path, elements) of the largest ModuleList of two or more modules of one class; ("", []) if none."""
    found: tuple[str, list[nn.Module]] = ("", [])
    for path, module in model.named_modules():
        if not isinstance(module, nn.ModuleList) or len(module) < 2:
            continue
        elements = list(module)
        if len({type(element) for element in elements}) == 1 and len(elements) > len(found[1]):
            found = (path, elements)
    return found
