"""The Kernels and Memory screens' module-type tables on real --nvtx-modules output (tests/data/module_ranges,
made on a GPU by benchmarks/kernels/make_module_fixtures.sh), analysed into a run directory as the session would."""
from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest
from tui_helpers import settle

from sysprof.profiler_core.cli.export import run_tables
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.kernels import attribute_kernels
from sysprof.profiler_core.kernels.summary import analyze_attribution, phase_kernel_table
from sysprof.profiler_core.memory import analyze_snapshot
from sysprof.profiler_core.tables.module_tables import KERNEL_ROW_FIELDS
from sysprof.tui.app import build_app

DATA = Path(__file__).resolve().parents[1] / "data" / "module_ranges"
pytestmark = pytest.mark.skipif(not (DATA / "profile.sqlite.xz").is_file(),
                                reason="tests/data/module_ranges/ comes from a GPU "
                                       "(benchmarks/kernels/make_module_fixtures.sh)")


@pytest.fixture
def run_dir(tmp_path) -> Path:
    run = tmp_path / "runs" / "module-ranges"
    (run / "kernels").mkdir(parents=True)
    (run / "memory").mkdir()
    shutil.copy(DATA / "manifest.json", run / "manifest.json")
    sqlite, snapshot = tmp_path / "profile.sqlite", run / "memory" / "memory_snapshot.pickle"
    sqlite.write_bytes(lzma.decompress((DATA / "profile.sqlite.xz").read_bytes()))
    snapshot.write_bytes(lzma.decompress((DATA / "memory_snapshot.pickle.xz").read_bytes()))
    shutil.copy(DATA / "modules.json", run / "memory" / "modules.json")
    attribution = attribute_kernels(sqlite)
    (run / "kernels" / "analysis.json").write_text(json.dumps(analyze_attribution(attribution, "profiled", "nsys")))
    phase_kernel_table(attribution).to_csv(run / "kernels" / "phase_kernels.csv", index=False)
    (run / "memory" / "analysis.json").write_text(json.dumps(analyze_snapshot(snapshot)))
    return run


@pytest.mark.slow
async def test_module_type_tables_show_and_export(run_dir):
    app = build_app(runs_dir=str(run_dir.parent), open_runs=[run_dir])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "3", "t")
        pane = app.query_one("#pane-kernels")
        records = app.query_one("#kernel-table").records
        assert {"attention", "mlp"} <= {r["category"] for r in records if r["phase"] == "backward"}
        assert any(r["type"].strip().startswith("└") for r in records)  # the example's own range, a sub-row
        exported = pane.export_table()
        assert exported.name == "module_types" and list(exported.records[0]) == list(KERNEL_ROW_FIELDS)
        await settle(app, pilot, "4", "t", "t", "t")
        memory = app.query_one("#memory-table").records
        assert {"attention", "mlp"} <= {r["category"] for r in memory}


def test_sysprof_export_lists_the_module_type_tables(run_dir):
    tables = run_tables(Run.load(run_dir))
    assert {"module types", "memory by module type"} <= set(tables)
    assert {row["category"] for row in tables["memory by module type"]} >= {"attention", "mlp"}
