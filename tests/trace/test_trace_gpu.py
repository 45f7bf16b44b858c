"""sysprof.trace on a GPU: CUDA events time the phases (the data phase is the GPU's wait for the batch), the loss
arrives through a pinned copy without a wait, memory peaks per phase; a DataLoader loading in the main process
makes the GPU wait and is named input-bound, four workers prefetching are not."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.usefixtures("needs_cuda")]

TRAIN = Path(__file__).resolve().parents[2] / "tests" / "data" / "trace" / "train.py"
GPU_STEP = ["--device", "cuda", "--width", "4096", "--repeat", "64", "--steps", "60"]




def traced(runs: Path, workers: int) -> dict:
    done = subprocess.run([sys.executable, str(TRAIN), str(runs), str(workers), "0.5", *GPU_STEP],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    return {"summary": json.loads((run_dir / "summary.json").read_text()), "steps": steps}


def test_cuda_events_time_the_loop_and_the_gpu_waits_for_a_main_process_loader(tmp_path):
    main_process, workers = traced(tmp_path / "w0", 0), traced(tmp_path / "w4", 4)
    for run in (main_process, workers):
        steps = [s for s in run["steps"] if s["kind"] == "measured"]
        assert all(s["clock"] == "cuda" and s["loss"] is not None for s in steps)
        sampled = [s for s in steps if s["index"] % 10 == 0]  # memory peaks are read on every 10th step
        assert sampled and all(set(s["peak_allocated_bytes"]) == {"data", "forward", "backward", "optimizer"}
                               for s in sampled)
        assert not any("peak_allocated_bytes" in s for s in steps if s["index"] % 10)
    found = [f["kind"] for f in main_process["summary"]["findings"]]
    assert "input-bound" in found, main_process["summary"]["phases"]
    assert "GPU waits" in main_process["summary"]["findings"][0]["text"]
    assert "input-bound" not in [f["kind"] for f in workers["summary"]["findings"]], workers["summary"]["phases"]
