"""--dtype fp8 on a GPU with FP8 tensor cores (skipped without CUDA): torchao's Float8Linear runs the built-in
model's linear layers, the manifest says how many, the loss stays that of bf16 within a few percent, and a user's
model with a Linear class of its own fails in one line. Needs torchao (`pip install 'sysprof-tui[fp8]'`)."""
import dataclasses
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.passes import Session

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

SMALL = RunConfig(model="small", ctx=256, batch=8, warmup=3, steps=10, device="cuda", dtype="bf16")
ROPE_LM = Path(__file__).resolve().parents[2] / "benchmarks" / "user_models" / "rope_lm"


@pytest.fixture(autouse=True)
def _fp8_tensor_cores():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("needs a GPU with FP8 tensor cores")


def test_the_linear_layers_run_in_fp8_and_the_loss_stays_bf16s(tmp_path):
    bf16 = Session(SMALL, tmp_path / "bf16", lambda event: None).run()
    fp8 = Session(dataclasses.replace(SMALL, dtype="fp8"), tmp_path / "fp8", lambda event: None).run()
    assert bf16["status"] == "ok" and fp8["status"] == "ok", fp8
    manifest = rundir.read_json(tmp_path / "fp8" / rundir.MANIFEST)
    assert manifest["precision"]["fp8_linear_layers"] == 12 * 7 + 1  # q, k, v, o, three of SwiGLU; the head
    assert fp8["precision_used"] == "bf16" and fp8["mfu"] > 0  # counted against the bf16 peak
    loss_bf16, loss_fp8 = (rundir.read_steps(tmp_path / name)[-1]["loss"] for name in ("bf16", "fp8"))
    assert abs(loss_fp8 - loss_bf16) / loss_bf16 < 0.05, (loss_bf16, loss_fp8)  # the same seed: the same data


def test_a_model_with_a_linear_class_of_its_own_fails_in_one_line(tmp_path):
    mine = dataclasses.replace(SMALL, dtype="fp8", model_factory=f"{ROPE_LM}/model.py:build", steps=2, warmup=1)
    summary = Session(mine, tmp_path / "mine", lambda event: None).run()
    assert summary["status"] == "failed", summary
    assert "no torch.nn.Linear layer with both dims multiples of 16" in summary["error"]["message"]
