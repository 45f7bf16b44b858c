"""The shape of the user's code a config names (--model-factory, --model-arg, --loss, --optimizer and its
arguments and implementation), told without importing it: whether its files and modules are there is code_specs'
to say (config_checks asks both)."""
from __future__ import annotations

from sysprof.profiler_core.base.code_specs import optimizer_shape_problem
from sysprof.profiler_core.base.config import COMPILED_STEP, RunConfig


def user_code_problems(cfg: RunConfig) -> dict[str, str | None]:
    """The shape of --model-factory, --model-arg, --loss and --optimizer; whether their files or modules are there
    is code_specs' to say, whether they import the runner's."""
    args_problem = pairs_problem("--model-arg", cfg.model_args) or (
        "--model-arg needs --model-factory" if cfg.model_args and not cfg.model_factory else None)
    return {"model_factory": spec_problem("model_factory", cfg.model_factory),
            "loss": spec_problem("loss", cfg.loss),
            "optimizer": optimizer_shape_problem(cfg.optimizer),
            "model_args": args_problem,
            "optimizer_args": pairs_problem("--optimizer-arg", cfg.optimizer_args),
            "optimizer_impl": impl_problem(cfg)}


def spec_problem(name: str, spec: str | None) -> str | None:
    target, _, attribute = (spec or "").rpartition(":")
    if spec is not None and not (target and attribute.isidentifier()):
        return f"{name} must be module:callable or path/to/file.py:callable; got {spec!r}"
    return None


def pairs_problem(option: str, items: tuple[str, ...]) -> str | None:
    malformed = [item for item in items if "=" not in item or not item.partition("=")[0].isidentifier()
                 or not item.partition("=")[2].strip()]
    return f"{option} takes NAME=VALUE; got {malformed[0]!r}" if malformed else None


def impl_problem(cfg: RunConfig) -> str | None:
    if cfg.optimizer_impl == COMPILED_STEP and cfg.dtype == "fp16":
        return "--optimizer-impl compiled does not combine with fp16: its GradScaler steps the optimizer itself"
    if cfg.optimizer_impl in ("default", COMPILED_STEP) or cfg.optimizer.startswith("torch.optim"):
        return None
    return f"--optimizer-impl {cfg.optimizer_impl} is for torch.optim's optimizers (fused: Adam, AdamW, SGD)"
