"""--nproc: torchrun ranks on the CPU with gloo (per-rank timing, the gather, the table, a slowed rank named, a
failing rank named and the others stopped), and the per-rank analysis on made-up records."""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from sysprof.profiler_core.analysis.rank_readings import with_communication, with_gpu_readings
from sysprof.profiler_core.analysis.ranks import rank_table, ranks_section, with_findings
from sysprof.profiler_core.analysis.stragglers import MIN_SHARE
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.render.run_report import print_run
from sysprof.profiler_core.session.rank_checks import with_rank_failure

ROOT = Path(__file__).resolve().parents[2]
FAILS_ON_RANK_1 = ROOT / "tests" / "data" / "models" / "ranks" / "fails_on_rank_1.py"
FAILS_LATE_ON_RANK_2 = ROOT / "tests" / "data" / "models" / "ranks" / "fails_late_on_rank_2.py"
TWO_RANKS = ["--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1", "--nproc", "2"]


def sysprof(args, env, timeout=240):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def record(rank, forward, backward, optimizer=3.0, status="ok", steps=10, cpu_wait=0.1):
    """Test input: one rank's record as runner/engine gathers it (made-up steps; every step alike)."""
    step = forward + backward + optimizer
    phases = {"forward": forward, "backward": backward, "optimizer": optimizer}
    return {"rank": rank, "status": status, "error": None, "step_p90_ms": step * 1.05, "peak_allocated_bytes": None,
            "tokens_per_s": 1000.0, "host": "h", "device": f"cuda:{rank}", "cpu_wait_ms": cpu_wait,
            "median_ms": {**phases, "step": step},
            "steps": [{"kind": "measured", "index": i, "wall_ms": step, "phases_ms": phases} for i in range(steps)]}


def with_noise(rec, spread_ms, seed):
    """The record's steps with each phase moved by up to ±spread_ms (a fixed seed: the same input every time)."""
    rng = random.Random(seed)
    steps = [{**s, "phases_ms": {k: v + rng.uniform(-spread_ms, spread_ms) for k, v in s["phases_ms"].items()}}
             for s in rec["steps"]]
    return {**rec, "steps": steps}


def test_the_2xh200_slowed_rank_is_named_with_its_victim_and_what_the_verdict_rests_on():
    """The 2×H200 figures (rank 1's forward delayed by the test switch): rank 1's forward 68.5 ms, rank 0's
    backward 62 ms waiting in all-reduce, both steps 80 ms, so no step score can tell them apart; every step says
    it, and the delay is the cause."""
    section = ranks_section([record(0, 14.0, 62.0, 4.0), record(1, 68.5, 8.0, 3.5) | {"test_delay_ms": 50.0}])
    assert [row["flagged"] for row in section["rows"]] == [False, False]
    assert "steps" not in section["rows"][0]
    [said] = section["findings"]
    assert said.startswith("rank 1 is the straggler: the test delay of 50 ms in its forward (SYSPROF_TEST_SLOW_RANK)")
    assert "its forward ×4.89, optimizer -12% against the other ranks'; rank 0 waits ~54.0 ms of each step" in said
    assert said.endswith("(slower in 10 of 10 steps by 54.0 ms (68% of the 80.0 ms step), sign test p 0.001)")


def test_a_lasting_gap_without_a_cause_is_said_but_names_no_straggler():
    """A plain launch on the 2×H100 host: rank 1 slower in 18 of 20 steps by 17% of the step with nothing on its
    GPU, no CPU wait, equal clocks; the next launch moved the gap. Said as what it is, not as a straggler."""
    [said] = ranks_section([record(0, 14.0, 39.0, 1.4), record(1, 22.8, 36.3, 2.4)])["findings"]
    assert said.startswith("rank 1 ran slower in this launch (slower in 10 of 10 steps by 9.8 ms")
    assert "the node shows no cause" in said and "no straggler is named" in said and " is the straggler" not in said


def test_noise_that_moves_ranks_both_ways_names_no_one():
    rows = [with_noise(record(0, 10.0, 20.0), 2.0, seed=1), with_noise(record(1, 10.5, 20.0), 2.0, seed=2)]
    section = ranks_section(rows)
    assert section["findings"] == []
    assert all(not t["straggler"] for t in section["stragglers"])


def test_a_small_lasting_excess_is_below_the_minimum_effect():
    """Slower in every step, but by 1% of the step: proven, not worth a finding."""
    section = ranks_section([record(0, 10.0, 20.0), record(1, 10.3, 19.7)])
    [_, test] = section["stragglers"]
    assert test["slower_steps"] == 10 and test["p_value"] < 0.01 and test["share"] < MIN_SHARE
    assert section["findings"] == []


