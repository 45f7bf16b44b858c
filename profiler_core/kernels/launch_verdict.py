"""A phase's verdict from its launch figures (launch_bound.py): launch-bound or GPU-bound, why, and what would help.

Rule: launch-bound when host-wait is at least HOST_WAIT_BOUND_PCT of the phase's GPU span, i.e. the GPU sat idle
waiting for the next launch for that share of the time; otherwise GPU-bound. Faster kernels (bf16, fusion) cannot
shorten time the GPU spends waiting, so past that share the host's launch rate decides the phase's time.

The share of kernels shorter than their own launch call is reported, not voted with: on its own it misjudges a
phase whose long kernels (GEMMs) let the host run ahead. The H200 fixture's backward has 60% of its kernels shorter
than their launch call, yet the host launches a median 0.4 ms ahead of the GPU, host-wait is 8% and the GPU is 84%
busy. The share is named in the reason as a warning: faster kernels can turn such a phase launch-bound.
"""
from __future__ import annotations

LAUNCH_BOUND, GPU_BOUND = "launch-bound", "GPU-bound"
HOST_WAIT_BOUND_PCT = 30.0
# at least this share of kernels shorter than their launch: say faster kernels may not pay
SHORT_KERNELS_WARN_PCT = 50.0
CLASS_REMEDY_MIN_SHARE = 0.15  # a kernel class earns its remedy line from this share of the phase's GPU time
LAUNCH_BOUND_REMEDY = ("bf16 will not help; try CUDA graphs / torch.compile mode reduce-overhead "
                       "(--compile --compile-mode reduce-overhead) / a larger batch")
CLASS_REMEDIES = {
    "gemm": "bf16 (--dtype bf16) or TF32 matmuls, if not in use, run the GEMMs on tensor cores",
    "softmax": "SDPA (--attention sdpa) fuses the attention's matmul-softmax-matmul",
    "elementwise": "fusing the memory-bound elementwise kernels (--compile) saves passes over memory",
    "norm_reduce": "fusing the norms and reductions with their neighbours (--compile) saves passes over memory",
    "optimizer": "fused AdamW (--optimizer-impl fused) does the update in one pass over the weights",
    "attention": "the attention kernels are fused already; bf16 (--dtype bf16) speeds them up",
    "copy": "copies and casts: keep tensors in one layout and dtype",
}
GPU_BOUND_FALLBACK = "faster kernels help: bf16 (--dtype bf16) or fused kernels (--compile)"


def judge(figures: dict, by_class: dict[str, int]) -> dict[str, str]:
    """{"verdict", "reason", "remedy"} for one phase's launch figures and its GPU time by kernel class."""
    if (figures.get("host_wait_pct") or 0.0) >= HOST_WAIT_BOUND_PCT:
        return {"verdict": LAUNCH_BOUND, "reason": _launch_bound_reason(figures), "remedy": LAUNCH_BOUND_REMEDY}
    return {"verdict": GPU_BOUND, "reason": _gpu_bound_reason(figures), "remedy": gpu_bound_remedy(by_class)}


def _launch_bound_reason(figures: dict) -> str:
    reason = (f"host-wait {figures['host_wait_pct']:.0f}% of the GPU span ≥ {HOST_WAIT_BOUND_PCT:.0f}%: "
              f"the GPU waited for the next launch; busy {figures['busy_pct']:.0f}%")
    return reason + _short_kernels(figures)


def _gpu_bound_reason(figures: dict) -> str:
    reason = (f"busy {figures['busy_pct']:.0f}% of the GPU span, host-wait {figures['host_wait_pct']:.0f}% "
              f"< {HOST_WAIT_BOUND_PCT:.0f}%")
    if figures.get("median_host_lead_us") is not None:
        reason += f"; the host launches a median {_duration(figures['median_host_lead_us'])} ahead of the GPU"
    short = figures.get("shorter_than_launch_pct")
    if short is not None and short >= SHORT_KERNELS_WARN_PCT:
        reason += _short_kernels(figures) + ": faster kernels can turn it launch-bound"
    return reason


def _short_kernels(figures: dict) -> str:
    if figures.get("shorter_than_launch_pct") is None:
        return ""
    return (f"; {figures['shorter_than_launch_pct']:.0f}% of kernels are shorter than their launch call "
            f"(median launch {figures['median_launch_us']:.1f} µs)")


def gpu_bound_remedy(by_class: dict[str, int]) -> str:
    """What speeds up the kernel classes that take the most of the phase's GPU time (two at most)."""
    total = sum(by_class.values())
    lines = [f"{name} {ns / total:.0%}: {CLASS_REMEDIES[name]}"
             for name, ns in sorted(by_class.items(), key=lambda item: -item[1])
             if name in CLASS_REMEDIES and total and ns / total >= CLASS_REMEDY_MIN_SHARE][:2]
    return "; ".join(lines) if lines else GPU_BOUND_FALLBACK


def _duration(us: float) -> str:
    return f"{us / 1e3:.1f} ms" if us >= 1000 else f"{us:.0f} µs"
