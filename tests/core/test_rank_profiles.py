"""Kernel tables per rank: torchrun starts one nsys per rank, each report lands in its rank's directory, each is
analysed as a single run's, and the all-ranks rows carry every rank's communication or its reason for none."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rank_reports import SqliteBackend, unpack_rank_reports

from sysprof.profiler_core.analysis.rank_readings import with_communication
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.processes import WARM_START
from sysprof.profiler_core.session.backends.nsys_backend import NsysBackend
from sysprof.profiler_core.session.process import runner_argv

TWO_RANKS = RunConfig(model="tiny", nproc=2, device="cpu")


def test_without_ranks_the_launcher_wraps_the_runner():
    argv = runner_argv(RunConfig(model="tiny"), Path("run"), "nsys", ["nsys", "profile", "-o", "run/profile"])
    assert argv[:5] == ["nsys", "profile", "-o", "run/profile", sys.executable]
    assert argv[5:8] == ["-P", "-m", "sysprof.profiler_core.runner"] and argv[-2:] == ["--capture", "nsys"]


def test_with_ranks_torchrun_starts_the_launcher_once_per_rank():
    argv = runner_argv(TWO_RANKS, Path("run"), "nsys", ["nsys", "profile"])
    no_python = argv.index("--no-python")
    assert argv[1:5] == ["-P", "-m", WARM_START, "torch.distributed.run"] and "--nproc-per-node" in argv[:no_python]
    assert argv[no_python + 1:no_python + 4] == ["nsys", "profile", sys.executable]


def test_with_ranks_and_no_launcher_torchrun_runs_the_runner_module_with_a_safe_path():
    """torchrun would start `python -u -m MODULE`, the working directory first on its path: each rank's program is
    given whole instead (--no-python), `python -P -m` as every process the tool starts. Ranks on the CPU start warm;
    ranks on GPUs start fresh."""
    argv = runner_argv(TWO_RANKS, Path("run"))
    after = argv[argv.index("--no-python") + 1:]
    assert after[:5] == [sys.executable, "-P", "-m", WARM_START, "sysprof.profiler_core.runner"]
    for device in ("cuda", "auto"):
        argv = runner_argv(RunConfig(model="tiny", nproc=2, device=device), Path("run"))
        after = argv[argv.index("--no-python") + 1:]
        assert after[:4] == [sys.executable, "-P", "-m", "sysprof.profiler_core.runner"]


def test_each_rank_names_its_own_report_through_nsys_environment_expansion(tmp_path):
    launcher = NsysBackend(Path("nsys")).launcher(tmp_path, ranks=True)
    assert launcher[-2:] == ["-o", str(tmp_path / "profile-rank%q{RANK}-local%q{LOCAL_RANK}")]
    assert NsysBackend(Path("nsys")).launcher(tmp_path, ranks=False)[-1] == str(tmp_path / "profile")


def test_each_report_moves_into_its_ranks_directory(tmp_path):
    for name in ("profile-rank0-local0.nsys-rep", "profile-rank1-local1.nsys-rep", "profile-rank3-local1.qdstrm",
                 "stderr.log"):
        (tmp_path / name).write_text(name)
    NsysBackend(Path("nsys")).place_rank_outputs(tmp_path)
    assert (tmp_path / "profile.nsys-rep").read_text() == "profile-rank0-local0.nsys-rep"
    assert (tmp_path / "ranks" / "01" / "profile.nsys-rep").read_text() == "profile-rank1-local1.nsys-rep"
    assert (tmp_path / "ranks" / "03" / "profile.qdstrm").read_text() == "profile-rank3-local1.qdstrm"
    assert (tmp_path / "stderr.log").is_file()


def test_communication_figures_join_the_rows_of_their_rank():
    ranks = {"rows": [{"rank": 0, "status": "ok"}, {"rank": 1, "status": "ok"}]}
    kernel_rows = [{"rank": 0, "comm_ms": 21.0, "exposed_comm_ms": 2.0, "overlap_pct": 90.0, "comm_share_pct": 50.0},
                   {"rank": 1, "error": "rank 1: nsys wrote no profile.nsys-rep"}]
    rows = with_communication(ranks, kernel_rows)["rows"]
    assert rows[0]["comm_ms"] == 21.0 and rows[0]["overlap_pct"] == 90.0
    assert rows[1]["comm_ms"] is None and rows[1]["status"] == "ok"


def nccl_ns_by_query(sqlite_path: Path) -> int:
    """NCCL kernel time straight from nsys's tables, without the tool's attribution or classes."""
    import sqlite3

    with sqlite3.connect(sqlite_path) as conn:
        return conn.execute("SELECT SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                            "ON k.shortName = s.id WHERE s.value LIKE 'nccl%'").fetchone()[0]


def test_every_ranks_real_report_is_analysed_and_a_missing_one_says_so(tmp_path):
    """Two real reports of a DDP step over the H200s (small, bf16, 3 profiled steps), one per rank; rank 2 left
    none."""
    from sysprof.profiler_core.session.analysis import analyze_rank_kernels

    run_dir, pass_dir = tmp_path, tmp_path / "profiled"
    unpack_rank_reports(pass_dir)
    record = analyze_rank_kernels(SqliteBackend(), pass_dir, run_dir, [(0, 0), (1, 1), (2, 2)])
    assert record["kernels"] == "kernels/analysis.json" and (run_dir / "kernels/ranks/01/analysis.json").is_file()
    zero, one, two = record["ranks"]
    for row, sqlite in ((zero, pass_dir / "profile.sqlite"), (one, pass_dir / "ranks/01/profile.sqlite")):
        assert row["comm_ms"] * 3 * 1e6 == pytest.approx(nccl_ns_by_query(sqlite))
        assert 0 <= row["exposed_comm_ms"] <= row["comm_ms"] and 0 <= row["overlap_pct"] <= 100
    # Rank 1 finished its share first and waits in the all-reduce kernels for rank 0.
    assert one["comm_ms"] > 10 * zero["comm_ms"]
    assert two == {"rank": 2, "error": f"rank 2: nsys wrote no profile.nsys-rep in {pass_dir / 'ranks' / '02'}"}
    from rich.console import Console

    from sysprof.profiler_core.render.run_report import rank_kernels_table, rank_pass_errors

    console = Console(width=80, record=True)
    console.print(rank_kernels_table({"backend": "nsys", **record}))
    text = console.export_text()
    assert f"{one['comm_ms']:.1f}" in text and f"{one['overlap_pct']:.0f}" in text
    assert rank_pass_errors({"profile": record}) == [two["error"]]  # said under the table, whole
