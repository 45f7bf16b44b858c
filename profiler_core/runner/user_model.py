"""The user's own model: `--model-factory module:callable` or `path/to/file.py:callable` (runner side only).

User code is imported and called only here, inside the runner process, so a model that fails to import or
raises can fail a run but never the app or the CLI. What the user got wrong before anything ran (no such file,
module or attribute, a parameter nobody can fill, something that is not an nn.Module) is a ConfigError: one line,
exit 2. An exception raised by the user's own code is left as it is: the runner reports it in one line and keeps
its full traceback in the run directory's stderr.log.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from sysprof.profiler_core.base.config import ATTENTION_NAMES, DIMENSION_NAMES, RunConfig
from sysprof.profiler_core.base.errors import ConfigError

ROPE_THETA = 10_000.0  # the CS336 default, offered to factories that ask for it


def tool_dimensions(cfg: RunConfig) -> dict[str, Any]:
    spec = cfg.spec()
    return {"vocab_size": spec.vocab, "context_length": cfg.context_length, "d_model": spec.d_model,
            "num_layers": spec.layers, "num_heads": spec.heads, "d_ff": spec.d_ff, "rope_theta": ROPE_THETA,
            "attention": cfg.attention}


def parse_model_args(items: tuple[str, ...]) -> dict[str, Any]:
    """`key=value` items; values are JSON literals (1, 0.1, true, null, [1, 2]), anything else a string."""
    parsed: dict[str, Any] = {}
    for item in items:
        key, _, text = item.partition("=")
        try:
            parsed[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            parsed[key.strip()] = text
    return parsed


def load_callable(spec: str, what: str) -> tuple[Callable[..., Any], dict[str, str]]:
    """The callable a `module:name` or `file.py:name` spec points at, and where it came from."""
    target, _, name = spec.rpartition(":")
    module, origin = _import_target(target, what)
    found = getattr(module, name, None)
    if found is None:
        raise ConfigError(f"{what} {spec}: {target} has no attribute {name!r}")
    if not callable(found):
        raise ConfigError(f"{what} {spec}: {name} is a {type(found).__name__}, not a class or function")
    return found, origin


def _import_target(target: str, what: str) -> tuple[Any, dict[str, str]]:
    if target.endswith(".py"):
        return _import_file(Path(target).expanduser(), what)
    if os.getcwd() not in sys.path:  # `python -P`: a package in the working directory, found after all else
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):  # the spec's own module, not one it imports
            raise ConfigError(f"{what}: no module named {exc.name!r} (is it installed or on PYTHONPATH?)") from None
        raise
    return module, _origin(getattr(module, "__file__", None))


def _import_file(path: Path, what: str) -> tuple[Any, dict[str, str]]:
    if not path.is_file():
        raise ConfigError(f"{what}: no such file {path}")
    # the file's own imports of its neighbours work; after everything else, so no file there stands in for a module
    # of the standard library or of an installed package
    sys.path.append(str(path.resolve().parent))
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None  # a .py file always has a source loader
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module
    module_spec.loader.exec_module(module)  # the user's code runs here; its errors keep their traceback
    return module, _origin(str(path))


def _origin(file: str | None) -> dict[str, str]:
    if not file:
        return {}
    path = Path(file).resolve()
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def factory_kwargs(factory: Callable[..., Any], dimensions: dict[str, Any], overrides: dict[str, Any],
                   spec: str, what: str = "model factory",
                   remedy: str = "pass them with --model-arg NAME=VALUE") -> dict[str, Any]:
    """Keyword arguments for the factory: its parameters that name a dimension, then --model-arg overrides."""
    parameters = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    unknown = sorted(key for key in overrides if key not in parameters and not takes_any)
    if unknown:
        raise ConfigError(f"model factory {spec} takes no parameter {', '.join(unknown)} (it takes "
                          f"{', '.join(parameters) or 'none'})")
    kwargs = {name: dimensions[dim] for dim, names in DIMENSION_NAMES.items() for name in names if name in parameters}
    kwargs.update(_attention_kwargs(parameters, dimensions.get("attention")))
    kwargs.update(overrides)
    missing = [name for name, p in parameters.items() if name not in kwargs and p.default is inspect.Parameter.empty
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if missing:
        raise ConfigError(f"{what} {spec}: cannot fill {', '.join(missing)}; {remedy}")
    return kwargs


def _attention_kwargs(parameters: Mapping[str, inspect.Parameter], choice: str | None) -> dict[str, str]:
    if choice is None:
        return {}
    return {name: spelling.get(choice, choice) for name, spelling in ATTENTION_NAMES.items() if name in parameters}


def attention_note(cfg: RunConfig, kwargs: dict[str, Any]) -> str | None:
    """Why --attention changes nothing for this factory, when it does not (a sweep's attention axis then
    repeats the same model)."""
    if cfg.attention == RunConfig().attention or any(name in kwargs for name in ATTENTION_NAMES):
        return None
    return (f"--attention {cfg.attention} does not reach {cfg.model_factory}: it takes no parameter named "
            f"{', '.join(ATTENTION_NAMES)}; the model keeps its own attention")


def vocabulary(kwargs: dict[str, Any], dimensions: dict[str, Any]) -> int:
    """The vocabulary the model was built with: token ids are drawn below it."""
    given = [kwargs[name] for name in DIMENSION_NAMES["vocab_size"] if isinstance(kwargs.get(name), int)]
    return given[0] if given else dimensions["vocab_size"]


def build_user_model(cfg: RunConfig) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The user's model (on the current default device) and what the manifest records about it."""
    assert cfg.model_factory is not None  # only called for a run with a factory
    factory, origin = load_callable(cfg.model_factory, "--model-factory")
    dimensions = tool_dimensions(cfg)
    kwargs = factory_kwargs(factory, dimensions, parse_model_args(cfg.model_args), cfg.model_factory)
    model = factory(**kwargs)
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"model factory {cfg.model_factory} returned a {type(model).__name__}, "
                          "not a torch.nn.Module")
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return model, {"factory": cfg.model_factory, **origin, "kwargs": kwargs, "class": type(model).__qualname__,
                   "params": params, "trainable_params": trainable, "vocab_size": vocabulary(kwargs, dimensions),
                   "torch_version": torch.__version__}


