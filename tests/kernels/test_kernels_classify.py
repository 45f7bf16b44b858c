"""Kernel classes for real kernel names taken from the fixtures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sysprof.profiler_core.kernels import KERNEL_CLASSES, classify_kernel, classify_kernels, read_stats_csv

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures is not beside this checkout")

# (fixture file, a substring that picks exactly one real kernel name, expected class)
CASES = [
    ("h200_small_fp32/cuda_gpu_kern_sum.csv",
     "f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel", "gemm"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "cutlass_80_simt_sgemm_128x256_8x4_nt_align1", "gemm"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "cublasLt::splitKreduce_kernel", "gemm"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "softmax_warp_forward", "softmax"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "cunn_SoftMaxBackwardSmem", "softmax"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "MeanOps<float, float, float, float>, unsigned int", "norm_reduce"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv",
     "CUDAFunctor_add<float>, std::array<char *, (unsigned long)3>", "elementwise"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "silu_backward_kernel", "elementwise"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv",
     "unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda", "copy"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "LerpFunctor", "optimizer"),
    ("h200_small_fp32/cuda_gpu_kern_sum.csv", "embedding_backward_feature_kernel", "elementwise"),
    ("h200_small_fp32/cuda_gpu_mem_time_sum.csv", "[CUDA memset]", "copy"),
    ("nsys_public/gpa_2021_gpukernsum_paddle_bert.csv", "AdamKernelREG<paddle::platform::float16, float>", "optimizer"),
    ("nsys_public/gpa_2021_gpukernsum_paddle_bert.csv",
     "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "gemm"),
    ("nsys_public/gpa_2023_cuda_gpu_kern_sum_jax_demo.csv", "ncclKernel_AllGather_RING_LL_Sum_int8_t", "nccl"),
    ("nsys_public/gpa_2024_cuda_gpu_kern_sum_jax_llama2_70b.csv",
     "cudnn_generated_fmha_knob_26_64x64x128_1x4x1_kernel0_0", "attention"),
    ("nsys_public/gpa_2024_cuda_gpu_kern_sum_jax_llama2_70b.csv",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1", "gemm"),
    ("nsys_public/kiln_2024.5.1_cuda_gpu_kern_sum.csv", "ucopy_bf16", "copy"),
    ("nsys_public/yktian_pytorch_gcn_stats_true_column.txt",
     "batch_norm_transform_input_channels_last_kernel", "norm_reduce"),
]


def _real_name(relative: str, fragment: str) -> str:
    report = "cuda_gpu_kern_sum" if "kern_sum" in relative or "stats_true" in relative else None
    names = read_stats_csv(FIXTURES / relative, report)["name"]
    matches = names[names.str.contains(fragment, regex=False)].unique()
    assert len(matches) == 1, f"{fragment!r} should pick one name in {relative}, got {len(matches)}"
    return matches[0]


@pytest.mark.parametrize(("relative", "fragment", "expected"), CASES)
def test_real_kernel_name_lands_in_class(relative, fragment, expected):
    assert classify_kernel(_real_name(relative, fragment)) == expected


def test_h200_top_kernels_are_gemm_and_gemm_dominates():
    kernels = read_stats_csv(FIXTURES / "h200_small_fp32/cuda_gpu_kern_sum.csv")
    classes = classify_kernels(kernels["name"])
    assert classes.head(6).tolist() == ["gemm"] * 6
    gemm_fraction = kernels.loc[classes == "gemm", "total_ns"].sum() / kernels["total_ns"].sum()
    assert 0.70 < gemm_fraction < 0.80


def test_series_version_matches_scalar_version_and_uses_known_classes():
    names = read_stats_csv(FIXTURES / "nsys_public/gpa_2023_cuda_gpu_kern_sum_jax_demo.csv")["name"]
    classes = classify_kernels(names)
    assert classes.tolist() == [classify_kernel(n) for n in names]
    assert set(classes) <= set(KERNEL_CLASSES)
    assert isinstance(classes, pd.Series) and classes.name == "class"


def test_hadamard_is_not_adam():
    assert classify_kernel("fast_hadamard_transform_kernel") != "optimizer"
