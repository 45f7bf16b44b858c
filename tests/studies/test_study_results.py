"""Study tables rebuilt from their directories (what the CLI prints, the app shows and `export` writes), the
catalog of study directories, and the `--events` progress stream the app reads."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.base.errors import StudyError
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.catalog import list_studies, study_record
from sysprof.profiler_core.studies.results import all_cells_done, study_tables

TINY = dict(model="tiny", ctx=16, batch=2, warmup=0, steps=2, device="cpu")


@pytest.fixture(scope="module")
def warmup_study(tmp_path_factory):
    """A real `sysprof study warmup --events` on the CPU: its stdout events and its directory."""
    root = tmp_path_factory.mktemp("runs")
    args = [sys.executable, "-m", "sysprof.profiler_core", "study", "warmup", "--model", "tiny", "--device", "cpu",
            "--ctx", "16", "--steps", "2", "--warmups", "0,1", "--runs-dir", str(root), "--events"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return events, root


@pytest.mark.slow
def test_events_say_where_the_study_is_and_how_far(warmup_study):
    events, root = warmup_study
    assert [e["event"] for e in events] == ["study", "cell", "cell_done", "cell", "cell_done"]
    assert events[0]["kind"] == "warmup" and events[0]["cells"] == 2 and events[0]["dir"].startswith(str(root))
    assert [e["status"] for e in events if e["event"] == "cell_done"] == ["ok", "ok"]
    assert events[-1]["done"] == 2 and events[-1]["eta_s"] == 0
    assert "warmup=1" in events[3]["label"] and events[3]["eta_s"] > 0


@pytest.mark.slow  # its fixture runs the study in a real process
def test_warmup_tables_come_from_the_directory(warmup_study):
    events, root = warmup_study
    tables = study_tables(root / events[0]["dir"].rsplit("/", 1)[1])
    assert list(tables) == ["warm-up study", "cells"]
    assert [row["warm-up steps"] for row in tables["warm-up study"]] == [0, 1]
    assert all(row["step mean ms"] > 0 and row["step first / mean"] > 0 for row in tables["warm-up study"])
    assert all(row["step total s"] > row["step warm-up s"] >= 0 for row in tables["warm-up study"])
    assert tables["warm-up study"][1]["step warm-up s"] > 0 and tables["warm-up study"][0]["step warm-up s"] == 0
    assert all_cells_done(tables)


@pytest.mark.slow  # its fixture runs the study in a real process
def test_catalog_lists_the_study_with_its_progress(warmup_study):
    _, root = warmup_study
    (root / "not-a-study").mkdir(exist_ok=True)
    records = list_studies(root)
    assert [(r["kind"], r["cells"], r["finished"]) for r in records] == [("warmup", 2, 2)]


def test_unfinished_cells_are_pending_rows_and_fail_the_check(tmp_path):
    configs = sweep.expand({**{k: [v] for k, v in TINY.items()}, "ctx": [16, 24], "batch": [1, 2]})
    sweep_dir = sweep.create(tmp_path, "grid", configs, ["ctx", "batch"])
    tables = study_tables(sweep_dir)
    assert [row["status"] for row in tables["sweep results"]] == ["pending"] * 4
    assert not all_cells_done(tables)
    assert study_record(sweep_dir)["finished"] == 0
    (sweep_dir / "cells" / "000-x").mkdir()
    (sweep_dir / "cells" / "000-x" / "summary.json").write_text("{torn")
    assert study_record(sweep_dir)["finished"] == 0  # a torn summary is an unfinished cell, not an error


@pytest.mark.slow
def test_finished_grid_gets_a_pivot_by_its_varied_fields(tmp_path):
    configs = sweep.expand({**{k: [v] for k, v in TINY.items()}, "ctx": [16, 24], "batch": [1, 2]})
    sweep_dir = sweep.create(tmp_path, "grid", configs, ["ctx", "batch"])
    sweep.run(sweep_dir, lambda event: None)
    tables = study_tables(sweep_dir)
    title = "fwd mean ms by ctx × batch"
    assert list(tables) == ["sweep results", title]
    assert [list(row) for row in tables[title]] == [["ctx", "batch=1", "batch=2"]] * 2
    results = {(r["ctx"], r["batch"]): r["fwd mean ms"] for r in tables["sweep results"]}
    assert tables[title][1]["batch=2"] == results[(24, 2)]


def test_a_directory_that_is_no_study_is_one_clear_error(tmp_path):
    assert study_kind(tmp_path) is None
    with pytest.raises(StudyError, match="is not a sweep or study directory"):
        study_tables(tmp_path)


@pytest.mark.slow
def test_precision_study_keeps_its_lab_in_the_directory_and_times_forward_and_the_train_step_in_one_command(tmp_path):
    """The lab runs once, before the cells; its tables come back from the study directory like the rest. Over two
    modes, one command times forward alone and each phase of the train step."""
    args = [sys.executable, "-m", "sysprof.profiler_core", "study", "precision", "--models", "tiny", "--device", "cpu",
            "--ctx", "16", "--steps", "2", "--warmup", "0", "--modes", "forward,train", "--runs-dir", str(tmp_path),
            "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    study_dir = tmp_path / printed["study_dir"].rsplit("/", 1)[1]
    assert (study_dir / "precision_lab.json").is_file() and study_kind(study_dir) == "precision"
    tables = study_tables(study_dir)
    title = "fp32 vs bf16 on cpu (speedups from the medians; TF32 is a CUDA matmul mode, so its cells are left out)"
    assert list(tables)[0] == title and any(name.startswith("accumulating") for name in tables)
    assert [row["status"] for row in tables["cells"]] == ["ok"] * 4  # no TF32 cell off CUDA
    autocast = next(name for name in tables if name.startswith("dtypes under autocast"))
    assert "cpu autocast has its own op lists, not CUDA's" in autocast
    precision = printed[title]
    assert not any(key.startswith("tf32") for key in precision[0])
    assert [(row["mode"], row["measured"]) for row in precision] == [
        ("forward", "forward"), ("train", "forward"), ("train", "forward+backward"), ("train", "train step")]
    assert all(row["fp32 speedup"] == 1.0 and row["params"] > 0 and row["bf16 median ms"] > 0 for row in precision)
    refused = subprocess.run([*args[:args.index("--modes")], "--modes", "inference", "--runs-dir", str(tmp_path)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--modes: unknown value 'inference'" in refused.stderr


@pytest.mark.slow
def test_passes_and_warmup_grids_over_models_contexts_and_modes(tmp_path):
    """Real CPU runs: one command gives forward vs forward+backward for every model and ctx, and the warm-up grid
    puts FWD and FWD+BWD side by side."""
    common = ["--device", "cpu", "--models", "tiny", "--ctxs", "16,24", "--steps", "2", "--warmup", "0",
              "--runs-dir", str(tmp_path), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "study", "passes", *common],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)["forward vs forward+backward (same steps)"]
    assert [(row["model"], row["ctx"]) for row in table] == [("tiny", 16), ("tiny", 24)]
    for row in table:
        # the ratio comes from the unrounded medians, the columns show them rounded: one in the last place may differ
        from_columns = row["fwd+bwd median ms"] / row["fwd median ms"]
        assert row["ratio fwd+bwd / fwd"] == pytest.approx(from_columns, abs=0.011) and row["ratio fwd+bwd / fwd"] > 1
    tiny = PRESETS["tiny"]
    assert (table[0]["d_model"], table[0]["d_ff"], table[0]["layers"], table[0]["heads"]) == (
        tiny.d_model, tiny.d_ff, tiny.layers, tiny.heads)
    assert table[0]["params"] == table[1]["params"] > 0
    warmup = ["study", "warmup", "--model", "tiny", "--device", "cpu", "--ctxs", "16", "--steps", "2",
              "--warmups", "0,1", "--modes", "forward,forward_backward", "--runs-dir", str(tmp_path), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *warmup], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    grid = json.loads(done.stdout)["warm-up study"]
    assert [row["warm-up steps"] for row in grid] == [0, 1]
    assert all(row["fwd status"] == row["fwd+bwd status"] == "ok" and row["fwd+bwd mean ms"] > 0 for row in grid)


def test_building_every_table_of_a_study_reads_each_file_once(monkeypatch):
    """A study is loaded once (studies/document.py): the plan once, each cell's run (run_document.Run: manifest,
    summary, steps) once, however many tables are built from them (it was the plan 4 times and each summary
    twice); a profiled pass's summary only where the cell has one (these have none)."""
    import collections

    from sysprof.profiler_core.base import rundir

    reads: collections.Counter = collections.Counter()
    for name in ("read_json", "jsonl_records"):
        real = getattr(rundir, name)
        monkeypatch.setattr(rundir, name, lambda path, real=real: reads.update([Path(path).name]) or real(path))
    study_dir = Path(__file__).resolve().parents[1] / "data" / "studies" / "warmup-small-h200"
    tables = study_tables(study_dir)
    cells = len(tables["cells"])
    assert len(tables) == 2 and cells == 4
    assert reads == {"sweep.json": 1, "manifest.json": cells, "summary.json": cells, "steps.jsonl": cells}


def test_a_pivot_that_averages_over_a_varied_field_it_leaves_out_says_so():
    from sysprof.profiler_core.studies.tables import averaging_note, pivot

    rows = [{"model": "small", "ctx": ctx, "dtype": dtype, "compile": False, "status": "ok", "device": device,
             "fwd mean ms": ms} for ctx, dtype, device, ms in ((256, "fp32", "H100", 10.0), (256, "bf16", "H100", 4.0),
                                                               (512, "fp32", "H200", 20.0), (512, "bf16", "H200", 8.0))]
    assert pivot(rows, ["model"], ["ctx"], "fwd mean ms").to_dict("records")[0]["ctx=256"] == 7.0  # the mean
    assert averaging_note(rows, ["model"], ["ctx"]) == ("note: each value of the pivot is the mean over dtype (fp32, "
                                                        "bf16): name it in --pivot to see each")
    assert averaging_note(rows, ["model", "dtype"], ["ctx"]) is None  # one cell each (the device is not a field)