def test_a_rank_slower_in_only_some_steps_is_not_named():
    """Rank 1 far slower in 7 of 10 steps (a bad stretch): the sign test's p 0.17 proves nothing."""
    slow, fast = record(1, 30.0, 8.0), record(1, 9.0, 29.0)
    rank_one = {**slow, "steps": slow["steps"][:7] + fast["steps"][7:]}
    section = ranks_section([record(0, 10.0, 28.0), rank_one])
    assert section["stragglers"][1]["slower_steps"] == 7 and section["findings"] == []


def test_too_few_steps_say_so_instead_of_a_verdict():
    section = ranks_section([record(0, 14.0, 62.0, steps=3), record(1, 68.5, 8.0, steps=3)])
    assert section["findings"] == ["straggler test not run: 3 step(s) measured on every rank; it needs 5 (--steps)"]


def test_the_cause_the_node_gives_is_named():
    rows = [record(0, 14.0, 62.0, cpu_wait=0.2), record(1, 68.5, 8.0, cpu_wait=20.0) | {"test_delay_ms": None}]
    section = ranks_section(rows)
    readings = {0: {"sm_clock_mhz": 1980.0, "power_w": 350.0, "other_processes": [], "throttle_reasons": {}},
                1: {"sm_clock_mhz": 1755.0, "power_w": 690.0, "throttle_reasons": {"power cap": 12},
                    "other_processes": [{"pid": 4242, "name": "python3", "used_bytes": 2**30, "gpu": 1}]}}
    [said] = with_findings(with_gpu_readings(section, readings, None))["findings"]
    assert said.startswith("rank 1 is the straggler: another process (pid 4242 (python3, 1.0 GiB)) shares GPU 1; "
                           "its main thread waited 20.0 ms per step for a CPU against 0.2 ms on the other ranks "
                           "(host load); its SM clock 1755 MHz against 1980 MHz on the other ranks (power cap); "
                           "its forward ×4.89")


def test_nsys_exposed_communication_is_the_wait_stated():
    section = ranks_section([record(0, 14.0, 62.0), record(1, 68.5, 8.0) | {"test_delay_ms": 50.0}])
    profiled = [{"rank": 0, "exposed_comm_ms": 52.5}, {"rank": 1, "exposed_comm_ms": 3.1}]
    [said] = with_findings(with_communication(section, profiled))["findings"]
    assert "; nsys: exposed communication 52.5 ms on rank 0 against 3.1 ms on rank 1 (slower in 10" in said


def test_a_missing_rank_is_named_and_the_others_still_tested():
    records = [record(0, 14.0, 62.0), record(2, 68.5, 8.0, cpu_wait=30.0), record(3, 14.0, 62.0)]
    section = ranks_section(records, ["rank 1 measured no step before the run stopped: the per-step test covers "
                                      "rank(s) 0, 2, 3"])
    assert section["findings"][0].startswith("rank 1 measured no step")
    assert section["findings"][1].startswith("rank 2 is the straggler")


@pytest.mark.parametrize("changes, field, text", [
    ({"nproc": 0}, "nproc", "nproc must be 1 to 64 ranks; got 0"),
    ({"nproc": 2, "parallel": "zero3"}, "parallel", "parallel must be one of ddp, fsdp; got 'zero3'"),
    ({"nproc": 2, "device": "mps"}, "nproc", "MPS has no process-group backend"),
])
def test_bad_rank_settings_are_one_line(changes, field, text):
    assert text in config_problems(RunConfig(**changes))[field]


@pytest.mark.slow
def test_two_ranks_on_cpu_are_timed_gathered_and_tabled(cli_env):
    human = sysprof(["run", *TWO_RANKS, "--steps", "3"], cli_env)  # its tables, then its directory's summary
    assert human.returncode == 0, human.stderr
    [run_dir] = Path(cli_env["SYSPROF_RUNS"]).iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run_dir.name.endswith("-ddp2") and summary["ranks"]["world"] == 2
    rows = summary["ranks"]["rows"]
    assert [row["rank"] for row in rows] == [0, 1] and all(row["status"] == "ok" for row in rows)
    assert all(row["median_ms"]["backward"] > 0 for row in rows)
    rank_one = [json.loads(line) for line in (run_dir / "ranks" / "01" / "steps.jsonl").read_text().splitlines()]
    assert sum(step["kind"] == "measured" for step in rank_one) == 3
    assert summary["ranks"]["tokens_per_s_all_ranks"] == pytest.approx(sum(row["tokens_per_s"] for row in rows))
    words = " ".join(human.stdout.split())  # a title may wrap at 80 columns
    assert "2 ranks · ddp · batch 2 per rank" in words and "rank 0 of 2" in words


