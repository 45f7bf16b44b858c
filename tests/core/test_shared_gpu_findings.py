"""A neighbour job on one rank's GPU is named with its rank, its GPU and the process.
The rank rows are a real 2×H100 run's (xl bf16, --nproc 2, another process doing bf16 matmuls on GPU 1:
tests/data/benchmarks/multi_gpu/results/2026-11-26_h100x2); the NVML readings are what the session's watch hands
over."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from sysprof.profiler_core.analysis.rank_readings import with_gpu_readings
from sysprof.profiler_core.analysis.ranks import with_findings
from sysprof.profiler_core.analysis.stability import gpu_process_warnings
from sysprof.profiler_core.session.watch import process_name

RESULTS = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "multi_gpu" / "results" / "2026-11-26_h100x2"
NEIGHBOUR = {"pid": 1083, "name": "python3", "used_bytes": 1288490188, "gpu": 1}  # pid from that run's warning


def readings(*, shared: bool) -> dict:
    quiet = {"sm_clock_mhz": 1980.0, "power_w": 540.0, "other_processes": [], "throttle_reasons": {}}
    return {0: quiet, 1: quiet | {"other_processes": [NEIGHBOUR] if shared else []}}


def test_the_rank_whose_gpu_is_shared_is_named_with_the_process_and_the_cost():
    summary = json.loads((RESULTS / "xl-neighbour.json").read_text())
    assert "1 other process(es) on this GPU (pid 1083)" in " ".join(w["message"] for w in summary["warnings"])
    ranks = with_findings(with_gpu_readings(summary["ranks"], readings(shared=True), summary.get("rank")))
    [finding] = [f for f in ranks["findings"] if "shares" in f]
    assert finding.startswith("rank 1 shares GPU 1 with pid 1083 (python3, 1.2 GiB)")
    assert "optimizer ×2.18" in finding and "rank 0 waits ~38.9 ms of each" in finding
    assert ranks["rows"][1]["other_processes"] == [NEIGHBOUR] and ranks["rows"][0]["other_processes"] == []


def test_no_rank_is_named_when_no_other_process_shares_a_gpu():
    summary = json.loads((RESULTS / "xl-plain.json").read_text())
    ranks = with_findings(with_gpu_readings(summary["ranks"], readings(shared=False), summary.get("rank")))
    assert not [f for f in ranks["findings"] if "shares" in f]


def test_the_warning_names_the_gpu_and_the_rank_it_shares():
    [warning] = gpu_process_warnings([NEIGHBOUR | {"rank": 1}])
    assert warning["message"].startswith("1 other process(es) on GPU 1, rank 1's (pid 1083 (python3, 1.2 GiB))")
    [single] = gpu_process_warnings([{"pid": 7, "gpu": 0}])
    assert single["message"].startswith("1 other process(es) on GPU 0 (pid 7)")


def test_a_process_is_named_from_proc_and_an_unknown_pid_has_no_name():
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as child:
        try:
            expected = Path(sys.executable).name[:15]  # comm: the first 15 characters
            for _ in range(100):  # until the fork has exec'd (before, the child still bears pytest's name)
                if process_name(child.pid) == expected:
                    break
                time.sleep(0.05)
            assert process_name(child.pid) == expected
        finally:
            child.kill()
    assert process_name(2**22 + os.getpid()) is None


def test_a_forward_only_run_names_the_shared_rank_by_the_phases_it_has():
    rows = [{"rank": 0, "status": "ok", "median_ms": {"forward": 10.0, "step": 12.0}},
            {"rank": 1, "status": "ok", "median_ms": {"forward": 15.0, "step": 12.5}}]
    ranks = with_findings(with_gpu_readings({"rows": rows, "findings": []}, readings(shared=True), None))
    assert ranks["findings"] == ["rank 1 shares GPU 1 with pid 1083 (python3, 1.2 GiB): its forward ×1.50 against "
                                 "the other ranks'"]


FOUR_RANKS = RESULTS.parent / "2026-11-27_h100x4" / "neighbour_4ranks_nsys" / "xl-neighbour-gpu2.json"


def test_the_four_gpu_case_names_rank_2_with_the_process_the_clock_and_nsys_wait():
    """xl bf16 --nproc 4 --profiler nsys on 4×H100, a bf16 matmul loop on GPU 2 (the case once seen unnamed)."""
    ranks = json.loads(FOUR_RANKS.read_text())["ranks"]
    [finding] = with_findings(dict(ranks))["findings"]
    assert finding == ranks["findings"][0]  # the stored run's finding, rebuilt by the code of today
    assert finding.startswith("rank 2 is the straggler: another process (pid 1078 (python3, 0.9 GiB)) shares GPU 2; "
                              "its SM clock 1770 MHz against 1980 MHz on the other ranks (power cap)")
    assert "nsys: exposed communication 191.8 ms on rank 0, 213.6 ms on rank 1, 145.2 ms on rank 3 against 70.5 ms " \
           "on rank 2 (slower in 20 of 20 steps" in finding


def test_the_same_rows_without_the_nodes_evidence_name_no_straggler():
    ranks = json.loads(FOUR_RANKS.read_text())["ranks"]
    rows = [row | {"other_processes": [], "sm_clock_mhz": 1980.0, "throttle_reasons": {}} for row in ranks["rows"]]
    [said] = with_findings(ranks | {"rows": rows})["findings"]
    assert said.startswith("rank 2 ran slower in this launch (slower in 20 of 20 steps") and "no cause" in said
