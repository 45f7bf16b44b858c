"""The Configure form's logic, apart from its widgets: the values read into a config and checked (memory and GPUs
included), what the form says about the model and its predicted memory, and the `ab` / `advise` commands built
from it. Plain functions: the fuzz and the tests call them without an app."""
from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from rich.table import Table

from sysprof.profiler_core.api import RunConfig, configs, vocab
from sysprof.profiler_core.base.units import format_bytes
from sysprof.tui.panes.config_fields import CODE_FIELDS, FACTORY_FIELDS, read_code_field, read_integer

# Fields the inspection does not read: a change to them needs no new inspection (nor holds Run for one).
NOT_INSPECTED = ("warmup", "steps", "repeats", "profiler", "memory", "memory_max_entries", "seed", "nvtx_modules")



def model_text(cfg: RunConfig | None) -> str:
    """What the form knows about the model. The built-in model's count is exact; a factory's model is known only
    once built, in the runner, so its text says what the dims will fill instead of a count."""
    if cfg is None:
        return ""
    spec = cfg.spec()
    dims = (f"d_model {spec.d_model} · d_ff {spec.d_ff} · layers {spec.layers} · heads {spec.heads} · "
            f"vocab {spec.vocab}")
    if cfg.model_factory:
        return (f"[b]{configs.model_label(cfg.model, cfg.model_factory)}[/b]: your model; the {spec.name} dims fill "
                f"its parameters by name (model_args override them), the runner counts its parameters\n{dims}")
    params = configs.count_params(spec)
    return f"[b]{spec.name}[/b]: {params:,} parameters ({configs.human_count(params)})\n{dims}"


def predicted_table(cfg: RunConfig) -> Table:
    """Bytes of one step by item: the prediction a memory pass stores beside what it measured."""
    predicted = configs.predict_run_memory(cfg)
    table = Table(title=f"predicted memory (peak at {predicted['peak_phase']})", title_justify="left", box=None,
                  padding=(0, 1), show_header=False)
    table.add_column("item")
    table.add_column("bytes", justify="right")
    # the items held at the predicted peak (those not held there left out): their sum
    for label, key in vocab.PEAK_ITEMS:
        if predicted[key]:
            table.add_row(label, format_bytes(predicted[key]))
    table.add_row("[b]peak[/b]", f"[b]{format_bytes(predicted['peak_bytes'])}[/b]")
    table.add_row("residual / layer", format_bytes(predicted["residual_stream_per_layer_bytes"]))  # B·T·d·bytes
    return table


def form_values(texts: dict[str, str], chosen: dict) -> dict:
    """A config dict from the form: the text fields read (numbers as ints where they are), then the chosen
    selects and checkboxes."""
    values = dict(chosen)
    for name, text in texts.items():
        values[name] = read_code_field(name, text) if name in FACTORY_FIELDS + CODE_FIELDS else read_integer(text)
    return values


def checked_config(values: dict, visible_gpus: int,
                   memory: dict[str, tuple[int, str] | None] | None = None) -> tuple[RunConfig | None, dict[str, str]]:
    """The form's config (None when it cannot be built) and every problem by field; memory: what each device
    has (configs.device_memory), to refuse a config whose predicted memory cannot fit, as `sysprof run` does."""
    try:
        cfg = RunConfig.from_dict(values)
    except (TypeError, ValueError) as exc:
        return None, {"model": str(exc)}
    problems = configs.config_problems(cfg)  # a factory, loss or optimizer whose file or module is not there too
    if "nproc" not in problems and not configs.type_problems(cfg):  # it reads the fields as their types
        no_gpu = configs.gpus_problem(cfg, visible_gpus)
        if no_gpu:  # none for --device cuda, or fewer than --nproc ranks need
            problems["device" if no_gpu.startswith("--device") else "nproc"] = no_gpu
    if not problems and memory:
        too_big = configs.fit_problem(cfg, memory.get(cfg.device))
        if too_big:
            problems[too_big_field(cfg, memory.get(cfg.device))] = too_big
    return cfg, problems


def inspected_part(cfg: RunConfig) -> RunConfig:
    """cfg with the fields the inspection does not read set to their defaults: what an inspection stands for."""
    return replace(cfg, **{name: getattr(RunConfig(), name) for name in NOT_INSPECTED})


def code_stamp(cfg: RunConfig) -> tuple[float, ...]:
    """The modification times of the user's .py files the config names (0 for one that is not there)."""
    specs = [cfg.model_factory, cfg.loss, cfg.optimizer if ":" in cfg.optimizer else None]
    files = [Path(spec.rpartition(":")[0]).expanduser() for spec in specs if spec and ".py:" in spec]
    return tuple(path.stat().st_mtime if path.is_file() else 0.0 for path in files)


def runs_user_code(cfg: RunConfig) -> bool:
    """Whether the run imports the user's code: a model factory, a loss, an optimizer outside torch.optim."""
    return bool(cfg.model_factory or cfg.loss) or not cfg.optimizer.startswith("torch.optim.")


def too_big_field(cfg: RunConfig, limit: tuple[int, str] | None) -> str:
    """The field to mark when a config cannot fit: batch when batch 1 would fit, ctx when the smallest context
    would, else the model (its weights and optimizer state alone are too much)."""
    if not configs.fit_problem(replace(cfg, batch=1), limit):
        return "batch"
    if not configs.fit_problem(replace(cfg, batch=1, ctx=1), limit):
        return "ctx"
    return "model"


def form_texts(cfg: RunConfig | None, problems: dict[str, str]) -> tuple[str, Table | str]:
    """What the form says about the model and its predicted memory; only what the fields it needs allow."""
    model_known = cfg is not None and not {"model", "model_factory", *vocab.DIM_FIELDS} & problems.keys()
    # the prediction is the built-in model's formula: it would describe another model than a factory's
    predicted = predicted_table(cfg) if cfg is not None and not problems and not cfg.model_factory else ""
    return (model_text(cfg) if model_known else ""), predicted


def ab_from_form(cfg: RunConfig, b_options: str, repeats: int = 4) -> str:
    """`ab` with the form's config as A and as what both share, and B's options over it (`sysprof ab`)."""
    shared = shlex.join(configs.config_to_args(replace(cfg, repeats=RunConfig().repeats)))  # ab sets the repeats
    return f"ab {shared} --a= --b={shlex.quote(b_options.strip())} --repeats {repeats}"


def advise_from_form(cfg: RunConfig, budget_min: float | None) -> str:
    """`study advise` with the form's config as the baseline (the advisor's own repeats) within the budget."""
    baseline = shlex.join(configs.config_to_args(replace(cfg, repeats=RunConfig().repeats)))  # advise sets the repeats
    return f"study advise {baseline}" + (f" --budget {budget_min:g}" if budget_min is not None else "")


def budget_minutes(text: str) -> float | None:
    """The budget field: empty is the advisor's default (None); ValueError unless a positive number."""
    if not text.strip():
        return None
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise ValueError(text)
    return value
