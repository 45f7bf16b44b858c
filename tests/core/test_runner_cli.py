"""The runner and `sysprof` end to end on CPU with the tiny preset (real subprocesses, real torch)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner import engine as runner
from sysprof.profiler_core.runner import failures
from sysprof.profiler_core.session.process import RunnerProcess, mark_killed, runner_argv

TINY = ["--model", "tiny", "--ctx", "32", "--batch", "2", "--device", "cpu"]


def sysprof(args, env, timeout=120):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_run_json_contract_and_run_directory(cli_env, tmp_path):
    result = sysprof(["run", *TINY, "--warmup", "2", "--steps", "3", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # exactly one JSON document on stdout
    assert summary["status"] == "ok" and summary["state"] == "ok"
    assert set(summary["phases"]) == {"forward", "backward", "forward+backward", "optimizer", "step"}
    for stats in summary["phases"].values():
        assert stats["n"] == 3 and stats["min_ms"] <= stats["median_ms"] <= stats["max_ms"]
    assert len(summary["warmup_ms"]) == 2 and summary["tokens_per_s"] > 0 and summary["mfu"] is None
    run_dir = Path(summary["run_dir"])
    assert run_dir.parent == tmp_path / "runs"
    assert {p.name for p in run_dir.iterdir()} >= {"manifest.json", "steps.jsonl", "summary.json", "stderr.log"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["command"].startswith("sysprof run --model tiny")
    assert manifest["env"]["torch_version"] == torch.__version__
    steps = rundir.read_jsonl(run_dir / "steps.jsonl")
    assert [s["kind"] for s in steps] == ["warmup"] * 2 + ["measured"] * 3
    assert json.loads((run_dir / "summary.json").read_text()) == summary


@pytest.mark.slow
def test_forward_mode_has_no_backward_phase_and_the_human_table_has_units(cli_env):
    result = sysprof(["run", *TINY, "--mode", "forward", "--warmup", "0", "--steps", "2"], cli_env)
    assert result.returncode == 0, result.stderr
    assert "ms" in result.stdout and "forward" in result.stdout and "run directory" in result.stdout
    [run_dir] = Path(cli_env["SYSPROF_RUNS"]).iterdir()
    assert set(json.loads((run_dir / "summary.json").read_text())["phases"]) == {"forward", "step"}


@pytest.mark.parametrize("args, reason", [
    (["run", "--model", "tiny", "--heads", "5"], "heads (5) must divide d_model (128)"),
    (["run", "--ctx", "0"], "ctx must be a positive integer"),
    (["run", "--dtype", "int4"], "invalid choice: 'int4'"),
    (["run", "--device", "cpu", "--dtype", "fp8"], "--dtype fp8 needs a CUDA GPU with FP8 tensor cores"),
    (["run", "--device", "cpu", "--ddp-static-graph"], "--ddp-static-graph is a DDP setting"),
    (["run", "--steps", "ten"], "invalid int value: 'ten'"),
    (["run", "--runs-dir", "/proc/not-writable"], "cannot create a directory"),
    (["run", "--profiler", "nsys", "--nsys", "/nonexistent/nsys"], "not an executable nsys"),
    (["run", "--device", "cpu", "--memory"], "allocator history is a CUDA feature"),
])
def test_invalid_input_exits_2_with_one_line(cli_env, args, reason):
    result = sysprof(args, cli_env)
    assert result.returncode == 2
    assert reason in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
@pytest.mark.slow
def test_missing_device_is_invalid_input_and_leaves_no_run(cli_env, tmp_path):
    result = sysprof(["run", *TINY[:-2], "--device", "cuda"], cli_env)
    assert result.returncode == 2 and "no CUDA GPU is visible" in result.stderr
    assert not list((tmp_path / "runs").glob("*"))  # refused before a runs folder is made, or left empty


def test_models_json(cli_env):
    result = sysprof(["models", "--json"], cli_env)
    models = {m["name"]: m for m in json.loads(result.stdout)}
    assert models["2.7B"]["params"] == 3_406_809_600 and models["small"]["heads"] == 12
    assert set(models["xl"]) >= {"name", "params", "d_model", "d_ff", "layers", "heads", "vocab"}


@pytest.mark.slow
def test_killed_runner_keeps_finished_steps(tmp_path):
    cfg = RunConfig(model="tiny", ctx=32, batch=2, device="cpu", warmup=0, steps=100_000)
    run_dir = rundir.new_run_dir(tmp_path, cfg)
    process = RunnerProcess(runner_argv(cfg, run_dir), run_dir)
    for event in process.events():
        if event["event"] == "step" and event["index"] == 2:
            process.proc.send_signal(signal.SIGKILL)
    summary = mark_killed(run_dir, cfg, process.proc.returncode)
    assert summary["status"] == "failed" and summary["error"]["kind"] == "killed"
    assert summary["phases"]["step"]["n"] >= 3  # the steps that finished before the kill are kept


@pytest.mark.slow
def test_sigint_cancels_cleanly_with_summary(tmp_path):
    cfg = RunConfig(model="tiny", ctx=32, batch=2, device="cpu", warmup=0, steps=100_000)
    run_dir = rundir.new_run_dir(tmp_path, cfg)
    process = RunnerProcess(runner_argv(cfg, run_dir), run_dir)
    events = process.events()
    for event in events:
        if event["event"] == "step":
            break
    assert process.interrupt() == 130
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"]["kind"] == "cancelled"
    assert summary["phases"]["step"]["n"] >= 1


@pytest.mark.slow
def test_a_cli_run_stopped_with_ctrl_c_says_cancelled_with_the_steps_it_kept(cli_env, tmp_path):
    """Ctrl-C in the terminal (SIGINT to its process group): the human report's status and end line say
    cancelled, summary.json keeps the contract's status "failed" and adds the state."""
    process = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "run", *TINY, "--warmup", "1",
                                "--steps", "5000"], env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 120
    while not (runs.is_dir() and any(runs.iterdir()) and measured(next(runs.iterdir())) >= 3):
        assert time.monotonic() < deadline and process.poll() is None, "no measured steps"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    run_dir = next(runs.iterdir())
    summary = rundir.read_summary(run_dir)
    done = summary["phases"]["step"]["n"]
    assert process.returncode == 1 and "Traceback" not in err, err
    assert (summary["status"], summary["state"], summary["error"]["message"]) == ("failed", "cancelled",
                                                                                 "stopped by SIGINT")
    assert "status cancelled · tokens/s" in out
    assert f"cancelled after {done} of 5000 measured steps: stopped by SIGINT" in out
    assert "failed" not in out and "error" not in out


