import pytest

from profiler_core.config import ConfigError, RunConfig, config_problems, validate
from profiler_core.options import OneLineParser, add_config_options, config_from_args, config_to_args


@pytest.mark.parametrize("changes, field, reason", [
    ({"model": "huge"}, "model", "unknown preset 'huge'"),
    ({"model": "small", "heads": 7}, "heads", "heads (7) must divide d_model (768)"),
    ({"model": "small", "d_model": 770, "heads": 10}, "heads", "d_model/heads = 77 must be even"),
    ({"ctx": 0}, "ctx", "ctx must be a positive integer"),
    ({"batch": -1}, "batch", "batch must be a positive integer"),
    ({"steps": 0}, "steps", "steps must be a positive integer"),
    ({"d_model": 0}, "d_model", "d_model must be a positive integer"),
    ({"layers": -2}, "layers", "layers must be a positive integer"),
    ({"warmup": -1}, "warmup", "warmup must be 0 or more"),
    ({"dtype": "fp8"}, "dtype", "dtype must be one of fp32, bf16, fp16"),
    ({"device": "tpu"}, "device", "device must be one of auto, cuda, cpu, mps"),
    ({"mode": "eval"}, "mode", "mode must be one of forward, forward_backward, train"),
    ({"attention": "flash"}, "attention", "attention must be one of naive, sdpa"),
    ({"matmul_precision": "low"}, "matmul_precision", "matmul_precision must be one of"),
    ({"ctx": 512, "max_ctx": 256}, "ctx", "context length 512 exceeds the 256 the model is built for"),
    ({"model": "custom", "d_model": 64}, "d_ff", "a custom model needs --d-ff"),
    ({"device": "cpu", "profiler": "nsys"}, "profiler", "kernel tables need CUDA kernels"),
    ({"device": "cpu", "memory": True}, "memory", "allocator history is a CUDA feature"),
])
def test_each_invalid_value_gets_its_one_line_reason(changes, field, reason):
    problems = config_problems(RunConfig(**changes))
    assert field in problems
    assert reason in problems[field]
    assert "\n" not in problems[field]
    with pytest.raises(ConfigError, match=reason.split("(")[0].strip()):
        validate(RunConfig(**changes))


def test_valid_configs_have_no_problems():
    assert config_problems(RunConfig()) == {}
    custom = RunConfig(model="custom", d_model=96, d_ff=256, layers=2, heads=6, ctx=64, max_ctx=128)
    assert config_problems(custom) == {}
    assert custom.spec().d_head == 16 and custom.context_length == 128


def test_preset_override_changes_spec_and_name():
    spec = RunConfig(model="small", layers=2).spec()
    assert (spec.d_model, spec.layers, spec.name) == (768, 2, "small*")


def test_unknown_field_in_dict_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown config field"):
        RunConfig.from_dict({"modle": "small"})


def test_cli_options_round_trip():
    parser = OneLineParser(prog="t")
    add_config_options(parser)
    cfg = RunConfig(model="tiny", ctx=64, compile=True, dtype="bf16", warmup=0)
    assert config_from_args(parser.parse_args(config_to_args(cfg))) == cfg
