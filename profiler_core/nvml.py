"""NVML, the cheap way to ask about GPUs without torch or a CUDA context (nvidia-ml-py)."""
from __future__ import annotations


def gpu_count() -> int:
    """Visible NVIDIA GPUs; 0 when NVML or a driver is missing (a laptop, a CPU node)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # pynvml raises its own NVMLError family, or ImportError: either way, no GPU to use
        return 0
