"""What the run ran on, recorded in the manifest and the hello event (runner side; imports torch)."""
from __future__ import annotations

import os
import platform
import socket
import sys

import torch

from sysprof.profiler_core.base.nvml import driver_version


def _cuda_fields(device: torch.device) -> dict:
    props = torch.cuda.get_device_properties(device)
    return {
        "device_name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "total_memory_bytes": props.total_memory,
        "cuda_version": torch.version.cuda,
        "driver_version": driver_version(),
        "cudnn_version": torch.backends.cudnn.version(),
        "phase_timer": "cuda_events",
        "gpu_uuid": str(props.uuid),
    }


def collect_env(device: torch.device) -> dict:
    env = {
        "device_type": device.type,
        "device_name": platform.processor() or platform.machine() if device.type == "cpu" else device.type,
        "torch_version": torch.__version__,
        "python_version": sys.version.split()[0],
        "hostname": socket.gethostname(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "phase_timer": "host_clock",
        # Which physical GPU ran it when a sweep spreads cells over GPUs (sweep --gpus sets it per cell).
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    if device.type == "cuda":
        env.update(_cuda_fields(device))
    return env
