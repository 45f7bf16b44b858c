"""`sysprof analyze` on every kind of input, from real fixtures; and the session process on CPU."""
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "traces" / "torch_trace_small_bf16.json.xz"


def sysprof(args, env):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def fixture_sqlite(tmp_path_factory, shared_fixtures):
    path = tmp_path_factory.mktemp("nsys") / "report.sqlite"
    path.write_bytes(lzma.decompress((shared_fixtures / "h200_small_fp32" / "report.sqlite.xz").read_bytes()))
    return path


def test_analyze_sqlite_json_contract(cli_env, fixture_sqlite):
    result = sysprof(["analyze", str(fixture_sqlite), "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    assert set(analysis) >= {"source", "kernels", "phases", "gemm_fraction"}
    assert analysis["phases"]["backward"]["kernels"] == 5570
    assert [analysis["phases"][p]["launch"]["verdict"] for p in ("forward", "backward", "optimizer")] == \
        ["launch-bound", "GPU-bound", "GPU-bound"]
    assert all(analysis["phases"][p]["busy_pct"] <= 100 for p in ("forward", "backward", "optimizer"))
    assert set(analysis["kernels"][0]) >= {"name", "class", "instances", "total_ns", "avg_ns", "med_ns", "min_ns",
                                          "max_ns", "std_ns"}


def test_analyze_human_tables(cli_env, fixture_sqlite):
    result = sysprof(["analyze", str(fixture_sqlite)], cli_env)
    assert result.returncode == 0 and "GPU kernels by phase" in result.stdout and "backward" in result.stdout
    assert "Launch-bound or GPU-bound" in result.stdout
    assert "forward: launch-bound — host-wait 48% of the GPU span ≥ 30%" in result.stdout
    assert "remedy: bf16 will not help; try CUDA graphs" in result.stdout
    # recorded without --nvtx-modules: one line instead of the module-type table
    assert "by module type: no module ranges: run with --nvtx-modules N" in result.stdout
    # the fixture predates the scale-and-mask range: its scores sub-range says what it holds
    assert "Attention sub-ranges (forward; 60 attention calls)" in result.stdout
    assert "computing softmax" in result.stdout and "(with" in result.stdout


def test_analyze_stats_dir_gives_backward_the_autograd_threads_kernels(cli_env, shared_fixtures):
    result = sysprof(["analyze", str(shared_fixtures / "h200_small_fp32"), "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    assert analysis["source_kind"] == "nsys-stats-csv"
    assert analysis["phases"]["backward"]["gpu_ns"] == 84103290  # the sqlite analysis's, to the nanosecond
    assert any(note.startswith("backward includes") and "assumed" in note for note in analysis["notes"])


def test_analyze_memory_snapshot(cli_env, shared_fixtures):
    result = sysprof(["analyze", str(shared_fixtures / "h200_small_fp32" / "memory_snapshot.pickle.xz"), "--json"],
                     cli_env)
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    assert sum(analysis["by_category"].values()) == analysis["peak_allocated_bytes"]
    sizes = [a["size_bytes"] for a in analysis["top_allocations"]]
    assert sizes == sorted(sizes, reverse=True)


def test_analyze_torch_trace(cli_env, tmp_path):
    trace = tmp_path / "torch_trace.json"
    trace.write_bytes(lzma.decompress(TRACE.read_bytes()))
    result = sysprof(["analyze", str(trace), "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["phases"]["backward"]["kernels"] > 0


@pytest.mark.parametrize("name, content, reason", [
    ("missing.sqlite", None, "no such file or directory"),
    ("broken.sqlite", b"not a database at all", "sqlite"),
    ("notes.txt", b"hello", "expected a run directory"),
    ("snap.pickle", b"\x80\x04garbage", "not a readable pickle"),
])
def test_analyze_bad_input_is_one_line_exit_2(cli_env, tmp_path, name, content, reason):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    result = sysprof(["analyze", str(path)], cli_env)
    assert result.returncode == 2
    assert reason in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow
def test_analyze_run_dir_without_analyses_says_how(cli_env, tmp_path):
    run = sysprof(["run", "--model", "tiny", "--device", "cpu", "--ctx", "16", "--warmup", "0", "--steps", "1",
                   "--json"], cli_env)
    run_dir = json.loads(run.stdout)["run_dir"]
    result = sysprof(["analyze", run_dir], cli_env)
    assert result.returncode == 2 and "--profiler nsys|torch or --memory" in result.stderr


@pytest.mark.slow
def test_session_process_streams_events_and_ends_with_finished(cli_env, tmp_path):
    config = {"model": "tiny", "ctx": 16, "batch": 2, "warmup": 1, "steps": 2, "device": "cpu"}
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core.session", "--run-dir", str(tmp_path),
                             "--config-json", json.dumps(config)], env=cli_env, capture_output=True, text=True,
                            timeout=300)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0 and events[0]["event"] == "hello" and events[-1]["event"] == "finished"
    assert [e["event"] for e in events].count("step") == 2
    assert json.loads((tmp_path / "summary.json").read_text()) == events[-1]["summary"]


def test_session_rejects_missing_nsys_before_running(cli_env, tmp_path):
    env = dict(cli_env, SYSPROF_NSYS="", PATH="/usr/bin:/bin")
    config = {"model": "tiny", "profiler": "nsys"}
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core.session", "--run-dir", str(tmp_path),
                             "--config-json", json.dumps(config), "--nsys", str(tmp_path / "no-nsys")],
                            env=env, capture_output=True, text=True, timeout=60)
    event = json.loads(result.stdout.splitlines()[-1])
    assert result.returncode == 2 and event["kind"] == "config" and "nsys" in event["message"]


def session_at_first_step(cli_env, tmp_path):
    """A long tiny CPU session in its own process group, returned once its first measured step is out."""
    config = {"model": "tiny", "ctx": 16, "batch": 2, "warmup": 0, "steps": 100000, "device": "cpu"}
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core.session", "--run-dir", str(tmp_path),
                                "--config-json", json.dumps(config)], env=cli_env, stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    for line in process.stdout:
        if '"event":"step"' in line.replace(" ", ""):
            return process
    raise AssertionError("the session ended before its first step")


@pytest.mark.slow
def test_sigterm_to_the_session_alone_stops_its_runner(cli_env, tmp_path):
    process = session_at_first_step(cli_env, tmp_path)
    process.send_signal(signal.SIGTERM)  # only the session: it must pass the stop on to its runner
    last = [json.loads(line) for line in process.stdout if line.startswith("{")][-1]
    assert process.wait(timeout=30) == 1 and last["kind"] == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)


