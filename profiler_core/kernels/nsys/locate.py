"""Finding the nsys executable and its QdstrmImporter.

nsys is often installed but not on PATH: CUDA toolkits put it under
/usr/local/cuda*/bin, standalone installs under /opt/nvidia/nsight-systems*/, and
some images only ship the copy inside Nsight Compute
(/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys).  The search order is
the one a user expects to be able to override: --nsys, then $SYSPROF_NSYS, then
PATH, then the usual install locations, newest version first.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from sysprof.profiler_core.base.errors import KernelReportError

NSYS_ENV_VAR = "SYSPROF_NSYS"
# Relative to the filesystem root so tests can search a temporary tree.
NSYS_INSTALL_GLOBS = (
    "usr/local/cuda*/bin/nsys",
    "opt/nvidia/nsight-systems*/*/bin/nsys",
    "opt/nvidia/nsight-systems*/*/target-linux-x64/nsys",
    "opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "opt/nvidia/nsight-systems-cli/*/target-linux-x64/nsys",
    "opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
)
_IMPORTER = "QdstrmImporter"


def find_nsys(explicit: str | Path | None = None, environ: Mapping[str, str] | None = None,
              root: str | Path = "/") -> Path | None:
    """The nsys to use, or None if there is none.  A bad `explicit` path is an error."""
    environ = os.environ if environ is None else environ
    if explicit:
        return _explicit_nsys(Path(explicit), "--nsys")
    if environ.get(NSYS_ENV_VAR):
        return _explicit_nsys(Path(environ[NSYS_ENV_VAR]), f"${NSYS_ENV_VAR}")
    on_path = shutil.which("nsys", path=environ.get("PATH", ""))
    if on_path:
        return Path(on_path)
    installed = [p for pattern in NSYS_INSTALL_GLOBS for p in Path(root).glob(pattern) if _is_executable(p)]
    return max(installed, key=_version_key) if installed else None


def nsys_version(nsys: str | Path) -> str | None:
    """`2025.3.1.90` from `nsys --version`, or None if it cannot be run."""
    try:
        result = subprocess.run([str(nsys), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\b(\d{4}\.\d+(?:\.\d+)*)", result.stdout + result.stderr)
    return match.group(1) if match else None


def find_qdstrm_importer(nsys: str | Path) -> Path | None:
    """QdstrmImporter beside nsys or in the install's host-linux-x64 folder."""
    for nsys_path in dict.fromkeys((Path(nsys), Path(nsys).resolve())):
        folder = nsys_path.parent
        candidates = [folder / _IMPORTER, folder.parent / "host-linux-x64" / _IMPORTER,
                      *sorted(folder.parent.glob(f"host*/{_IMPORTER}"))]
        for candidate in candidates:
            if _is_executable(candidate):
                return candidate
    return None


def _explicit_nsys(path: Path, origin: str) -> Path:
    candidate = path / "nsys" if path.is_dir() else path
    if not _is_executable(candidate):
        raise KernelReportError(f"{origin} {path}: not an executable nsys")
    return candidate


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(path: Path) -> tuple[int, ...]:
    # /opt/nvidia/nsight-systems/2025.3.1/bin/nsys -> (2025, 3, 1): newest wins.
    return tuple(int(n) for n in re.findall(r"\d+", str(path)))
