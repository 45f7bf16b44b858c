"""An offline run directory with one damaged file opens: the pane that needs that file says what is wrong, the
other panes work (a copy of a real run directory, one file cut or replaced)."""
import json
import shutil
from pathlib import Path

import pytest
from tui_helpers import settle, text

from sysprof.tui.app import build_app

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"
KERNELS_OK, MEMORY_OK = "5,570", "peak 2.68 GiB in backward step 0"  # backward's kernel count; the memory headline


def half(data: bytes) -> bytes:
    return data[:len(data) // 2]


def reshaped(data: bytes) -> bytes:
    analysis = json.loads(data)
    return json.dumps(analysis | {"timeline": "not a timeline"}).encode()


@pytest.mark.parametrize("name, damage, pane, says, other, works", [
    ("kernels/analysis.json", half, "3", "cannot read the kernel tables", "4", MEMORY_OK),
    ("kernels/phase_kernels.csv", lambda data: b"name,total\nx,1\n", "3", "KeyError: 'phase'", "4", MEMORY_OK),
    ("memory/analysis.json", lambda data: b"[1, 2]", "4", "is not readable JSON: a list, not an object", "3",
     KERNELS_OK),
    ("memory/analysis.json", reshaped, "4", "is damaged: 'timeline' is a string, not an object", "3", KERNELS_OK),
    ("summary.json", half, "2", "the statistics are from steps.jsonl", "3", KERNELS_OK),
    ("summary.json", lambda data: json.dumps(json.loads(data) | {"phases": "fast"}).encode(), "2",
     "is damaged: 'phases' is a string, not an object", "3", KERNELS_OK),
    ("manifest.json", lambda data: json.dumps(json.loads(data) | {"schema": 99}).encode(), "2",
     "written by a newer sysprof (schema 99", "3", KERNELS_OK),
])
async def test_a_damaged_file_is_named_on_its_pane_and_the_others_work(tmp_path, name, damage, pane, says, other,
                                                                        works):
    run_dir = tmp_path / "run"
    shutil.copytree(RUN, run_dir)
    (run_dir / name).write_bytes(damage((RUN / name).read_bytes()))
    app = build_app(runs_dir=str(tmp_path / "runs"), open_runs=[run_dir])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, pane)
        assert says in " ".join(text(app).split())
        await settle(app, pilot, other)
        assert works in text(app)
        await settle(app, pilot, "2")
        assert "3 measured steps" in text(app)  # Live shows the steps whatever else is damaged
