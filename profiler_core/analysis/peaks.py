"""The GPU's dense peak FLOP/s, which MFU is measured against, and the precision the tensor cores run a config's
matmuls in. Apart from metrics.py because the runner's ceiling measurement needs these two answers alone.

Peak figures are NVIDIA's datasheet dense (non-sparse) numbers. A GPU not listed gets None (shown as N/A):
an MFU against a guessed peak would be a made-up number.
"""
from __future__ import annotations

from sysprof.profiler_core.base.config import AUTOCAST_DTYPES, FP32_MATMULS

# (substring of the device name, {matmul precision: dense TFLOP/s}); first match wins, so PCIe before SXM.
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    ("H200", {"bf16": 989.0, "tf32": 495.0, "fp32": 67.0}),
    ("H100", {"bf16": 989.0, "tf32": 495.0, "fp32": 67.0}),
    ("A100", {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5}),
)


def matmul_precision_used(dtype: str, float32_matmul_precision: str) -> str:
    """What the tensor cores run: half types under autocast, else fp32 strict or TF32."""
    if dtype in AUTOCAST_DTYPES:
        return "bf16"  # fp16 and bf16 have the same dense peak on these GPUs
    # "medium" lets the library pick bf16 or TF32 per matmul: no single peak applies, so MFU is N/A.
    return FP32_MATMULS.get(float32_matmul_precision, FP32_MATMULS["medium"])


def peak_tflops(device_name: str | None, precision: str) -> float | None:
    if not device_name:
        return None
    for needle, peaks in PEAK_TFLOPS:
        if needle in device_name:
            return peaks.get(precision)
    return None
