"""sysprof.trace in a real training loop (tests/data/trace/train.py: a real DataLoader, AdamW, its own process):
the run directory every other command reads, the findings about the loop, and a loop that raises or misuses the
tracker ending with its run kept and one-line reasons. CPU only: the host's clock times the phases."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes: `pytest -m "not slow"` leaves them out

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "tests" / "data" / "trace" / "train.py"


def train(runs: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, Path | None]:
    done = subprocess.run([sys.executable, str(TRAIN), str(runs), *args], capture_output=True, text=True,
                          timeout=300, env=env)
    made = sorted(runs.glob("*-trace-*")) if runs.is_dir() else []
    return done, made[-1] if made else None


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def loops(tmp_path_factory) -> dict[str, Path]:
    """One loop whose DataLoader loads in the main process (each item waits 2 ms), the same with 4 workers
    prefetching, and the latter with an evaluation pass every 10 steps."""
    runs = tmp_path_factory.mktemp("runs")
    found = {}
    for name, args in {"workers=0": ("0", "2"), "workers=4": ("4", "2"),
                       "evaluation": ("4", "0.5", "--eval-every", "10", "--steps", "60")}.items():
        done, run_dir = train(runs / name, *args)
        assert done.returncode == 0 and run_dir is not None, done.stderr[-2000:]
        found[name] = run_dir
    return found


def test_the_run_directory_has_the_format_every_command_reads(loops):
    run_dir = loops["workers=0"]
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [s["kind"] for s in steps] == ["warmup"] * 3 + ["measured"] * 37
    assert all(list(s["phases_ms"]) == ["data", "forward", "backward", "optimizer"] for s in steps)
    assert all(s["loss"] is not None and s["tokens"] == 16 and s["clock"] == "host" for s in steps)
    done = summary(run_dir)
    assert done["status"] == "ok" and done["state"] == "ok" and list(done["phases"]) == [
        "data", "forward", "backward", "optimizer", "step"]
    assert done["phases"]["step"]["n"] == 37 and done["tokens_per_s"] > 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["source"] == "trace" and manifest["argv"][0].endswith("train.py")
    assert not (run_dir / "live.json").exists()  # the loop ended: no longer marked running
    events = [json.loads(line)["event"] for line in (run_dir / "session_events.jsonl").read_text().splitlines()]
    assert events[0] == "hello" and events.count("step") == 37 and events[-1] == "finished"


def data_ms(found: dict) -> float:
    return found["phases"]["data"]["median_ms"]


def test_loading_in_the_main_process_is_input_bound_and_four_workers_wait_far_less(loops):
    """Each item sleeps 2 ms (a decode that waits, not a core), 32 ms a batch: the main process waits for all of it,
    far more than its step computes, whatever else uses the host's cores; four workers sleep side by side ahead of
    the loop and leave it a fraction of that wait. Whether none is left depends on what else runs on the cores, so
    that is the GPU test's claim."""
    slow, fast = summary(loops["workers=0"]), summary(loops["workers=4"])
    finding = next(f for f in slow["findings"] if f["kind"] == "input-bound")
    assert "of each step for the next batch" in finding["text"]
    assert "'data' phase timed with the host's clock" in finding["rests_on"]
    assert data_ms(slow) > 32 and data_ms(fast) < 0.5 * data_ms(slow), (data_ms(fast), data_ms(slow))


def test_an_evaluation_every_10_steps_is_named_a_periodic_spike_outside_the_phases(loops):
    found = {f["kind"]: f for f in summary(loops["evaluation"])["findings"]}
    assert "every 10 steps" in found["periodic spikes"]["text"]
    assert "outside the phases" in found["periodic spikes"]["text"]


def test_report_export_and_compare_read_a_traced_run(loops, tmp_path):
    a, b = loops["workers=0"], loops["workers=4"]
    cli = [sys.executable, "-m", "sysprof.profiler_core"]
    report = subprocess.run([*cli, "report", str(a), "-o", str(tmp_path / "r.md")], capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "r.md").read_text()
    assert "your own loop, traced" in text and "finding: input-bound" in text
    exported = subprocess.run([*cli, "export", str(a), "--format", "json"], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    compared = subprocess.run([*cli, "compare", str(a), str(b), "--force"], capture_output=True, text=True,
                              timeout=300)
    assert compared.returncode == 0, compared.stderr
    assert [line.split()[0] for line in compared.stdout.splitlines() if line.split()[:1] in (["data"], ["step"])] \
        == ["data", "step"]


def test_a_loop_that_raises_keeps_its_steps_and_the_error_and_fails_as_it_would(tmp_path):
    done, run_dir = train(tmp_path, "0", "0.2", "--raise-at", "12")
    assert done.returncode == 1 and "RuntimeError: the loss went wrong at step 12" in done.stderr
    assert run_dir is not None
    ended = summary(run_dir)
    assert ended["status"] == "failed" and ended["error"]["message"].startswith("RuntimeError: the loss went wrong")
    assert "trace-error.log" in ended["error"]["message"]
    assert "raise RuntimeError" in (run_dir / "trace-error.log").read_text()
    assert len((run_dir / "steps.jsonl").read_text().splitlines()) == 12  # the raising step is not a step


def test_misuse_is_one_line_each_and_the_job_goes_on(tmp_path):
    done, run_dir = train(tmp_path, "0", "0.1", "--misuse", "--steps", "12")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("sysprof trace:")]
    assert len(said) == 3 and sum("already started" in line for line in said) == 1
    assert sum("'data' outside a step" in line for line in said) == 1 and sum("'inner'" in line for line in said) == 1
    assert "Traceback" not in done.stderr and summary(run_dir)["status"] == "ok"
    assert len(list(tmp_path.glob("*-trace-*"))) == 1


def test_sysprof_trace_0_turns_the_tracker_off(tmp_path):
    import os

    done, run_dir = train(tmp_path, "0", "0.1", "--steps", "3", env=dict(os.environ, SYSPROF_TRACE="0"))
    assert done.returncode == 0 and run_dir is None and done.stdout.strip() == "None"
