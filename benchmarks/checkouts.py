"""Running another checkout of the project (an older commit in a git worktree) with this interpreter, for a
before/after benchmark. Since the one import root (issue 30) the code installs as `sysprof.*`, so a checkout's
folders are laid out under `sysprof/` (links in a temporary folder) and put first on PYTHONPATH; an older checkout,
whose packages are top-level, runs from its own folder as before. Import it from a script run as a file
(`python benchmarks/X.py`), whose folder is first on sys.path."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

SOURCE_FOLDERS = ("models", "profiler_core", "tui")


def cli_for(checkout: Path) -> tuple[list[str], dict[str, str]]:
    """(`-m` arguments that start the checkout's CLI, the environment that makes them import its code)."""
    checkout = checkout.resolve()
    if not (checkout / "setup.py").is_file():  # before the import root: `python -m profiler_core` from the folder
        return ["-m", "profiler_core"], {**os.environ, "PYTHONPATH": str(checkout)}
    layout = Path(tempfile.mkdtemp(prefix="sysprof-checkout-"))
    (layout / "sysprof").mkdir()
    for folder in SOURCE_FOLDERS:
        (layout / "sysprof" / folder).symlink_to(checkout / folder, target_is_directory=True)
    path = os.pathsep.join(filter(None, (str(layout), os.environ.get("PYTHONPATH"))))
    return ["-m", "sysprof.profiler_core"], {**os.environ, "PYTHONPATH": path}
