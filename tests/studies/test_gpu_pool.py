"""sweep --gpus: cells side by side, one session process per GPU, each recording the GPU it was given."""
from __future__ import annotations

import pytest

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import sweep_rows
from sysprof.profiler_core.studies.gpu_pool import GpuPool, gpus_problem, run_pool
from sysprof.profiler_core.studies.tables import visible_columns

GPU_CELL = RunConfig(model="tiny", device="cuda")


@pytest.mark.parametrize("gpus, configs, visible, text", [
    (["0", "0"], [GPU_CELL], 2, "--gpus lists each GPU once; got 0,0"),
    (["0", "2"], [GPU_CELL], 2, "--gpus 0,2: 2 GPU(s) on this host"),
    (["0", "1"], [RunConfig(model="tiny", nproc=2)], 2, "a cell with --nproc > 1 takes its GPUs itself"),
    (["0", "1"], [RunConfig(model="tiny", device="cpu")], 2, "a cell with --device cpu or mps needs none"),
])
def test_bad_gpu_lists_are_one_line(gpus, configs, visible, text):
    assert text in gpus_problem(gpus, configs, visible)


def test_gpu_ids_that_are_not_numbers_are_left_to_cuda():
    assert gpus_problem(["GPU-6f2a", "GPU-77b1"], [GPU_CELL], visible=2) is None


@pytest.mark.slow
def test_cells_run_side_by_side_each_with_its_own_gpu(tmp_path, cli_env, monkeypatch):
    """CPU cells stand in for GPU cells: what is proven is the pool (a process per cell, the variable each is
    given, both ran, the gpu column); the H200 test proves the GPUs."""
    for name, value in cli_env.items():
        monkeypatch.setenv(name, value)
    configs = [RunConfig(model="tiny", device="cpu", ctx=32, batch=2, warmup=1, steps=3, seed=seed) for seed in (1, 2)]
    sweep_dir = sweep.create(tmp_path, "pool", configs, ["seed"])
    seen: list[dict] = []
    run_pool(GpuPool(configs, sweep.cell_preparer(sweep_dir, configs, None), seen.append, None), [0, 1], ["0", "1"])
    summaries = [sweep.cell_summary(sweep.cell_dir(sweep_dir, i, cfg)) for i, cfg in enumerate(configs)]
    assert [s["status"] for s in summaries] == [events.OK, events.OK]
    gpus = {s["env"]["cuda_visible_devices"] for s in summaries}
    assert gpus == {"0", "1"}
    given = {e["index"]: e["gpu"] for e in seen if e["event"] == events.CELL}
    assert {given[i]: summaries[i]["env"]["cuda_visible_devices"] for i in (0, 1)} == {"0": "0", "1": "1"}
    rows = sweep_rows(sweep_dir)
    assert "gpu" in visible_columns(rows, ["seed"]) and {r["gpu"] for r in rows} == {"0", "1"}
    cells = [sweep.cell_dir(sweep_dir, i, cfg) for i, cfg in enumerate(configs)]
    started = [rundir.read_json(cell / rundir.MANIFEST)["started"] for cell in cells]
    finished = [(cell / rundir.SUMMARY).stat().st_mtime for cell in cells]
    assert max(started) < min(finished)  # side by side: each began before either ended


def test_a_cancelled_cell_stops_the_pool_from_starting_more(tmp_path, monkeypatch):
    configs = [RunConfig(model="tiny", device="cpu", seed=seed) for seed in range(3)]
    sweep_dir = sweep.create(tmp_path, "pool", configs, ["seed"])
    pool = GpuPool(configs, sweep.cell_preparer(sweep_dir, configs, None), lambda event: None, None)
    ran: list[int] = []

    def cancelled(index: int, gpu: str) -> tuple[str, str]:
        ran.append(index)
        return events.CANCELLED, "stopped by SIGINT"

    monkeypatch.setattr(pool, "run_cell", cancelled)
    run_pool(pool, [0, 1, 2], ["0"])
    assert ran == [0]
