import re

import pytest

from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import config_problems, validate
from sysprof.profiler_core.base.options import OneLineParser, add_config_options, config_from_args, config_to_args


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
    ({"dtype": "int4"}, "dtype", "dtype must be one of fp32, bf16, fp16, fp8"),
    ({"device": "tpu"}, "device", "device must be one of auto, cuda, cpu, mps"),
    ({"mode": "eval"}, "mode", "mode must be one of forward, forward_backward, train"),
    ({"attention": "flash"}, "attention", "attention must be one of naive, sdpa"),
    ({"matmul_precision": "low"}, "matmul_precision", "matmul_precision must be one of"),
    ({"ctx": 512, "max_ctx": 256}, "ctx", "context length 512 exceeds the 256 the model is built for"),
    ({"model": "custom", "d_model": 64}, "d_ff", "a custom model needs --d-ff"),
    ({"device": "cpu", "profiler": "nsys"}, "profiler", "kernel tables need CUDA kernels"),
    ({"device": "cpu", "memory": True}, "memory", "allocator history is a CUDA feature"),
    ({"compile_mode": "fastest"}, "compile_mode", "compile_mode must be one of default, reduce-overhead"),
    ({"compile_mode": "reduce-overhead"}, "compile_mode", "--compile-mode reduce-overhead needs --compile"),
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


def parse_run_options(*argv: str) -> RunConfig:
    parser = OneLineParser(prog="t")
    add_config_options(parser)
    return config_from_args(parser.parse_args(list(argv)))


@pytest.mark.parametrize("name, text", [
    ("args.yaml", "n_layer: 2\nactivation: gelu\nsizes: [1, 2]\nbias: false\n"),
    ("args.json", '{"n_layer": 2, "activation": "gelu", "sizes": [1, 2], "bias": false}'),
])
def test_model_args_file_expands_before_the_explicit_items(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    cfg = parse_run_options("--model-factory", "m:f", "--model-args", str(tmp_path / name), "--model-arg", "bias=true")
    # JSON-encoded values (the runner reads JSON literals); an explicit item replaces the file's of that name
    assert cfg.model_args == ('n_layer=2', 'activation="gelu"', "sizes=[1, 2]", "bias=true")
    assert "--model-args" not in config_to_args(cfg)  # the config holds the items, never the file's path


@pytest.mark.parametrize("name, text, reason", [
    ("missing.yaml", None, "cannot read"),
    ("list.json", "[1, 2]", "expected a mapping of NAME: VALUE, got a list"),
    ("broken.json", "{n_layer: 2", "is not valid JSON"),
    ("broken.yaml", "n_layer: [2\n", "is not valid YAML"),
    ("scalar.yaml", "just text", "got a str"),
    ("key.yaml", "n-layer: 2\n", "key 'n-layer' is not a parameter name"),
    ("date.yaml", "when: 2025-01-01\n", "the value of when (date) is not a JSON value"),
])
def test_model_args_file_mistakes_are_config_errors(tmp_path, name, text, reason):
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=re.escape(reason)):
        parse_run_options("--model-factory", "m:f", "--model-args", str(tmp_path / name))


def test_a_compile_mode_names_its_run_and_says_whether_it_asked_for_cuda_graphs():
    import torch

    from sysprof.profiler_core.base.rundir import slug
    from sysprof.profiler_core.runner.workload import cuda_graph_report

    cfg = RunConfig(model="tiny", compile=True, compile_mode="reduce-overhead")
    assert slug(cfg).endswith("-compiled-reduce-overhead") and slug(RunConfig(compile=True)).endswith("-compiled")
    assert cuda_graph_report(cfg, torch.device("cpu")) == {"mode": "reduce-overhead", "cuda_graphs": "none on cpu"}
    assert cuda_graph_report(RunConfig(compile=True, compile_mode="max-autotune-no-cudagraphs"),
                             torch.device("cpu"))["cuda_graphs"] == "not asked"
    assert cuda_graph_report(RunConfig(), torch.device("cpu")) is None  # eager: nothing to say


def test_an_unknown_optimizer_implementation_is_refused_with_torchs_optimizer_too():
    # the implementation check once replaced the choice check's answer with its own "fine" for torch.optim
    problems = config_problems(RunConfig(model="tiny", optimizer_impl="bogus"))
    assert problems["optimizer_impl"].startswith("optimizer_impl must be one of default, fused")


def test_a_run_command_line_reads_back_as_its_config_and_anything_else_is_one_error():
    from sysprof.profiler_core.base.options import config_from_command

    cfg = config_from_command("sysprof run --model tiny --ctx 32 --batch 16 --compile --compile-mode reduce-overhead")
    assert (cfg.model, cfg.ctx, cfg.batch, cfg.compile, cfg.compile_mode) == ("tiny", 32, 16, True, "reduce-overhead")
    for line, reason in (("sysprof sweep --ctx 1,2", "not a `sysprof run` command"),
                         ("sysprof run --bogus 3", "not a run option: --bogus 3"),
                         ("sysprof run --ctx x", "argument --ctx: invalid int value: 'x'")):
        with pytest.raises(ConfigError, match=re.escape(reason)):
            config_from_command(line)