def measured(run_dir: Path) -> int:
    return sum(1 for step in rundir.read_steps(run_dir) if step.get("kind") == "measured")


def test_oom_in_a_phase_becomes_a_failed_event(tmp_path, monkeypatch, capsys):
    """The runner's OOM path, in process: the backward phase raises torch.OutOfMemoryError."""
    def backward_oom(self, loss):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(runner.build_workload.__globals__["Workload"], "backward", backward_oom)
    monkeypatch.setattr(runner, "ignore_stop_signals", lambda: None)  # keep pytest's own Ctrl-C working
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu", warmup=1, steps=2)
    code = runner.execute(runner.Runner(cfg, tmp_path))
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1 and events[-1]["event"] == "failed"
    assert events[-1]["kind"] == "oom" and events[-1]["phase"] == "backward"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "oom" and "Tried to allocate" in summary["error"]["message"]



@pytest.mark.parametrize("inner, status, kind", [(failures.Cancelled("SIGTERM"), "failed", "cancelled"),
                                                 (torch.OutOfMemoryError("CUDA out of memory."), "oom", "oom")])
def test_a_stop_or_oom_that_torch_compile_wrapped_is_read_as_itself(tmp_path, monkeypatch, capsys, inner, status,
                                                                    kind):
    """A SIGTERM during torch.compile reached the runner as inductor's BackendCompilerFailed and the run read as
    failed (seen on an H100 when a sweep's time bound stopped a compiling 2.7B cell)."""
    from torch._dynamo.exc import BackendCompilerFailed

    def compile_interrupted(self):
        raise BackendCompilerFailed(lambda: None, inner, None)

    monkeypatch.setattr(runner.build_workload.__globals__["Workload"], "forward", compile_interrupted)
    monkeypatch.setattr(runner, "ignore_stop_signals", lambda: None)
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu", warmup=1, steps=2)
    runner.execute(runner.Runner(cfg, tmp_path))
    event = json.loads(capsys.readouterr().out.splitlines()[-1])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (event["kind"], summary["status"], summary["error"]["kind"]) == (kind, status, kind)
    assert "BackendCompilerFailed" not in summary["error"]["message"]


def _raises_after_an_oom(wrapped: bool):
    """A model whose own fallback after an OOM raises (an error of its own), or torch.compile wrapping a plain
    error: both are the model's errors, not an OOM or a stop."""
    from torch._dynamo.exc import BackendCompilerFailed

    def forward(self):
        try:
            raise torch.OutOfMemoryError("CUDA out of memory.")
        except torch.OutOfMemoryError:
            error = ValueError("the model's fallback failed")
            raise (BackendCompilerFailed(lambda: None, error, None) if wrapped else error)  # noqa: B904
    return forward


@pytest.mark.parametrize("wrapped", [False, True])
def test_an_error_raised_while_handling_an_oom_stays_an_error(tmp_path, monkeypatch, wrapped):
    monkeypatch.setattr(runner.build_workload.__globals__["Workload"], "forward", _raises_after_an_oom(wrapped))
    monkeypatch.setattr(runner, "ignore_stop_signals", lambda: None)
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu", warmup=1, steps=2)
    assert runner.execute(runner.Runner(cfg, tmp_path)) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["status"], summary["error"]["kind"]) == ("failed", "error")
    assert "the model's fallback failed" in summary["error"]["message"]


def test_a_failed_run_whose_launcher_is_gone_still_writes_its_summary(tmp_path, monkeypatch):
    """The launcher was stopped first (a time bound killed the sweep): the failure is written, not a traceback."""
    def forward_raises(self):
        raise ValueError("the model's own error")

    def nobody_reads_the_failure(event, **fields):
        if event == failures.events.FAILED:
            raise failures.ReaderGone("nobody reads the events")

    monkeypatch.setattr(runner.build_workload.__globals__["Workload"], "forward", forward_raises)
    monkeypatch.setattr(failures, "emit", nobody_reads_the_failure)
    monkeypatch.setattr(runner, "ignore_stop_signals", lambda: None)
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu", warmup=1, steps=2)
    assert runner.execute(runner.Runner(cfg, tmp_path)) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "failed" and "the model's own error" in summary["error"]["message"]