@pytest.mark.slow
def test_a_slowed_rank_is_named_the_straggler_and_its_peer_the_victim(cli_env):
    env = {**cli_env, "SYSPROF_TEST_SLOW_RANK": "1:300"}  # 300 ms of sleep in rank 1's forward
    # Two warmup steps: DDP's second iteration broadcasts its rebuilt buckets in the forward, where rank 0 would
    # wait out rank 1's delay (a measured first step whose wait is in the wrong phase; seen with --warmup 1).
    result = sysprof(["run", *TWO_RANKS, "--warmup", "2", "--steps", "6", "--json"], env)
    assert result.returncode == 0, result.stderr
    ranks = json.loads(result.stdout)["ranks"]
    [said] = [f for f in ranks["findings"] if "straggler" in f]
    assert said.startswith("rank 1 is the straggler: ") and "rank 0 waits ~" in said
    assert "the test delay of 300 ms" in said and "slower in 6 of 6 steps" in said
    assert [t["straggler"] for t in ranks["stragglers"]] == [False, True]


@pytest.mark.slow
def test_a_failing_rank_fails_the_run_with_its_name_and_stops_the_other(cli_env):
    result = sysprof(["run", *TWO_RANKS, "--steps", "2", "--model-factory", f"{FAILS_ON_RANK_1}:FailsOnRankOne",
                      "--json"], cli_env, timeout=120)
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed"
    assert summary["error"]["message"] == "rank 1: ValueError: rank one's batch is cursed"
    run_dir = Path(summary["run_dir"])
    assert "rank one's batch is cursed" in (run_dir / "stderr.log").read_text()  # the traceback is kept


@pytest.mark.slow
def test_a_run_whose_rank_failed_late_still_names_the_straggler_in_the_steps_all_ranks_measured(cli_env):
    env = {**cli_env, "SYSPROF_TEST_SLOW_RANK": "1:200"}
    args = [*TWO_RANKS[:-1], "3", "--warmup", "2", "--steps", "10", "--json",
            "--model-factory", f"{FAILS_LATE_ON_RANK_2}:FailsLateOnRankTwo"]
    result = sysprof(["run", *args], env, timeout=180)
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed" and summary["error"]["message"] == "rank 2: ValueError: rank two gave up"
    [rank_one] = [t for t in summary["ranks"]["stragglers"] if t["rank"] == 1]
    assert rank_one["straggler"] and rank_one["steps"] >= 5
    assert summary["ranks"]["findings"][0].startswith("rank 1 is the straggler: the test delay of 200 ms")
    printed = io.StringIO()
    print_run(Console(file=printed, width=80), summary, False)  # the CLI's report of such a run
    assert "3 ranks · ddp · batch 2 per rank" in printed.getvalue()


def test_a_rank_without_a_summary_was_killed(tmp_path):
    (tmp_path / "ranks" / "01").mkdir(parents=True)
    rank_zero = {"status": "failed", "error": {"kind": "cancelled", "message": "stopped by SIGTERM"}}
    merged = with_rank_failure(rank_zero, tmp_path, 2)
    assert merged["status"] == "failed" and merged["error"]["kind"] == "killed"
    assert merged["error"]["message"].startswith("rank 1: exited without a summary")
    assert with_rank_failure({"status": "ok"}, tmp_path, 2) == {"status": "ok"}
    (tmp_path / "ranks" / "01" / "summary.json").write_text('{"status": "ok"}')
    lost = with_rank_failure(rank_zero, tmp_path, 3)  # this node's third rank never wrote its directory
    assert lost["error"] == {"kind": "killed", "message": "1 of this node's ranks exited before writing anything"}


def test_more_ranks_than_gpus_is_one_line_before_anything_starts(cli_env, monkeypatch):
    import sysprof.profiler_core.session.rank_checks as ranks

    monkeypatch.setattr(ranks, "visible_gpu_count", lambda: 1)
    assert ranks.gpus_problem(RunConfig(nproc=2)) == ("--nproc 2 needs one GPU per rank; 1 visible here "
                                                      "(CUDA_VISIBLE_DEVICES, nvidia-smi)")
    assert ranks.gpus_problem(RunConfig(nproc=2, device="cpu")) is None  # CPU ranks: gloo, any number
    monkeypatch.setattr(ranks, "visible_gpu_count", lambda: 0)
    assert ranks.gpus_problem(RunConfig(nproc=2)) is None  # a node without GPUs: auto means CPU ranks
    assert "0 visible here" in ranks.gpus_problem(RunConfig(nproc=2, device="cuda"))
    for command in (["run"], ["sweep", "--steps", "1"]):
        result = sysprof([*command, "--model", "tiny", "--device", "cuda", "--nproc", "2"],
                         {**cli_env, "CUDA_VISIBLE_DEVICES": ""}, timeout=60)
        assert (result.returncode == 2
                and result.stderr.strip().endswith("0 visible here (CUDA_VISIBLE_DEVICES, nvidia-smi)"))
        assert "Traceback" not in result.stderr and not (Path(cli_env["SYSPROF_RUNS"])).exists()


