"""One table of RunConfig command-line options, shared by `sysprof run`, the runner and the manifest."""
from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import sys
from pathlib import Path
from typing import NoReturn

from sysprof.profiler_core.base.config import (
    ATTENTIONS,
    COMPILE_MODES,
    DDP_COMM_HOOKS,
    DEVICES,
    DTYPES,
    MATMUL_PRECISIONS,
    MODES,
    OPTIMIZER_IMPLS,
    PARALLELS,
    PROFILERS,
    RunConfig,
)
from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.base.model_args_file import read_model_args

# field -> (help, choices); type and default come from RunConfig itself.
OPTION_HELP: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "model": ("preset (tiny, small, medium, large, xl, 2.7B) or custom", None),
    "d_model": ("model width (overrides the preset)", None),
    "d_ff": ("feed-forward width", None),
    "layers": ("number of Transformer blocks", None),
    "heads": ("attention heads", None),
    "vocab": ("vocabulary size", None),
    "ctx": ("context length of the batch", None),
    "max_ctx": ("context length the model is built for (default: --ctx)", None),
    "batch": ("batch size", None),
    "mode": ("what a step does", MODES),
    "dtype": ("fp32, or bf16/fp16 autocast (fp16 with a grad scaler); fp8: bf16 autocast with the linear layers' "
              "matmuls in FP8 (torchao float8 training; H100/H200-class GPUs)", DTYPES),
    "matmul_precision": ("fp32 matmuls: highest = strict fp32, high = TF32", MATMUL_PRECISIONS),
    "compile": ("torch.compile the model (compile time reported separately)", None),
    "compile_mode": ("torch.compile mode; reduce-overhead and max-autotune ask for CUDA graphs (the summary says "
                     "whether inductor used them)", COMPILE_MODES),
    "attention": ("naive (materialized scores) or sdpa", ATTENTIONS),
    "activation_checkpointing": ("recompute each Transformer block's activations in the backward instead of keeping "
                                 "them: less memory, a larger batch, one more forward of every block", None),
    "warmup": ("warm-up steps before measuring", None),
    "steps": ("measured steps", None),
    "device": ("auto picks cuda when present", DEVICES),
    "profiler": ("kernel tables from nsys, torch.profiler, none, or auto", PROFILERS),
    "memory": ("record allocator history over the measured steps (a separate pass)", None),
    "memory_max_entries": ("allocator history entries kept by --memory", None),
    "seed": ("random seed for weights and tokens", None),
    "repeats": ("fresh runner processes measuring the config: the spread between them is the run-to-run noise a "
                "verdict must beat", None),
    "model_factory": ("your model: package.module:callable or path/to/file.py:callable (class or function "
                      "returning an nn.Module; the dims fill its parameters by name)", None),
    "model_args": ("NAME=VALUE for the model factory (JSON literal values; repeatable)", None),
    "optimizer": ("optimizer class: package.module.Class or package.module:Class (lr 1e-4 unless given)", None),
    "optimizer_args": ("NAME=VALUE keyword argument of the optimizer (JSON literal values; repeatable)", None),
    "optimizer_impl": ("torch Adam/AdamW update: default (foreach on CUDA), fused, foreach, loop; or compiled: "
                       "torch.compile of any optimizer's step", OPTIMIZER_IMPLS),
    "nvtx_modules": ("NVTX ranges (and memory tags) per module down to this depth in the profiled and memory "
                     "passes, for tables grouped by module type; 0: off", None),
    "nproc": ("ranks on this node, started by torchrun: one GPU each (NCCL), or CPU processes (gloo); batch is per "
              "rank", None),
    "parallel": ("how the ranks share the model: ddp (replicas, gradients all-reduced) or fsdp (FSDP2 fully_shard)",
                 PARALLELS),
    "ddp_bucket_mb": ("DDP's gradient bucket size in MB (torch's default: 25)", None),
    "ddp_static_graph": ("tell DDP the same parameters take part every step (static_graph)", None),
    "ddp_bucket_view": ("DDP's gradients as views into its buckets: no copy (gradient_as_bucket_view)", None),
    "ddp_comm_hook": ("compress DDP's gradients for the all-reduce: none, fp16, or bf16 (NCCL)", DDP_COMM_HOOKS),
    "nnodes": ("nodes in the job: run the same command on each, with one --rdzv-endpoint", None),
    "rdzv_endpoint": ("HOST:PORT of torchrun's c10d rendezvous (a node of the job) for --nnodes > 1", None),
    "loss": ("package.module:fn computing the loss from (model output, targets); default: cross-entropy of "
             "the logits", None),
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a user mistake is one line on stderr and exit 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {_with_hint(' '.join(message.split()))}\n")  # a newline stays one line
        sys.exit(2)


