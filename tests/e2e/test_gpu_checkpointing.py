"""--activation-checkpointing on a GPU (skipped without CUDA): the built-in model's blocks are wrapped, the step's
peak memory falls well below the same batch's without it, the loss is the same (the same seed, the same data), and
the step is slower by about one more forward of every block, not more."""
import dataclasses

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.passes import Session

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

MEDIUM = RunConfig(model="medium", ctx=512, batch=16, warmup=3, steps=8, device="cuda", dtype="bf16")


@pytest.fixture(autouse=True)
def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def test_checkpointing_trades_a_forward_for_most_of_the_activations(tmp_path):
    plain = Session(MEDIUM, tmp_path / "plain", lambda event: None).run()
    wrapped = Session(dataclasses.replace(MEDIUM, activation_checkpointing=True), tmp_path / "wrapped",
                      lambda event: None).run()
    assert plain["status"] == "ok" and wrapped["status"] == "ok", wrapped
    manifest = rundir.read_json(tmp_path / "wrapped" / rundir.MANIFEST)
    assert manifest["activation_checkpointing"]["checkpointed_blocks"] == MEDIUM.spec().layers
    peak = {name: max(summary["peak_memory_bytes"].values()) for name, summary in
            (("plain", plain), ("wrapped", wrapped))}
    assert peak["wrapped"] < 0.6 * peak["plain"], peak
    step = {name: summary["phases"]["step"]["median_ms"] for name, summary in (("plain", plain), ("wrapped", wrapped))}
    assert step["plain"] < step["wrapped"] < 1.6 * step["plain"], step  # one more forward: about a third more
    loss_plain, loss_wrapped = (rundir.read_steps(tmp_path / name)[-1]["loss"] for name in ("plain", "wrapped"))
    assert abs(loss_wrapped - loss_plain) / loss_plain < 0.02, (loss_plain, loss_wrapped)
