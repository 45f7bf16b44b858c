"""Kernels labelled with the module that launched them (`--nvtx-modules`) and the user's own ranges inside it.

The runner opens a range per module on the thread that runs it: forward on the main thread (push/pop), backward
on the autograd thread (start/end). So, unlike phases, a kernel's module is looked up among the ranges of its
*launching* thread: the innermost module range there holding the start of its launch call. Its category is that
of the deepest module on the path that has one (profiler_core.base.module_types): the Linear inside `attn` counts as
attention. Any other range on that thread, not one sysprof opens itself, is the user's own (`with
torch.cuda.nvtx.range("softmax"):`): the innermost one around the launch becomes the kernel's `sub_range` when it
lies inside the model (within the kernel's outermost module range), so a range in the training loop around the
whole model is no sub-row of everything.

Module ranges nest (a block holds its attention holds its projections), so lookups go level by level
(intervals.innermost_range): one sorted `searchsorted` per nesting level, deeper levels overwriting shallower ones.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from sysprof.models.phases import is_tool_range, parse_module_range
from sysprof.profiler_core.base.module_types import NO_MODULE, module_category
from sysprof.profiler_core.kernels.intervals import NO_RANGE, innermost_range, outermost_range

Lookup = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _per_thread(kernels: pd.DataFrame, ranges: pd.DataFrame, lookup: Lookup = innermost_range) -> np.ndarray:
    """For each kernel, the row of `ranges` on its launching thread that `lookup` picks around its launch (the
    innermost by default), or NO_RANGE."""
    found = np.full(len(kernels), NO_RANGE)
    times, starts, ends = kernels["api_start"].to_numpy(), ranges["start"].to_numpy(), ranges["end"].to_numpy()
    threads = ranges["global_tid"].to_numpy()
    for tid, launched in kernels.groupby("launch_tid", sort=False).indices.items():
        rows = np.flatnonzero(threads == tid)
        if len(rows):
            inside = lookup(times[launched], starts[rows], ends[rows])
            found[launched] = np.where(inside != NO_RANGE, rows[np.clip(inside, 0, None)], NO_RANGE)
    return found


def _pick(labels: np.ndarray, index: np.ndarray, default: object) -> np.ndarray:
    """labels[index], with `default` where the index is NO_RANGE."""
    padded = np.concatenate([labels, np.array([default], dtype=labels.dtype)])
    return padded[np.where(index == NO_RANGE, len(labels), index)]


def label_modules(kernels: pd.DataFrame, ranges: pd.DataFrame) -> int:
    """Add `module`, `module_category` and `sub_range` columns; returns how many module ranges there were."""
    parsed = ranges["name"].map(parse_module_range)
    modules = ranges[parsed.notna().to_numpy(dtype=bool)].reset_index(drop=True)
    paths = np.array([path for path, _ in parsed.dropna()], dtype=object)
    types = dict(parsed.dropna().tolist())
    module_index = _per_thread(kernels, modules)
    module = _pick(paths, module_index, "")
    categories = {path: module_category(path, types) for path in set(paths)} | {"": NO_MODULE}
    kernels["module"] = pd.Categorical(module)
    kernels["module_category"] = pd.Categorical([categories[path] for path in module])
    kernels["sub_range"] = pd.Categorical(_sub_ranges(kernels, ranges, modules))
    return len(modules)


def _sub_ranges(kernels: pd.DataFrame, ranges: pd.DataFrame, modules: pd.DataFrame) -> np.ndarray:
    """The user's innermost own range around each launch, where it lies inside the kernel's outermost module range."""
    own = ranges[~ranges["name"].map(is_tool_range).to_numpy(dtype=bool)].reset_index(drop=True)
    user_index = _per_thread(kernels, own)
    outer_index = _per_thread(kernels, modules, outermost_range)
    outer_start = _pick(modules["start"].to_numpy(), outer_index, np.iinfo(np.int64).max)
    user_start = _pick(own["start"].to_numpy(), user_index, np.iinfo(np.int64).min)
    inside_model = (user_index != NO_RANGE) & (outer_index != NO_RANGE) & (user_start >= outer_start)
    return np.where(inside_model, _pick(own["name"].to_numpy(dtype=object), user_index, ""), "")
