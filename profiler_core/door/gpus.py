"""The GPUs of this host, asked through NVML (no torch, no CUDA context in the app)."""
from __future__ import annotations

from sysprof.profiler_core.base.nvml import GpuTelemetry, NvmlSampler, gpu_count, visible_gpu_count

__all__ = ["GpuTelemetry", "NvmlSampler", "gpu_count", "visible_gpu_count"]
