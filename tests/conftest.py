"""Shared test setup: GPU marker, real fixtures from ../shared, snapshots under top-level snapshots/."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Textual renders monochrome when NO_COLOR is set at all, which would change every snapshot.
os.environ.pop("NO_COLOR", None)

try:
    import pytest_textual_snapshot  # noqa: E402  (after NO_COLOR is cleared)
except ImportError:  # the GPU machine runs `-m gpu` without the snapshot plugin
    pytest_textual_snapshot = None

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
TEST_DATA = ROOT / "tests" / "data"


if pytest_textual_snapshot is not None:

    class ProjectSnapshotExtension(pytest_textual_snapshot.SVGImageExtension):
        """Keep snapshot SVGs in the top-level snapshots/<test module>/ folder."""

        @classmethod
        def dirname(cls, *, test_location) -> str:
            return str(ROOT / "snapshots" / Path(test_location.filepath).stem)

    pytest_textual_snapshot.SVGImageExtension = ProjectSnapshotExtension


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items) -> None:
    if cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run on the lent H200)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    return SHARED_FIXTURES


@pytest.fixture
def cli_env(tmp_path) -> dict:
    """Environment for CLI subprocesses: the project importable, runs under tmp_path."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), SYSPROF_RUNS=str(tmp_path / "runs"))
    env.pop("NO_COLOR", None)
    return env