@pytest.mark.slow
def test_nproc_is_a_sweep_axis(cli_env):
    result = sysprof(["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "0",
                      "--steps", "2", "--nproc", "1,2", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [cell["config"]["nproc"] for cell in cells] == [1, 2] and all(c["status"] == "ok" for c in cells)
    assert (Path(cells[1]["run_dir"]) / "ranks" / "01" / "steps.jsonl").is_file()


def outputs_or_why_not(processes: list[subprocess.Popen], timeout: float) -> list[str]:
    """Each process's stdout; one that runs past the timeout fails the test with what every process said on
    stderr (it hung once in about six full runs, in the rendezvous or after it, saying nothing), and no process
    of theirs is left running."""
    try:
        return [process.communicate(timeout=timeout)[0] for process in processes]
    except subprocess.TimeoutExpired:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        said = [process.communicate()[1][-1500:] for process in processes]
        pytest.fail(f"past {timeout:.0f} s; their stderr: " + " ||| ".join(said))


@pytest.mark.slow
def test_two_nodes_meet_at_one_rendezvous_and_rank_0_tables_both(cli_env, tmp_path):
    """Two torchrun agents on this host with --nnodes 2 (c10d rendezvous on localhost), as two nodes would."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nodes = [subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", *TWO_RANKS[:-2], "--steps", "2",
                               "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}", "--runs-dir",
                               str(tmp_path / f"node{n}"), "--json"], env=cli_env, cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
             for n in range(2)]
    summaries = [json.loads(out) for out in outputs_or_why_not(nodes, timeout=240)]
    assert [s["status"] for s in summaries] == ["ok", "ok"]
    tabled = [s for s in summaries if s.get("ranks")]
    assert len(tabled) == 1 and [row["rank"] for row in tabled[0]["ranks"]["rows"]] == [0, 1]
    assert sorted(s["rank"]["rank"] for s in summaries) == [0, 1] and all(s["rank"]["world"] == 2 for s in summaries)
    assert all("x2nodes" in Path(s["run_dir"]).name for s in summaries)


@pytest.mark.parametrize("changes, text", [
    ({"nnodes": 2}, "--nnodes 2 needs --rdzv-endpoint HOST:PORT, the same on every node"),
    ({"nnodes": 2, "rdzv_endpoint": "nohost"}, "--rdzv-endpoint takes HOST:PORT; got 'nohost'"),
    ({"nnodes": 0}, "nnodes must be a positive integer; got 0"),
])
def test_bad_node_settings_are_one_line(changes, text):
    assert config_problems(RunConfig(**changes))["nnodes"] == text


def test_each_ranks_gpu_is_read_and_its_children_are_ours(monkeypatch):
    from sysprof.profiler_core.analysis.rank_readings import with_gpu_readings
    from sysprof.profiler_core.base.nvml import visible_gpu_index
    from sysprof.profiler_core.render.run_report import gpu_readings_line
    from sysprof.profiler_core.session.watch import descends_from

    rows = rank_table([record(0, 10.0, 20.0), record(1, 10.0, 20.0)])
    ranks = with_gpu_readings({"rows": rows}, {0: {"sm_clock_mhz": 1980.0, "power_w": 512.4},
                                               1: {"sm_clock_mhz": 1755.0, "power_w": None}}, {"rank": 0})
    assert gpu_readings_line(ranks["rows"]) == "SM clock, power: rank 0 1980 MHz 512 W · rank 1 1755 MHz N/A W"
    assert gpu_readings_line(rows) is None  # no NVML readings (a CPU run): no line
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert [visible_gpu_index(0), visible_gpu_index(1)] == [3, 5]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert visible_gpu_index(1) == 1
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"]) as child:
        try:
            assert descends_from(child.pid, {os.getpid()})  # a rank started under the launcher is not "another"
            assert not descends_from(os.getpid(), {child.pid})
        finally:
            child.kill()


@pytest.mark.slow
def test_two_jobs_at_once_on_one_node_each_take_their_own_port(cli_env, tmp_path):
    """The standalone rendezvous takes a free port itself, so a second job on the node (a port the first one holds)
    is never refused for it. A common fixed port (29500) held by another program is where a fixed --master-port
    would have failed."""
    import socket

    with socket.socket() as held:
        try:
            held.bind(("127.0.0.1", 29500))
            held.listen()
        except OSError:
            pass  # another program holds it already: the same situation
        command = [sys.executable, "-m", "sysprof.profiler_core", "run", *TWO_RANKS, "--steps", "3", "--json"]
        jobs = [subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 cwd=ROOT) for _ in range(2)]
        outputs = [job.communicate(timeout=240) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    run_dirs = {json.loads(stdout)["run_dir"] for stdout, _ in outputs}
    assert len(run_dirs) == 2
