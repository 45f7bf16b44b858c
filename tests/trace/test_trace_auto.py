"""`sysprof trace -- python train.py`: a training script with no line of sysprof in it (tests/data/trace/
plain_train.py: a real DataLoader, AdamW, gradient accumulation, an evaluation every N steps) has its steps found by
hooks, in the run directory every command reads; a script that raises keeps what it finished; one with no optimizer
step says what to add. CPU only: the host's clock times the phases."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from sysprof.profiler_core.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "tests" / "data" / "trace" / "plain_train.py"


def traced(runs: Path, *script_args: str, options: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess,
                                                                                dict | None, list[dict]]:
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(runs),
                           "--warmup", "2", *options, "--", sys.executable, str(PLAIN), *script_args],
                          capture_output=True, text=True, timeout=300)
    made = sorted(runs.glob("*-trace-*")) if runs.is_dir() else []
    if not made:
        return done, None, []
    summary = json.loads((made[-1] / "summary.json").read_text())
    lines = (made[-1] / "steps.jsonl").read_text().splitlines() if (made[-1] / "steps.jsonl").is_file() else []
    steps = [json.loads(line) for line in lines]
    return done, summary, steps


@pytest.mark.slow
def test_a_plain_loop_has_its_phases_found_its_input_wait_and_its_evaluations_named(tmp_path):
    # six evaluations, so that one hidden by a busy host's noise still leaves a period
    done, summary, steps = traced(tmp_path, "0", "0.5", "--steps", "30", "--eval-every", "5", "--accumulate", "2",
                                  options=("--memory-steps", "3-4"))
    assert done.returncode == 0 and "trained 30 steps" in done.stdout, done.stderr
    assert summary is not None and summary["status"] == "ok"
    assert list(summary["phases"])[:4] == ["data", "forward", "backward", "optimizer"]
    assert summary["phases"]["step"]["n"] == 28  # 30 optimizer steps, 2 of them warm-up
    kinds = [finding["kind"] for finding in summary["findings"]]
    assert kinds[:3] == ["steps found", "memory steps", "input-bound"] and "periodic spikes" in kinds
    assert summary["findings"][0]["text"] == "found without code changes: data, forward, backward, optimizer, eval"
    spikes = next(f for f in summary["findings"] if f["kind"] == "periodic spikes")
    assert "every 5 steps" in spikes["text"] and "eval phase" in spikes["text"]
    accumulated = [s for s in steps if "eval" not in s["phases_ms"]]
    assert all(s["phases_ms"]["backward"] > 0 for s in accumulated)  # two backwards a step, summed
    # `sysprof trace` kept the run live through its analysis and ended it with the completed summary
    assert "memory analysis unavailable: steps 3-4 not memory-recorded: the loop ran on the CPU" in done.stderr
    ending = last_events(tmp_path)
    assert ending[0] == {"event": "stage", "name": "analysing"} and ending[1]["event"] == "finished"
    assert ending[1]["summary"]["warnings"] == summary["warnings"] and "memory" in ending[1]["summary"]
    assert not list(tmp_path.glob("*/live.json"))


def last_events(runs: Path) -> list[dict]:
    """The events after the last step: what `sysprof trace` wrote once the job had ended."""
    [run_dir] = runs.glob("*-trace-*")
    written = [json.loads(line) for line in (run_dir / "session_events.jsonl").read_text().splitlines()]
    last_step = max(i for i, event in enumerate(written) if event["event"] in ("step", "warmup_step"))
    return written[last_step + 1:]


@pytest.mark.slow
def test_a_script_that_raises_keeps_its_steps_and_one_without_an_optimizer_says_what_to_add(tmp_path):
    done, summary, steps = traced(tmp_path / "raises", "0", "0", "--steps", "20", "--raise-at", "6")
    assert done.returncode == 1 and "RuntimeError: the loss went wrong at step 6" in done.stderr
    assert summary is not None and summary["error"]["message"].startswith("RuntimeError: the loss went wrong")
    assert len(steps) == 7  # the steps it finished, the one that raised among them (its optimizer had stepped)
    done, summary, steps = traced(tmp_path / "inference", "0", "0", "--steps", "5", "--no-optimizer")
    said = [line for line in done.stderr.splitlines() if line.startswith("sysprof trace: no optimizer step")]
    assert done.returncode == 0 and len(said) == 1 and "with tracker.step():" in said[0]
    assert summary is not None and steps == [] and "not found: optimizer" in summary["findings"][0]["text"]


@pytest.mark.parametrize("argv, said", [
    ([], "sysprof trace needs the script to run after --"),
    (["--", "no-such-script.py"], "no such script no-such-script.py"),
    (["--", "/bin/sh", "train.sh"], "sysprof trace needs the script to run after --"),
])
def test_a_command_that_cannot_be_traced_is_one_line(argv, said):
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(["trace", *argv])
    assert code != 0 and said in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1


def test_the_launcher_goes_before_the_script_torchrun_before_it_with_nproc_and_nsys_before_each_rank(tmp_path):
    from sysprof.profiler_core.cli.trace_command import traced_command
    from sysprof.profiler_core.session.backends.nsys_backend import NsysBackend
    from sysprof.trace.job import Job, launched_argv

    def argv(command, nproc=1, backend=None):
        return launched_argv(Job(traced_command(command), tmp_path, nproc, {}, backend))

    assert argv(["--", "python3", str(PLAIN), "0"]) == ["python3", "-m", "sysprof.trace.launch", str(PLAIN), "0"]
    assert argv([str(PLAIN)], 2)[1:6] == ["-m", "torch.distributed.run", "--nproc-per-node=2", "-m",
                                         "sysprof.trace.launch"]
    assert argv(["python", "-m", "pkg.train"])[-2:] == ["-m", "pkg.train"]
    nsys = NsysBackend(Path("nsys"))
    single = argv(["python", str(PLAIN)], backend=nsys)
    assert single[:2] == ["nsys", "profile"] and "--capture-range=cudaProfilerApi" in single
    assert single[single.index("-o") + 1] == str(tmp_path / "profiled" / "profile")
    ranks = argv(["python", str(PLAIN)], 2, nsys)
    assert ranks[4:7] == ["--no-python", "nsys", "profile"] and ranks[-4:] == ["python", "-m", "sysprof.trace.launch",
                                                                              str(PLAIN)]
    assert "%q{RANK}" in ranks[ranks.index("-o") + 1]


@pytest.mark.slow
def test_a_job_killed_by_a_signal_exits_as_the_shell_says_and_its_run_keeps_the_steps_it_wrote(tmp_path):
    done, summary, steps = traced(tmp_path, "0", "0", "--steps", "30", "--kill-at", "8",
                                  options=("--memory-steps", "3-4"))
    assert done.returncode == 128 + 15 and "Traceback" not in done.stderr
    assert summary is not None and summary["state"] == "killed" and summary["error"]["kind"] == "killed"
    assert len(steps) == 9 and summary["phases"]["step"]["n"] == 7  # steps 0-8 written, 2 of them warm-up
    assert summary["memory"]["error"] == "the job ended before any was dumped"  # asked, and said why there is none
    analysing, ending = last_events(tmp_path)  # the tracker could write none: `sysprof trace` ends the run for it
    assert analysing["name"] == "analysing" and ending["event"] == "failed" and ending["kind"] == "killed"
    assert ending["summary"]["state"] == "killed"
