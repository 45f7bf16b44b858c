"""Why a screen has nothing to show, and what to do that can work on the machine the run was on.

A kernel table needs CUDA kernels and a memory analysis the CUDA caching allocator: advice to "run with profiler
nsys" cannot help a CPU run, so a CPU run is told what it would take instead."""
from __future__ import annotations

from sysprof.tui.model.state import RunState


def _device(state: RunState) -> str | None:
    return (state.env or {}).get("device_type") or (state.config or {}).get("device")


def absent_kernels(state: RunState) -> str:
    if state.running:
        return "Kernel tables come after the measured steps, from the profiled pass (if this run has one)."
    if _device(state) == "cpu":
        return ("No kernel tables: this run was on the CPU, and kernel tables are made of CUDA kernels "
                "(torch.profiler on a CPU run records none). Run it on a GPU node with profiler nsys or torch.")
    if (state.config or {}).get("profiler", "none") == "none":
        return ("No kernel tables: this run had no profiled pass. Run it again with profiler nsys (or torch, "
                "where nsys is missing) on Configure, or `sysprof run --profiler nsys`.")
    return "No kernel tables: the profiled pass left none (see the run's stderr.log)."


def absent_memory(state: RunState) -> str:
    if state.running:
        return "The memory analysis comes after the measured steps, from the memory pass (if this run has one)."
    if _device(state) == "cpu":
        return ("No memory analysis: the memory pass records the CUDA caching allocator, and this run was on the "
                "CPU. Run it on a GPU node with memory capture ticked.")
    if not (state.config or {}).get("memory"):
        return ("No memory analysis: this run had no memory pass. Tick 'memory capture' on Configure, or "
                "`sysprof run --memory`.")
    return "No memory analysis: the memory pass left none (see the run's stderr.log)."
