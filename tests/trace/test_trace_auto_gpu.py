"""`sysprof trace -- python plain_train.py` on a GPU: the hooks time the unchanged loop with CUDA events, a
main-process DataLoader is named input-bound and four workers are not, and a torch.compile'd model has its forward
found with no graph break added."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.usefixtures("needs_cuda")]

PLAIN = Path(__file__).resolve().parents[2] / "tests" / "data" / "trace" / "plain_train.py"
GPU_STEP = ["--device", "cuda", "--width", "4096", "--repeat", "64", "--steps", "60"]




def traced(runs: Path, *args: str) -> tuple[str, dict, list[dict]]:
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(runs), "--",
                           sys.executable, str(PLAIN), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    [run_dir] = runs.glob("*-trace-*")
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    return done.stdout, json.loads((run_dir / "summary.json").read_text()), steps


def test_the_hooks_time_an_unchanged_loop_with_cuda_events_and_name_its_input_wait(tmp_path):
    _, main_process, steps = traced(tmp_path / "w0", "0", "0.5", *GPU_STEP)
    _, workers, _ = traced(tmp_path / "w4", "4", "0.5", *GPU_STEP)
    assert all(s["clock"] == "cuda" for s in steps) and len(steps) == 60
    assert main_process["findings"][0]["text"] == "found without code changes: data, forward, backward, optimizer"
    assert "input-bound" in [f["kind"] for f in main_process["findings"]], main_process["phases"]
    assert "input-bound" not in [f["kind"] for f in workers["findings"]], workers["phases"]


def test_a_compiled_model_is_found_and_gets_no_graph_break(tmp_path):
    out, summary, steps = traced(tmp_path, "4", "0", *GPU_STEP[:-2], "--steps", "30", "--compile")
    assert "graph breaks 0" in out and summary["status"] == "ok"
    assert summary["findings"][0]["text"].startswith("found without code changes: data, forward, backward, optim")
    assert all(s["phases_ms"]["forward"] > 0 for s in steps)
