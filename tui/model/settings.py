"""The last configuration, remembered between sessions in the user's config directory."""
from __future__ import annotations

import json
from pathlib import Path

from sysprof.profiler_core.api import RunConfig

FILE_NAME = "last_config.json"


def default_settings_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("sysprof-tui")) / FILE_NAME


def load_last_config(path: Path | None) -> tuple[RunConfig | None, str | None]:
    """(config, None), (None, None) when there is none yet, or (None, notice) when the file is unusable."""
    if path is None or not path.is_file():
        return None, None
    try:
        return RunConfig.from_dict(json.loads(path.read_text())), None
    except (OSError, ValueError, TypeError) as exc:
        return None, f"ignored the remembered configuration in {path}: {exc}"


def save_last_config(path: Path | None, cfg: RunConfig) -> str | None:
    """Remember cfg; returns a notice when it could not be written (the run goes ahead anyway)."""
    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cfg.to_dict(), indent=1) + "\n")
    except OSError as exc:
        return f"could not remember the configuration in {path}: {exc.strerror or exc}"
    return None
