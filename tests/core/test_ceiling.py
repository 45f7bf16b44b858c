"""The matmul ceiling: the step's matmuls found on the meta device (their FLOPs are the model's, exactly, for the
built-in model), timed alone for real on this machine, and the advise study's table of them beside the step."""
import dataclasses
import json
import subprocess

import pytest

from sysprof.models.presets import step_flops
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner.ceiling import ceiling_record, step_matmuls
from sysprof.profiler_core.session.ceiling import ceiling_argv, measure_ceiling
from sysprof.profiler_core.studies.kinds.advise.ceiling import ceiling_rows

TINY = RunConfig(model="tiny", ctx=32, batch=2, device="cpu")


def flops_of(shapes):
    return sum(2 * batch * m * k * n * count for (batch, m, k, n, _, _), count in shapes.items())


@pytest.mark.parametrize("changes", [{}, {"attention": "sdpa"}, {"mode": "forward"}, {"mode": "forward_backward"}])
def test_the_matmuls_found_carry_exactly_the_models_flops(changes):
    """Every matmul of the step is found: the linear layers' (forward, and both gradients in backward) and
    attention's batched ones, with the SDPA path's too (its math path on meta)."""
    cfg = dataclasses.replace(TINY, **changes)
    assert flops_of(step_matmuls(cfg)) == step_flops(cfg.spec(), cfg.batch, cfg.ctx, cfg.mode)


def test_backward_matmuls_are_recorded_with_their_transposed_operands():
    shapes = step_matmuls(TINY)
    assert any(a_t for (_, _, _, _, a_t, _) in shapes) and any(b_t for (*_, b_t) in shapes)


def test_the_ceiling_times_each_matmul_and_sums_them_per_step():
    record = ceiling_record(TINY)
    assert record["flops_per_step"] == step_flops(TINY.spec(), TINY.batch, TINY.ctx, TINY.mode)
    assert record["ms_per_step"] == pytest.approx(sum(r["ms"] * r["count"] for r in record["matmuls"]))
    assert all(r["ms"] > 0 for r in record["matmuls"])
    assert record["mfu"] is None and record["peak_tflops"] is None  # a CPU has no peak FLOP/s here


@pytest.mark.slow
def test_the_ceilings_process_gives_a_record_or_a_one_line_reason(tmp_path):
    done = subprocess.run(ceiling_argv(TINY), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["ms_per_step"] > 0, done.stderr[-2000:]
    broken = dataclasses.replace(TINY, model_factory="nowhere_module:make", model=None)
    record = measure_ceiling(broken, tmp_path / "ceiling-stderr.log")
    assert "\n" not in record["error"] and record["error"]


def test_the_table_puts_the_step_beside_its_matmuls_alone():
    record = {"name": "batch 16 + bf16 autocast", "cell": 7, "ms_per_step": 40.0, "tflops": 500.0, "mfu": 0.506,
              "precision": "bf16"}
    summary = {"phases": {"step": {"median_ms": 100.0}}, "tflops": 200.0, "mfu": 0.2024, "precision_used": "bf16"}
    alone, step = ceiling_rows(record, summary)
    assert (alone["ms/step"], alone["MFU %"], alone["of peak"]) == (40.0, 50.6, "bf16")
    assert (step["ms/step"], step["MFU %"], step["× matmuls' time"]) == (100.0, 20.2, 2.5)
    failed = ceiling_rows({"name": "the baseline", "error": "not measured in 180 s"}, summary)
    assert failed == [{"of": "the baseline", "what": "its matmuls alone", "why": "not measured in 180 s"}]