@pytest.mark.slow
def test_compare_refuses_unfinished_runs(cli_env, tmp_path):
    good = json.loads(sysprof(["run", "--model", "tiny", "--device", "cpu", "--ctx", "16", "--warmup", "0",
                               "--steps", "2", "--json"], cli_env).stdout)["run_dir"]
    result = sysprof(["compare", good, good, "--json"], cli_env)
    assert result.returncode == 2 and "is both A and B" in result.stderr  # a run against itself tells nothing
    twin = shutil.copytree(good, tmp_path / "twin")
    result = sysprof(["compare", good, str(twin), "--json"], cli_env)
    assert result.returncode == 0
    assert {row["verdict"] for row in json.loads(result.stdout)["phases"]} == {"within noise"}
    bad = tmp_path / "not-a-run"
    bad.mkdir()
    result = sysprof(["compare", good, str(bad)], cli_env)
    assert result.returncode == 2 and "not a run directory" in result.stderr


@pytest.mark.slow
def test_session_interrupted_by_group_sigint_keeps_steps_and_leaves_no_process(cli_env, tmp_path):
    process = session_at_first_step(cli_env, tmp_path)
    os.killpg(process.pid, signal.SIGINT)  # what the app's cancel key does
    last = [json.loads(line) for line in process.stdout if line.startswith("{")][-1]
    assert process.wait(timeout=30) == 1
    assert last["event"] == "failed" and last["kind"] == "cancelled"
    assert last["summary"]["phases"]["step"]["n"] >= 1
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # the whole group is gone: no orphaned runner
