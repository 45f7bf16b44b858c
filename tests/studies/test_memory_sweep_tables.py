"""The largest single allocation per category across a sweep with a memory pass, from the real H200 snapshot
(small, batch 4, ctx 256, fp32 train) analysed into the sweep's cells as the memory pass does it."""
import lzma
import shutil
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.analysis import memory_analysis
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.memory_tables import largest_allocation_rows, memory_sweep_tables
from sysprof.profiler_core.studies.results import study_tables

FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "h200_small_fp32"
RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"
CFG = RunConfig(model="small", ctx=256, batch=4, device="cuda")
TITLE = "largest single allocation per category, fp32 vs autocast (Δ = autocast − fp32)"


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    if not (FIXTURE / "memory_snapshot.pickle.xz").is_file():
        pytest.skip("../shared/fixtures is not beside the checkout")
    snapshot = tmp_path_factory.mktemp("memory") / rundir.MEMORY_SNAPSHOT
    snapshot.write_bytes(lzma.decompress((FIXTURE / "memory_snapshot.pickle.xz").read_bytes()))
    return memory_analysis(CFG, snapshot)


def test_largest_allocation_per_category_from_the_real_snapshot(analysis):
    largest = analysis["largest_by_category"]
    assert largest["attention_scores"]["size_bytes"] == 4 * 12 * 256 * 256 * 4  # one fp32 B·H·T² score tensor
    assert largest["attention_scores"]["phase"] == "forward"
    assert largest["gradients"]["phase"] == "backward"
    assert largest["parameters"]["size_bytes"] == 10000 * 768 * 4  # the embedding (vocab × d_model)
    sizes = [alloc["size_bytes"] for alloc in analysis["top_allocations"]]
    assert max(row["size_bytes"] for row in largest.values()) >= max(sizes)


def memory_sweep(tmp_path: Path, analysis: dict) -> Path:
    """fp32 and bf16 cells of one config, both given the fixture's analysis, and a ctx-512 pair that has not run."""
    configs = [RunConfig.from_dict(CFG.to_dict() | {"dtype": dtype, "ctx": ctx}) for ctx in (256, 512)
               for dtype in ("fp32", "bf16")]
    sweep_dir = sweep.create(tmp_path, "memory", configs, ["ctx", "dtype"])
    for index in (0, 1):
        cell = sweep.cell_dir(sweep_dir, index, configs[index])
        shutil.copytree(RUN, cell)
        rundir.write_json(cell / rundir.MEMORY_DIR / rundir.ANALYSIS, analysis)
    return sweep_dir


def test_fp32_against_autocast_per_category_with_delta_and_percent(tmp_path, analysis):
    sweep_dir = memory_sweep(tmp_path, analysis)
    study = Study.load(sweep_dir)
    rows = largest_allocation_rows(study.rows, study.runs)
    done = [row for row in rows if row["ctx"] == 256]
    assert [row["category"] for row in done] == list(analysis["largest_by_category"])
    scores = next(row for row in done if row["category"] == "attention_scores")
    assert scores == {"model": "small", "ctx": 256, "mode": "train", "autocast": "bf16",
                           "category": "attention_scores", "status": "ok", "fp32 MiB": 12.0, "autocast MiB": 12.0,
                           "Δ MiB": 0.0, "Δ %": 0.0}  # the same snapshot on both sides: no change
    pending = [row for row in rows if row["ctx"] == 512]
    assert pending == [{"model": "small", "ctx": 512, "mode": "train", "autocast": "bf16", "category": None,
                        "status": "no memory analysis (pending)"}]
    assert TITLE in study_tables(sweep_dir)


def test_no_table_without_memory_passes(tmp_path, analysis):
    sweep_dir = memory_sweep(tmp_path, analysis)
    for run_dir in Study.load(sweep_dir).run_dirs[:2]:  # the two cells that ran
        shutil.rmtree(run_dir / rundir.MEMORY_DIR)
    study = Study.load(sweep_dir)
    assert memory_sweep_tables(study.rows, study.runs) == {}
    assert TITLE not in study_tables(sweep_dir)
