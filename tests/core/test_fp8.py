"""--dtype fp8 (bf16 autocast, linear layers in FP8 through torchao) and the advisor's FP8 candidate: where it
applies, where it is refused in one line, and that it is tried in bf16's place on top of an answer, not beside it.
The FP8 matmuls themselves need an H100/H200-class GPU (tests/e2e/test_gpu_fp8.py)."""
import dataclasses
import importlib.util

import pytest
import torch
from torch import nn

from sysprof.models.transformer import Linear as BuiltInLinear
from sysprof.models.transformer import TransformerLM
from sysprof.profiler_core.analysis.metrics import throughput
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.runner import float8
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise.budget_plan import by_expected_gain
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.memory import Seen

SMALL = RunConfig(model="small", ctx=256, batch=4, device="cuda", repeats=4)
H100 = (80 * 2**30, "GPU 0's memory")
HOPPER = Seen(capability="9.0")


def _fp8(cfg=SMALL, on_gpu=True, seen=HOPPER):
    return next(c for c in candidates(cfg, on_gpu, H100, seen) if c.changes == {"dtype": "fp8"})


@pytest.fixture
def torchao_installed(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "torchao" else real(name, *a))


def test_the_candidate_says_why_it_cannot_apply(monkeypatch, torchao_installed):
    assert _fp8().reason is None and _fp8().config.dtype == "fp8"
    assert _fp8(seen=Seen()).reason is None  # before the diagnosis the GPU is not known: its smoke test says
    assert _fp8(seen=Seen(capability="8.0")).reason.startswith("this GPU (compute capability 8.0) has no FP8")
    assert _fp8(on_gpu=False).reason == "FP8 needs a CUDA GPU with FP8 tensor cores"
    assert _fp8(dataclasses.replace(SMALL, dtype="fp8")).reason == "already fp8"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert _fp8().reason == "needs torchao's float8 training: pip install torchao"


def test_on_top_of_a_bf16_answer_it_is_tried_in_bf16s_place(torchao_installed):
    found = by_expected_gain(candidates(SMALL, True, H100, HOPPER))
    answer = {"compile": True, "compile_mode": "reduce-overhead", "batch": 64, "dtype": "bf16"}
    proposed = dict(advise_refine.proposals(SMALL, answer, found, H100, HOPPER))
    assert proposed["FP8 linear layers (torchao), in place of --dtype bf16"] == answer | {"dtype": "fp8"}
    assert not [name for name in proposed if name.startswith("TF32")]  # an alternative to bf16, not a refinement
    fp32_answer = {"batch": 16}  # no bf16 to replace: FP8 (with its bf16 autocast) is added like any change
    assert dict(advise_refine.proposals(SMALL, fp32_answer, found, H100, HOPPER))[
        "FP8 linear layers (torchao)"] == {"batch": 16, "dtype": "fp8"}


def test_fp8_on_a_cpu_is_refused_before_anything_runs():
    problems = config_problems(RunConfig(model="tiny", device="cpu", dtype="fp8"))
    assert problems == {"dtype": "--dtype fp8 needs a CUDA GPU with FP8 tensor cores; device cpu has none"}
    with pytest.raises(ConfigError, match="device cpu has none"):
        float8.check_fp8_support(torch.device("cpu"))


def test_fp8_counts_its_mfu_against_the_bf16_peak():
    env = {"device_type": "cuda", "device_name": "NVIDIA H200", "float32_matmul_precision": "highest"}
    fp8 = throughput(dataclasses.replace(SMALL, dtype="fp8"), env, 100.0)
    assert fp8["precision_used"] == "bf16" and fp8["peak_tflops"] == 989.0
    assert fp8["mfu"] == throughput(dataclasses.replace(SMALL, dtype="bf16"), env, 100.0)["mfu"]


def test_the_built_in_linear_layers_become_torch_linears_holding_the_same_weights():
    model = TransformerLM(RunConfig(model="tiny").spec(), 64, "naive")
    weights = {name: param for name, param in model.named_parameters()}
    before = sum(isinstance(m, BuiltInLinear) for m in model.modules())
    float8._as_torch_linears(model)
    assert before > 0 and not any(isinstance(m, BuiltInLinear) for m in model.modules())
    assert sum(isinstance(m, nn.Linear) for m in model.modules()) == before
    assert all(param is weights[name] for name, param in model.named_parameters())  # the optimizer's tensors


def test_a_model_whose_linear_layers_are_its_own_class_is_refused_in_one_line():
    class OwnLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(32, 32))

        def forward(self, x):
            return x @ self.weight.T

    with pytest.raises(ConfigError, match="no torch.nn.Linear layer with both dims multiples of 16"):
        float8.to_float8(nn.Sequential(OwnLinear(), nn.Linear(30, 30)))  # 30: not FP8's 16-wide tile either


def test_fp8_stays_out_of_every_change_at_once_and_behind_bf16_on_a_launch_bound_step(torchao_installed):
    """On an H200 the CS336-style user model (a Linear class of its own) took FP8 into its change at once, ahead
    of the launch-bound bf16: FP8 failed its smoke test and took the whole candidate with it."""
    from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
    from sysprof.profiler_core.studies.kinds.advise.together import together

    launch_bound = advise_diagnosis.Hints(launch_bound=("forward", "backward", "optimizer"))
    found = advise_diagnosis.weighted(candidates(SMALL, True, H100, HOPPER), launch_bound)
    at_once = together(SMALL, found, H100, HOPPER)
    assert at_once.changes["dtype"] == "bf16" and "FP8" not in at_once.name
    ranked = [c.name for c in by_expected_gain(found)]
    assert ranked.index("bf16 autocast") < ranked.index("FP8 linear layers (torchao)")


def test_the_plan_counts_fp8s_longer_compile():
    """2.7B reduce-overhead on an H200: FP8 compiled in 192 s cold, bf16 in 82 s."""
    from sysprof.profiler_core.studies.kinds.advise.budget_plan import compile_s

    compiled = RunConfig(model="2.7B", ctx=256, batch=16, device="cuda", dtype="bf16", compile=True,
                         compile_mode="reduce-overhead")
    bf16, fp8 = compile_s(compiled, 1), compile_s(dataclasses.replace(compiled, dtype="fp8"), 1)
    assert 70 < bf16 < 90 and 170 < fp8 < 200
