"""A user's model on the wrong device, or with fewer token rows than the ids the run draws: one line, exit 2,
before any step (on CUDA the second would be a device-side assert that kills the process)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.runner.model_checks import check_placement, check_vocabulary

ROOT = Path(__file__).resolve().parents[2]
ODD = ROOT / "tests" / "data" / "models" / "odd" / "models.py"


def test_a_model_pinned_elsewhere_is_named():
    model = torch.nn.Linear(2, 2)
    check_placement(model, torch.device("cpu"))
    with pytest.raises(ConfigError, match="tensors are on cpu but the run is on meta"):
        check_placement(model, torch.device("meta"))


def test_the_token_table_must_cover_the_ids():
    model = torch.nn.Sequential(torch.nn.Embedding(256, 8), torch.nn.Embedding(16, 8))  # tokens, then positions
    check_vocabulary(model, 256)
    with pytest.raises(ConfigError, match="has 256 rows but token ids go up to 9999: set --vocab 256"):
        check_vocabulary(model, 10_000)


@pytest.mark.slow
def test_the_run_refuses_a_too_small_vocabulary_in_one_line(cli_env, tmp_path):
    args = ["run", "--model", "tiny", "--device", "cpu", "--ctx", "16", "--batch", "2", "--warmup", "0", "--steps",
            "1", "--runs-dir", str(tmp_path), "--model-factory", f"{ODD}:ByteLM"]
    refused = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=cli_env, capture_output=True,
                             text=True, timeout=180, cwd=ROOT)
    assert refused.returncode == 2 and "set --vocab 256" in refused.stderr and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith("sysprof: error: the model's token embedding")
    assert not list(tmp_path.iterdir())  # nothing ran: no run directory left
    fixed = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args, "--vocab", "256"], env=cli_env,
                           capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert fixed.returncode == 0, fixed.stderr
