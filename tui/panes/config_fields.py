"""How the Configure form's text becomes RunConfig values and back, and the rows for the user's own code: the model
factory (with its file picker button), its arguments, the loss, the optimizer and its arguments, and the depth of
per-module NVTX ranges. The form only holds text: nothing here imports or runs the code a spec names."""
from __future__ import annotations

import shlex

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label

from sysprof.profiler_core.api import RunConfig, vocab

FACTORY_FIELDS = ("model_factory", "model_args")  # right after the preset: they replace the built-in model
CODE_FIELDS = ("loss", "optimizer", "optimizer_args", "nvtx_modules")  # after the run's own options
PAIRS_FIELDS = ("model_args", "optimizer_args")  # NAME=VALUE items, space-separated (quote one with spaces)
PLACEHOLDERS = {"model_factory": "package.module:callable or file.py:callable", "model_args": "NAME=VALUE …",
                "loss": "module:fn (cross-entropy)", "optimizer": vocab.DEFAULT_OPTIMIZER,
                "optimizer_args": "NAME=VALUE … (lr=1e-4)", "nvtx_modules": "0 (off)"}
DEFAULTS_WHEN_EMPTY = {"optimizer": vocab.DEFAULT_OPTIMIZER, "nvtx_modules": 0}  # else an empty field reads as None


def read_integer(text: str) -> int | str | None:
    """'' → None (take the preset's), digits → int, anything else stays text for config_problems to name."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text) if text.lstrip("-").isdigit() else text
    except ValueError:  # digits int() does not take (superscripts): text, named by config_problems
        return text


def read_pairs(text: str) -> tuple[str, ...]:
    """'n_layer=6 act="gelu"' → ('n_layer=6', 'act=gelu'); an unclosed quote splits on spaces instead, and
    config_problems names the item that is not NAME=VALUE."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def read_code_field(name: str, text: str) -> object:
    text = text.strip()
    if not text:
        return () if name in PAIRS_FIELDS else DEFAULTS_WHEN_EMPTY.get(name)
    if name in PAIRS_FIELDS:
        return read_pairs(text)
    return read_integer(text) if name == "nvtx_modules" else text


def shown(cfg: RunConfig, name: str) -> str:
    """The field's text for a value of the config (the inverse of read_code_field)."""
    value = getattr(cfg, name)
    if name in PAIRS_FIELDS:
        return shlex.join(value)
    if value is None or (name == "nvtx_modules" and value == 0):
        return ""  # the placeholder says what an empty field means
    return str(value)


def code_rows(cfg: RunConfig, names: tuple[str, ...]) -> ComposeResult:
    """Label and input per field, in the form's two-column grid; the factory's input shares its cell with the
    button that opens the file picker."""
    for name in names:
        yield Label(name)
        field = Input(shown(cfg, name), id=name, placeholder=PLACEHOLDERS[name], compact=True)
        if name != "model_factory":
            yield field
            continue
        with Horizontal(id="factory-cell"):
            yield field
            yield Button("…", id="pick-factory", compact=True, tooltip="pick a .py file and a class or function in "
                                                                       "it (ctrl+o); the file is read, never run")

