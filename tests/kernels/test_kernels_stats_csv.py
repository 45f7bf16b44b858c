"""nsys stats parsing against every real output file in ../shared/fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels import (
    find_report_file,
    nsys_output_errors,
    nsys_output_skips,
    read_stats_csv,
    read_stats_tables,
    split_stats_csv_line,
)
from sysprof.profiler_core.kernels.nsys_stats.schema import normalize_header, split_range_domain

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
PUBLIC = FIXTURES / "nsys_public"
H200 = FIXTURES / "h200_small_fp32"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures is not beside this checkout")

# Every fixture file -> the tables (report: row count) it must yield, or the error text it must raise.
EXPECTED: dict[str, dict[str, int] | str] = {
    "h200_small_fp32/cuda_api_sum.csv": {"cuda_api_sum": 14},
    "h200_small_fp32/cuda_gpu_kern_sum.csv": {"cuda_gpu_kern_sum": 55},
    "h200_small_fp32/cuda_gpu_mem_size_sum.csv": {"cuda_gpu_mem_size_sum": 2},
    "h200_small_fp32/cuda_gpu_mem_time_sum.csv": {"cuda_gpu_mem_time_sum": 2},
    "h200_small_fp32/nvtx_gpu_proj_sum.csv": {"nvtx_gpu_proj_sum": 12},
    "h200_small_fp32/nvtx_kern_sum.csv": {"nvtx_kern_sum": 268},
    "h200_small_fp32/nvtx_sum.csv": {"nvtx_sum": 12},
    "h200_small_fp32/osrt_sum.csv": {"osrt_sum": 4},
    "h200_small_fp32/stats_column_format.txt": {"cuda_gpu_kern_sum": 55, "nvtx_sum": 12},
    "h200_small_fp32/cuda_event_truth.json": "no nsys stats table",
    "h200_small_fp32/report.sqlite.xz": "binary file",
    "h200_small_fp32/memory_snapshot.pickle.xz": "binary file",
    "nsys_public/PROVENANCE.md": "fields where the header has",
    "nsys_public/forkni_2026.2.1_windows_cuda_gpu_mem_size_sum.csv": {"cuda_gpu_mem_size_sum": 1},
    "nsys_public/forkni_2026.2.1_windows_nvtx_sum.csv": {"nvtx_sum": 6},
    "nsys_public/gpa_2021_gpukernsum_paddle_bert.csv": {"cuda_gpu_kern_sum": 80},
    "nsys_public/gpa_2023_cuda_gpu_kern_sum_jax_demo.csv": {"cuda_gpu_kern_sum": 238},
    "nsys_public/gpa_2023_cuda_gpu_mem_time_sum_jax_demo.csv": {"cuda_gpu_mem_time_sum": 4},
    "nsys_public/gpa_2024_cuda_gpu_kern_sum_jax_llama2_70b.csv": {"cuda_gpu_kern_sum": 175},
    "nsys_public/gpa_2024_cuda_gpu_mem_time_sum_jax_llama2_70b.csv": {"cuda_gpu_mem_time_sum": 3},
    "nsys_public/kiln_2023.4.4_profile_importer_failure.log": "Importer error status",
    "nsys_public/kiln_2024.5.1_cuda_api_sum.csv": {"cuda_api_sum": 31},
    "nsys_public/kiln_2024.5.1_cuda_gpu_kern_sum.csv": {"cuda_gpu_kern_sum": 61},
    "nsys_public/kiln_2024.5.1_cuda_gpu_kern_sum_column.txt": {"cuda_gpu_kern_sum": 61},
    "nsys_public/kiln_2024.5.1_cuda_kern_exec_sum.csv": {"cuda_kern_exec_sum": 61},
    "nsys_public/kiln_2024.5.1_legacy_alias_nvtxsum_not_found.txt": "Report 'nvtxsum' could not be found",
    "nsys_public/kiln_2024.5.1_nvtx_gpu_proj_sum.csv": {"nvtx_gpu_proj_sum": 37},
    "nsys_public/kiln_2024.5.1_nvtx_gpu_proj_sum_column.txt": {"nvtx_gpu_proj_sum": 37},
    "nsys_public/kiln_2024.5.1_nvtx_kern_sum.csv": {"nvtx_kern_sum": 189},
    "nsys_public/kiln_2024.5.1_nvtx_kern_sum_column.txt": {"nvtx_kern_sum": 189},
    "nsys_public/kiln_2024.5.1_nvtx_pushpop_trace.csv": {"nvtx_pushpop_trace": 5},
    "nsys_public/kiln_2024.5.1_nvtx_sum.csv": {"nvtx_sum": 40},
    "nsys_public/kiln_2024.5.1_nvtx_sum_column.txt": {"nvtx_sum": 40},
    "nsys_public/kiln_2024.5.1_stats_csv_to_file.log": "no nsys stats table",
    "nsys_public/kiln_2024.5.1_stats_multi_report_to_files.log": "no nsys stats table",
    "nsys_public/kiln_2024.5.1_stats_output_exists_skipped.log": {
        "nvtx_sum": 0, "nvtx_pushpop_trace": 0, "cuda_gpu_kern_sum": 0, "cuda_api_sum": 0, "cuda_kern_exec_sum": 0},
    "nsys_public/kiln_2024.6.2_nvtx_kern_sum.csv": {"nvtx_kern_sum": 120},
    "nsys_public/kiln_2024.6.2_nvtx_pushpop_sum.csv": {"nvtx_pushpop_sum": 34},
    "nsys_public/luxprovide_2025.3.1_pytorch_monai_training_nvtx_sum_tutorial.md": {"nvtx_sum": 8},
    "nsys_public/yktian_legacy_builtin_stats_paddle_gcn.txt": {
        "cuda_api_sum": 13, "cuda_gpu_kern_sum": 27, "cuda_gpu_mem_time_sum": 3, "cuda_gpu_mem_size_sum": 3,
        "osrt_sum": 38},
    "nsys_public/yktian_pytorch_gcn_stats_true_column.txt": {
        "nvtx_sum": 0, "osrt_sum": 29, "cuda_api_sum": 12, "cuda_gpu_kern_sum": 19, "cuda_gpu_mem_time_sum": 3,
        "cuda_gpu_mem_size_sum": 3},
}


def _fixture_files() -> list[str]:
    if not FIXTURES.is_dir():
        return []
    return sorted(f"{p.parent.name}/{p.name}" for d in (PUBLIC, H200) for p in d.iterdir() if p.is_file())


@needs_fixtures
def test_every_fixture_file_has_an_expectation():
    assert set(_fixture_files()) == set(EXPECTED)


@pytest.mark.parametrize("relative", _fixture_files())
def test_fixture_file_parses_as_expected(relative):
    expected = EXPECTED[relative]
    if isinstance(expected, str):
        with pytest.raises(KernelReportError, match=expected):
            read_stats_tables(FIXTURES / relative)
        return
    tables = read_stats_tables(FIXTURES / relative)
    assert {name: len(frame) for name, frame in tables.items()} == expected
    for frame in tables.values():
        numeric_time = [c for c in frame.columns if c.endswith("_ns") and c != "range_total_ns"]
        assert all(pd.api.types.is_numeric_dtype(frame[c]) for c in numeric_time)


@needs_fixtures
def test_new_headers_and_values_of_h200_kernel_summary():
    kernels = read_stats_csv(H200 / "cuda_gpu_kern_sum.csv")
    assert list(kernels.columns) == ["time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns",
                                     "max_ns", "std_ns", "name"]
    top = kernels.iloc[0]
    assert top["name"].startswith("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8")
    assert (top["total_ns"], top["instances"], top["med_ns"], top["std_ns"]) == (26430941, 480, 36352.5, 43559.5)
    assert kernels["total_ns"].sum() == 142467640
    assert kernels.attrs["report"] == "cuda_gpu_kern_sum"


@needs_fixtures
def test_2021_headers_map_to_the_same_names_without_median():
    kernels = read_stats_csv(PUBLIC / "gpa_2021_gpukernsum_paddle_bert.csv", report="gpukernsum")
    assert list(kernels.columns) == ["time_pct", "total_ns", "instances", "avg_ns", "min_ns", "max_ns", "std_ns",
                                     "name"]
    assert kernels.loc[0, "avg_ns"] == 90576.0
    adam = kernels[kernels["name"].str.contains("AdamKernelREG")].iloc[0]
    assert adam["name"].endswith("float const*, float*, int)")  # quoted name with commas kept whole
    assert adam["total_ns"] == 82876044


@needs_fixtures
def test_quoted_names_with_commas_stay_whole():
    kernels = read_stats_csv(PUBLIC / "gpa_2023_cuda_gpu_kern_sum_jax_demo.csv")
    assert kernels.loc[0, "name"] == "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm *, unsigned long, ncclWork *)"
    assert kernels.loc[0, "total_ns"] == 316902963
    assert kernels["time_pct"].sum() == pytest.approx(100, abs=1.5)


@needs_fixtures
def test_kern_exec_sum_keeps_api_and_kernel_name_columns():
    rows = read_stats_csv(PUBLIC / "kiln_2024.5.1_cuda_kern_exec_sum.csv")
    assert {"api_name", "name", "tavg_ns", "kstddev_ns", "pid"} <= set(rows.columns)
    assert set(rows["api_name"]) <= {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC_v11060"}
    assert rows["name"].str.contains(r"\(const __nv_bfloat16 \*, ").any()


@needs_fixtures
def test_nvtx_domain_prefix_is_split_off():
    ranges = read_stats_csv(H200 / "nvtx_sum.csv")
    assert "backward" in set(ranges["range"]) and "optimizer step" in set(ranges["range"])
    assert set(ranges["domain"]) == {""}
    kiln = read_stats_csv(PUBLIC / "kiln_2024.5.1_nvtx_gpu_proj_sum.csv")
    assert kiln.loc[0, "range"] == "kiln/gdn/qk_norm"


def test_range_domain_rule_keeps_cpp_scopes():
    assert split_range_domain(":forward") == ("forward", "")
    assert split_range_domain("mydomain:forward") == ("forward", "mydomain")
    assert split_range_domain("aten::addmm") == ("aten::addmm", None)
    assert split_range_domain(":aten::addmm") == ("aten::addmm", "")
    assert split_range_domain("step 0") == ("step 0", None)


def test_header_normalization_old_and_new():
    assert normalize_header("Time(%)") == normalize_header("Time (%)") == ("time_pct", 1)
    assert normalize_header("Average") == normalize_header("Avg (ns)") == ("avg_ns", 1)
    assert normalize_header("Total (MB)") == ("total_bytes", 1e6)
    assert normalize_header("Operations") == ("count", 1)


def test_split_keeps_last_field_whole_and_rejects_short_rows():
    assert split_stats_csv_line('1,2,"a, b"', 3) == ["1", "2", "a, b"]
    assert split_stats_csv_line('"x, y",2,z', 3) == ["x, y", "2", "z"]
    with pytest.raises(ValueError):
        split_stats_csv_line("1,2", 4)


@needs_fixtures
def test_column_format_matches_csv_of_the_same_run():
    column = read_stats_csv(H200 / "stats_column_format.txt", report="cuda_gpu_kern_sum")
    csv = read_stats_csv(H200 / "cuda_gpu_kern_sum.csv")
    assert column.attrs["names_clipped"]
    for field in ("total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns"):
        assert column[field].tolist() == csv[field].tolist(), field  # en_US separators removed
    for clipped, full in zip(column["name"], csv["name"]):
        assert full.startswith(clipped.rstrip("…"))
    nvtx = read_stats_csv(H200 / "stats_column_format.txt", report="nvtx_sum")
    assert nvtx.set_index("range")["total_ns"].to_dict() == read_stats_csv(H200 / "nvtx_sum.csv").set_index(
        "range")["total_ns"].to_dict()


@needs_fixtures
def test_column_format_clipped_numbers_become_missing():
    column = read_stats_csv(PUBLIC / "kiln_2024.5.1_nvtx_kern_sum_column.txt")
    csv = read_stats_csv(PUBLIC / "kiln_2024.5.1_nvtx_kern_sum.csv")
    assert column.attrs["clipped_numbers"] == 6
    assert column["total_ns"].tolist() == csv["total_ns"].tolist()
    lm_head = column[column["range"] == "kiln/lm_head"].iloc[0]
    assert pd.isna(lm_head["avg_ns"]) and lm_head["total_ns"] == 134869556


@needs_fixtures
def test_console_capture_with_skipped_nvtx_and_several_tables():
    tables = read_stats_tables(PUBLIC / "yktian_pytorch_gcn_stats_true_column.txt")
    assert "does not contain NV Tools Extension" in tables["nvtx_sum"].attrs["skipped"]
    kernels = tables["cuda_gpu_kern_sum"]
    assert kernels.loc[1, "name"] == "ampere_sgemm_64x32_sliced1x4_tn" and kernels.loc[1, "total_ns"] == 42720
    assert tables["cuda_gpu_mem_size_sum"].loc[0, "total_bytes"] == pytest.approx(0.846e6)


@needs_fixtures
def test_legacy_builtin_stats_units():
    tables = read_stats_tables(PUBLIC / "yktian_legacy_builtin_stats_paddle_gcn.txt")
    sizes = tables["cuda_gpu_mem_size_sum"].set_index("name")
    assert sizes.loc["[CUDA memcpy DtoD]", "total_bytes"] == pytest.approx(365.188 * 1024)
    assert tables["cuda_gpu_kern_sum"].loc[0, "total_ns"] == 58366


@needs_fixtures
def test_markdown_tutorial_table_with_thousands_separators():
    ranges = read_stats_csv(PUBLIC / "luxprovide_2025.3.1_pytorch_monai_training_nvtx_sum_tutorial.md")
    assert ranges.loc[0, "range"] == "epoch_1" and ranges.loc[0, "total_ns"] == 674481948315
    assert "backward_pass" in set(ranges["range"])


@needs_fixtures
def test_nsys_output_scanning():
    assert nsys_output_errors((PUBLIC / "kiln_2024.5.1_legacy_alias_nvtxsum_not_found.txt").read_text()) == [
        "ERROR: Report 'nvtxsum' could not be found."]
    assert nsys_output_errors((PUBLIC / "kiln_2023.4.4_profile_importer_failure.log").read_text())
    assert nsys_output_errors((PUBLIC / "kiln_2024.5.1_stats_multi_report_to_files.log").read_text()) == []
    assert len(nsys_output_skips((PUBLIC / "kiln_2024.5.1_stats_output_exists_skipped.log").read_text())) == 5


def test_empty_file_is_an_empty_table(tmp_path):
    empty = tmp_path / "run_cuda_gpu_kern_sum.csv"
    empty.write_bytes(b"")  # what nsys leaves when it skips a report
    frame = read_stats_csv(empty)
    assert frame.empty and frame.attrs["report"] == "cuda_gpu_kern_sum"


def test_missing_and_garbage_files_raise_typed_errors(tmp_path):
    with pytest.raises(KernelReportError, match="cannot read"):
        read_stats_csv(tmp_path / "nope.csv")
    with pytest.raises(KernelReportError):
        read_stats_csv(Path(__file__))


@needs_fixtures
def test_find_report_file_by_new_bare_and_legacy_names(tmp_path):
    assert find_report_file(H200, "cuda_gpu_kern_sum") == H200 / "cuda_gpu_kern_sum.csv"
    assert find_report_file(PUBLIC, "nvtx_gpu_proj_sum", "kiln_2024.5.1") == \
        PUBLIC / "kiln_2024.5.1_nvtx_gpu_proj_sum.csv"
    shutil.copy(PUBLIC / "gpa_2021_gpukernsum_paddle_bert.csv", tmp_path / "run_gpukernsum.csv")
    found = find_report_file(tmp_path, "cuda_gpu_kern_sum")
    assert found == tmp_path / "run_gpukernsum.csv"
    assert len(read_stats_csv(found, "cuda_gpu_kern_sum")) == 80
    assert find_report_file(tmp_path, "nvtx_sum") is None


@needs_fixtures
def test_a_directory_of_several_stats_sets_is_never_read_as_a_mix():
    """nsys_public holds the CSVs of three `nsys stats` runs (two nvtx_kern_sum files among them): without --prefix
    it is refused with the sets listed; with one, only that set's files are read."""
    from sysprof.profiler_core.base.errors import StatsSetError
    from sysprof.profiler_core.kernels import analyze_stats_dir
    from sysprof.profiler_core.kernels.nsys_stats.csv_reader import stats_sets

    assert stats_sets(PUBLIC) == ["forkni_2026.2.1_windows", "kiln_2024.5.1", "kiln_2024.6.2"]
    assert stats_sets(H200) == [""]
    with pytest.raises(StatsSetError, match=r"holds 3 sets of nsys stats \('forkni_2026.2.1_windows', "
                                            r"'kiln_2024.5.1', 'kiln_2024.6.2'\); name one with --prefix"):
        analyze_stats_dir(PUBLIC)
    with pytest.raises(StatsSetError, match="has no stats set 'kiln' .it holds: 'forkni"):
        analyze_stats_dir(PUBLIC, prefix="kiln")
    chosen = analyze_stats_dir(PUBLIC, prefix="kiln_2024.5.1")
    kernels = read_stats_csv(PUBLIC / "kiln_2024.5.1_cuda_gpu_kern_sum.csv", "cuda_gpu_kern_sum")
    assert chosen["stats_prefix"] == "kiln_2024.5.1"
    assert chosen["totals"]["gpu_ns"] == int(kernels["total_ns"].sum())
    assert find_report_file(PUBLIC, "nvtx_kern_sum", "kiln_2024.6.2") == PUBLIC / "kiln_2024.6.2_nvtx_kern_sum.csv"
