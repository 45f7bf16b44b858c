"""nsys argv builders, and postprocess_report's answers when nsys left no report."""

from __future__ import annotations

from sysprof.profiler_core.kernels.nsys.commands import (
    STATS_REPORTS,
    export_sqlite_argv,
    postprocess_report,
    profile_argv,
    stats_argv,
)


def test_profile_argv_limits_capture_to_profiler_api_window():
    argv = profile_argv("/opt/nsys", "/runs/r1/profile", ["python", "-m", "sysprof.profiler_core.runner", "--x"])
    assert argv == [
        "/opt/nsys", "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite", "true",
        "-o", "/runs/r1/profile", "python", "-m", "sysprof.profiler_core.runner", "--x",
    ]
    with_extra = profile_argv("nsys", "p", ["r"], extra=["--cuda-memory-usage=true"])
    assert with_extra.index("--cuda-memory-usage=true") < with_extra.index("-o")


def test_export_and_stats_argv():
    assert export_sqlite_argv("nsys", "run/profile.nsys-rep", "run/profile.sqlite") == [
        "nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", "run/profile.sqlite",
        "run/profile.nsys-rep"]
    # Stats read the sqlite the export just wrote: a second export of the report would double the slowest step.
    argv = stats_argv("nsys", "run/profile.sqlite", ["cuda_gpu_kern_sum", "nvtx_sum"], "run/stats/profile")
    assert argv == ["nsys", "stats", "--report", "cuda_gpu_kern_sum,nvtx_sum", "--format", "csv",
                    "--output", "run/stats/profile", "--force-overwrite=true", "run/profile.sqlite"]
    assert "cuda_gpu_kern_sum" in STATS_REPORTS and "nvtx_kern_sum" in STATS_REPORTS


def test_no_report_at_all_is_a_clear_error(tmp_path):
    result = postprocess_report(tmp_path / "nsys", tmp_path)
    assert not result.ok and "profile.nsys-rep" in result.error and "\n" not in result.error


def test_leftover_qdstrm_without_importer_explains_libdw(tmp_path):
    (tmp_path / "profile.qdstrm").write_bytes(b"")  # nsys exits 0 leaving only this when libdw is missing
    result = postprocess_report(tmp_path / "no-install" / "nsys", tmp_path)
    assert not result.ok
    assert "QdstrmImporter" in result.error and "libdw" in result.error