def _with_hint(message: str) -> str:
    """argparse takes a value that starts with -- for the next option: say how to give it as a value."""
    found = re.match(r"argument (--[\w-]+): expected one argument$", message)
    if found:
        option = found.group(1)
        return f"{message} (a value that starts with -- goes after an equals sign: {option}='--VALUE')"
    return message


class RaisingParser(argparse.ArgumentParser):
    """argparse for a line read inside a process that must go on (the app): a mistake is a ConfigError."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(" ".join(message.split()))


FLAG_NAMES = {"model_args": "--model-arg", "optimizer_args": "--optimizer-arg"}  # repeatable: one NAME=VALUE each


def flag(field_name: str) -> str:
    return FLAG_NAMES.get(field_name) or "--" + field_name.replace("_", "-")


def _field_type(field: dataclasses.Field) -> type:
    annotation = str(field.type)
    if annotation.startswith("tuple"):
        return tuple
    return bool if annotation == "bool" else int if "int" in annotation else str


def add_config_options(parser: argparse.ArgumentParser) -> None:
    for field in dataclasses.fields(RunConfig):
        help_text, choices = OPTION_HELP[field.name]
        if _field_type(field) is bool:
            parser.add_argument(flag(field.name), dest=field.name, action="store_true", help=help_text)
        elif _field_type(field) is tuple:
            parser.add_argument(flag(field.name), dest=field.name, action="append", metavar="NAME=VALUE",
                                help=help_text)
        else:
            parser.add_argument(flag(field.name), dest=field.name, type=_field_type(field),
                                choices=choices, default=field.default, help=help_text)
    add_model_args_file_option(parser)


def add_model_args_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-args", dest="model_args_file", type=Path, metavar="FILE",
                        help="a JSON or YAML mapping of the model factory's arguments (--model-arg items override it)")


def model_args(args: argparse.Namespace) -> tuple[str, ...]:
    """--model-args FILE's items, then the --model-arg items, which override the file's (the file's item of a
    name given explicitly is left out, so the command that reproduces the run names each argument once)."""
    explicit = tuple(args.model_args or ())
    from_file = read_model_args(args.model_args_file) if getattr(args, "model_args_file", None) else ()
    overridden = {item.partition("=")[0].strip() for item in explicit}
    return tuple(item for item in from_file if item.partition("=")[0] not in overridden) + explicit


def config_from_args(args: argparse.Namespace) -> RunConfig:
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunConfig)}
    pairs = {name: tuple(values[name] or ()) for name in FLAG_NAMES} | {"model_args": model_args(args)}
    return RunConfig(**values | pairs)


def config_from_command(command: str) -> RunConfig:
    """The config a `sysprof run OPTIONS` line runs (the advisor's answer); ConfigError when it is not one."""
    words = shlex.split(command)
    if words[:2] != ["sysprof", "run"]:
        raise ConfigError(f"not a `sysprof run` command: {command!r}")
    parser = RaisingParser(prog="sysprof run", add_help=False, allow_abbrev=False)
    add_config_options(parser)
    own, unknown = parser.parse_known_args(words[2:])
    if unknown:
        raise ConfigError(f"not a run option: {' '.join(unknown)}")
    return config_from_args(own)


def config_to_args(cfg: RunConfig) -> list[str]:
    """The options that rebuild cfg: every field that differs from the default."""
    args: list[str] = []
    for field in dataclasses.fields(RunConfig):
        value = getattr(cfg, field.name)
        if value == field.default:
            continue
        if isinstance(value, tuple):
            args += [part for item in value for part in (flag(field.name), item)]
        else:
            args += [flag(field.name)] if value is True else [flag(field.name), str(value)]
    return args


def comma_items(text: str, option: str) -> list[str]:
    """A comma-separated list of values, each one given once: an empty item (`64,,128`) is a typo, not a skip, and a
    value given twice would run twice."""
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise ConfigError(f"{option}: no value")
    if not all(items):
        raise ConfigError(f"{option}: an empty value between commas in {text!r}")
    twice = next((item for index, item in enumerate(items) if item in items[:index]), None)
    if twice is not None:
        raise ConfigError(f"{option}: {twice!r} given twice in {text!r}")
    return items