# "compiled" leaves the choice to torch: under torch.compile its Adam/AdamW take the foreach path, which inductor fuses.
IMPL_FLAGS = {"default": {}, "fused": {"fused": True}, "foreach": {"foreach": True}, "loop": {"foreach": False},
              "compiled": {}}
DEFAULT_LR = 1e-4


def build_optimizer(cfg: RunConfig, parameters: Any) -> tuple[torch.optim.Optimizer, dict[str, Any]]:
    """The optimizer the config names, over the model's parameters, and what the manifest records about it."""
    spec = cfg.optimizer if ":" in cfg.optimizer else ":".join(cfg.optimizer.rsplit(".", 1))
    optimizer_class, origin = load_callable(spec, "--optimizer")
    kwargs = {"lr": DEFAULT_LR, **parse_model_args(cfg.optimizer_args), **IMPL_FLAGS[cfg.optimizer_impl]}
    try:
        optimizer = optimizer_class(parameters, **kwargs)
    # an unknown argument, a bad value (betas=[0.9] is an IndexError), fused where unsupported
    except (TypeError, ValueError, RuntimeError, IndexError, KeyError) as exc:
        raise ConfigError(f"optimizer {cfg.optimizer} rejects {kwargs}: {str(exc).splitlines()[0]}") from None
    if not all(callable(getattr(optimizer, name, None)) for name in ("step", "zero_grad")):
        raise ConfigError(f"optimizer {cfg.optimizer} made a {type(optimizer).__name__} without step() and zero_grad()")
    return optimizer, {"optimizer": cfg.optimizer, "class": type(optimizer).__qualname__, "kwargs": kwargs,
                       "impl": cfg.optimizer_impl, **origin}


def logits_of(output: object) -> torch.Tensor:
    """A model's logits: the tensor itself, the first element of a tuple, or `.logits` (Hugging Face style)."""
    if isinstance(output, (tuple, list)) and output:
        output = output[0]
    output = getattr(output, "logits", output)
    if not isinstance(output, torch.Tensor) or output.dim() != 3:
        shape = f" of shape {tuple(output.shape)}" if isinstance(output, torch.Tensor) else ""
        raise TypeError(f"the model returned a {type(output).__name__}{shape}; expected logits (batch, ctx, vocab): "
                        "a tensor, a tuple starting with one, or an object with .logits (or give --loss)")
    return output
