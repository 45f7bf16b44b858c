"""The matmul ceiling on a GPU: the small preset's matmuls alone, in bf16 and in fp32, against the peak of the
precision they ran in (skipped without CUDA)."""
import dataclasses

import pytest

from sysprof.profiler_core.base.config import RunConfig

pytestmark = pytest.mark.gpu

SMALL = RunConfig(model="small", ctx=256, batch=8, device="cuda")


@pytest.mark.parametrize("dtype, precision", [("bf16", "bf16"), ("fp32", "fp32")])
def test_the_small_presets_matmuls_alone_run_well_below_the_peak_and_far_above_nothing(dtype, precision):
    from sysprof.profiler_core.runner.ceiling import ceiling_record

    record = ceiling_record(dataclasses.replace(SMALL, dtype=dtype))
    assert record["precision"] == precision and record["peak_tflops"]
    assert 0.05 < record["mfu"] < 1.0, record["mfu"]
    assert record["ms_per_step"] > 0 and all(r["tflops"] > 0 for r in record["matmuls"])
