"""Run directories: everything a run produced, readable later without torch or a GPU.

    runs/<timestamp>-<slug>/manifest.json   config, environment, the command that reproduces the run
                            steps.jsonl     one line per step, appended and flushed as it finishes
                            summary.json    status and statistics, written last
                            stderr.log      the runner's stderr
"""
from __future__ import annotations

from profiler_core.errors import RunDirError

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from profiler_core.config import RunConfig

MANIFEST, STEPS, SUMMARY, STDERR = "manifest.json", "steps.jsonl", "summary.json", "stderr.log"
# Passes after the clean one run in sub-directories, each a run directory of its own.
PROFILED_DIR, MEMORY_DIR, KERNELS_DIR = "profiled", "memory", "kernels"
TORCH_TRACE, MEMORY_SNAPSHOT = "torch_trace.json", "memory_snapshot.pickle"
ANALYSIS, PHASE_KERNELS = "analysis.json", "phase_kernels.csv"




def runs_root(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("SYSPROF_RUNS") or "runs")


def slug(cfg: RunConfig) -> str:
    parts = [cfg.model, f"ctx{cfg.ctx}", f"b{cfg.batch}", cfg.mode, cfg.dtype, cfg.attention]
    if cfg.compile:
        parts.append("compiled")
    return "-".join(parts).replace("/", "_")


def new_run_dir(root: Path, cfg: RunConfig) -> Path:
    """Create a fresh directory; a second run in the same second gets a numeric suffix."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for attempt in range(1000):
            suffix = f"-{attempt}" if attempt else ""
            path = root / f"{stamp}-{slug(cfg)}{suffix}"
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise RunDirError(f"cannot create a run directory under {root}: {exc.strerror or exc}") from None
    raise RunDirError(f"too many runs named {stamp}-{slug(cfg)} under {root}")


def write_json(path: Path, payload: dict) -> None:
    """Write via a temporary file and rename, so a reader never sees half a document."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=str) + "\n")
    tmp.replace(path)


def append_jsonl(path: Path, record: dict) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        handle.flush()


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path} is not readable JSON: {exc}") from None


def read_jsonl(path: Path) -> list[dict]:
    """Every complete line; a torn last line (a killed runner) is dropped, not fatal."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


@dataclass
class RunRecord:
    path: Path
    manifest: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    summary: dict | None = None

    @property
    def status(self) -> str:
        return (self.summary or {}).get("status", "incomplete")


def load_run(path: Path) -> RunRecord:
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise RunDirError(f"{path} is not a run directory (no {MANIFEST})")
    return RunRecord(path, read_json(path / MANIFEST) or {}, read_jsonl(path / STEPS),
                     read_json(path / SUMMARY))


def list_runs(root: Path) -> list[Path]:
    """Run directories under root, newest first."""
    if not root.is_dir():
        return []
    runs = [p for p in root.iterdir() if (p / MANIFEST).is_file()]
    return sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True)
