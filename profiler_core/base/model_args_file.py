"""`--model-args FILE.json|FILE.yaml`: a mapping of the model factory's keyword arguments, read on the command
line and expanded into `--model-arg NAME=VALUE` items (values JSON-encoded). The config keeps the items, not the
path, so the manifest and the command that reproduces a run stay complete without the file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base.errors import ConfigError

JSON_SUFFIXES = (".json",)  # anything else is read as YAML, which also reads most JSON


def read_model_args(path: Path) -> tuple[str, ...]:
    """The file's mapping as NAME=VALUE items, in the file's order; a ConfigError says what is wrong with it."""
    mapping = _load(path)
    if not isinstance(mapping, dict):
        raise ConfigError(f"--model-args {path}: expected a mapping of NAME: VALUE, got a {type(mapping).__name__}")
    bad = [key for key in mapping if not (isinstance(key, str) and key.isidentifier())]
    if bad:
        raise ConfigError(f"--model-args {path}: key {bad[0]!r} is not a parameter name")
    return tuple(f"{key}={_encode(path, key, value)}" for key, value in mapping.items())


def _load(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"--model-args: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--model-args: {path} is not a text file") from None
    if path.suffix.lower() in JSON_SUFFIXES:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--model-args: {path} is not valid JSON: {exc}") from None
    import yaml  # only when a YAML file is given

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"--model-args: {path} is not valid YAML: {getattr(exc, 'problem', None) or exc}{where}") \
            from None


def _encode(path: Path, key: str, value: Any) -> str:
    try:
        return json.dumps(value)
    except TypeError:  # YAML dates, sets, …: the runner reads JSON literals only
        raise ConfigError(f"--model-args {path}: the value of {key} ({type(value).__name__}) is not a JSON "
                          "value") from None
