"""Sweeps and studies over the user's own model (--model-factory): every sweep axis applies to it, cells and
tables name it by its label, the compile and precision studies take it, the attention study refuses it."""
import json
import sys
from pathlib import Path

import pytest

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.cli.main import main
from sysprof.profiler_core.session import passes as session_module
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import sweep_rows
from sysprof.profiler_core.studies.kinds import precision as precision_study
from sysprof.profiler_core.studies.progress import config_label
from sysprof.profiler_core.studies.results import study_tables

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

DATA = Path(__file__).resolve().parents[1] / "data"
GPT = f"{DATA / 'models' / 'nanogpt_style' / 'gpt.py'}:build"
FACTORY = {"model": ["tiny"], "model_factory": [GPT], "model_args": [("n_layer=1",)], "device": ["cpu"],
           "warmup": [0], "steps": [2]}


def test_every_sweep_axis_applies_to_a_factory_model():
    grid = FACTORY | {"d_model": [32, 64], "ctx": [16, 32], "batch": [1, 2], "dtype": ["fp32", "bf16"],
                      "compile": [False, True], "attention": ["naive", "sdpa"]}
    configs = sweep.expand(grid)  # no cell refused: the dims fill the factory's parameters by name
    assert len(configs) == 64 and all(cfg.model_factory == GPT for cfg in configs)
    assert sweep.cell_dir(Path("s"), 0, configs[0]).name == "000-gpt.build-ctx16-b1-train-fp32-naive"
    label = config_label(configs[-1].to_dict())
    assert label.startswith("model=gpt.build d_model=64 ") and "attention=sdpa" in label and "gpt.py" not in label
    assert label.endswith(" model_args=n_layer=1")


def test_a_factory_sweep_fills_its_parameters_from_each_cell(tmp_path):
    """Real runs on the CPU: the d_model axis reaches the factory's n_embd, and ctx, batch, dtype and attention
    the model and its batch; the rows name the factory and the preset whose dims it takes."""
    grid = FACTORY | {"d_model": [32, 64], "ctx": [24], "batch": [3], "dtype": ["bf16"], "attention": ["sdpa"]}
    sweep_dir = sweep.create(tmp_path, "t", sweep.expand(grid), ["d_model"])
    summaries = sweep.run(sweep_dir, lambda event: None)
    assert [s["status"] for s in summaries] == ["ok", "ok"]
    kwargs = [json.loads((Path(s["run_dir"]) / "manifest.json").read_text())["model"]["kwargs"] for s in summaries]
    assert [k["n_embd"] for k in kwargs] == [32, 64]
    assert all(k["block_size"] == 24 and k["attention"] == "sdpa" and k["n_layer"] == 1 for k in kwargs)
    rows = sweep_rows(sweep_dir)
    assert [(r["model"], r["d_model"], r["dtype"], r["batch"]) for r in rows] == [
        ("gpt.build (tiny)", 32, "bf16", 3), ("gpt.build (tiny)", 64, "bf16", 3)]


@pytest.fixture
def replayed_cells(monkeypatch):
    """Every cell replays a real tiny CPU run: what is tested here is the study's plan and tables."""
    def argv(cfg, run_dir, capture="none", launcher=()):
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "tiny_cpu_train.jsonl"),
                "--run-dir", str(run_dir)]
    monkeypatch.setattr(session_module, "runner_argv", argv)
    monkeypatch.setattr(precision_study, "_precision_lab", lambda device: {})


def only_study(root: Path) -> Path:
    (study_dir,) = root.iterdir()
    return study_dir


def test_the_compile_study_takes_a_factory(tmp_path, replayed_cells, capsys):
    options = ["--model", "tiny", "--device", "cpu", "--model-factory", GPT, "--model-arg", "n_layer=1"]
    assert main(["study", "compile", *options, "--runs-dir", str(tmp_path), "--json"]) == 0
    study_dir = only_study(tmp_path)
    plan = json.loads((study_dir / "sweep.json").read_text())
    assert [(c["mode"], c["compile"], c["model_factory"]) for c in plan["cells"]] == [
        ("forward", False, GPT), ("forward", True, GPT), ("train", False, GPT), ("train", True, GPT)]
    assert [row["model"] for row in study_tables(study_dir)["torch.compile study"]] == ["gpt.build (tiny)"] * 2
    assert all(path.name.split("-", 1)[1].startswith("gpt.build-") for path in (study_dir / "cells").iterdir())


def test_the_precision_study_keeps_each_size_of_a_factory_apart(tmp_path, replayed_cells):
    options = ["--device", "cpu", "--model-factory", GPT, "--models", "tiny,small"]
    assert main(["study", "precision", *options, "--runs-dir", str(tmp_path), "--json"]) == 0
    table = next(iter(study_tables(only_study(tmp_path)).values()))
    table = [row for row in table if row["measured"] == "train step"]
    assert [row["model"] for row in table] == ["gpt.build (tiny)", "gpt.build (small)"]
    assert [row["d_model"] for row in table] == [PRESETS["tiny"].d_model, PRESETS["small"].d_model]  # dims it got
    assert all(row["fp32 speedup"] == 1.0 for row in table)


def test_precision_study_defaults_to_the_model_given(tmp_path, replayed_cells):
    """Without --models it times --model's preset (it used to time "small" whatever --model said)."""
    assert main(["study", "precision", "--model", "tiny", "--device", "cpu", "--runs-dir", str(tmp_path)]) == 0
    plan = json.loads((only_study(tmp_path) / "sweep.json").read_text())
    assert {cell["model"] for cell in plan["cells"]} == {"tiny"}


def test_the_attention_study_refuses_a_factory_in_one_line(tmp_path, capsys):
    assert main(["study", "attention", "--model-factory", GPT, "--runs-dir", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "times attention functions, not a model: give yours as --impl" in error
    assert "Traceback" not in error
    assert not any(tmp_path.iterdir())  # refused before any study directory was made


def test_a_model_argument_is_a_sweep_axis_and_a_column_of_its_own_name(tmp_path, capsys):
    """Real CPU runs: --model-arg n_layer=1,2 makes two cells; the --model-args file's items come first,
    overridden by an axis of the same name."""
    (tmp_path / "args.yaml").write_text("n_layer: 3\ndropout: 0.0\n")
    options = ["--model", "tiny", "--device", "cpu", "--warmup", "0", "--steps", "2", "--ctx", "16",
               "--model-factory", GPT, "--model-args", str(tmp_path / "args.yaml"), "--model-arg", "n_layer=1,2",
               "--runs-dir", str(tmp_path / "runs"),
               "--pivot", "n_layer:dtype", "--value", "step mean ms", "--json"]
    assert main(["sweep", *options]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [c["config"]["model_args"] for c in document["cells"]] == [
        ["dropout=0.0", "n_layer=1"], ["dropout=0.0", "n_layer=2"]]
    assert document["varied"] == ["n_layer"]
    kwargs = [json.loads((Path(c["run_dir"]) / "manifest.json").read_text())["model"]["kwargs"]
              for c in document["cells"]]
    assert [k["n_layer"] for k in kwargs] == [1, 2] and all(k["dropout"] == 0.0 for k in kwargs)
    (sweep_dir,) = (tmp_path / "runs").iterdir()
    assert [row["n_layer"] for row in sweep_rows(sweep_dir)] == ["1", "2"]


def test_a_json_literal_with_commas_is_one_value_not_an_axis():
    from sysprof.profiler_core.cli.sweep import model_arg_values

    assert model_arg_values("betas=[0.9,0.95]") == ["betas=[0.9,0.95]"]
    assert model_arg_values("act=gelu,relu") == ["act=gelu", "act=relu"]
    assert model_arg_values("n_layer=4") == ["n_layer=4"]


def test_a_study_with_repeats_says_whether_compiled_is_faster_beyond_noise(tmp_path, replayed_cells):
    """Every process replays the same real run, so eager and compiled are the same numbers: "within noise"."""
    options = ["--model", "tiny", "--device", "cpu", "--repeats", "2"]
    assert main(["study", "compile", *options, "--runs-dir", str(tmp_path), "--json"]) == 0
    study_dir = only_study(tmp_path)
    assert all((cell / "repeats" / "02" / "summary.json").is_file() for cell in (study_dir / "cells").iterdir())
    table = study_tables(study_dir)["torch.compile study"]
    assert [row["compiled vs eager"] for row in table] == ["within noise [1.00–1.00]"] * 2
    cells = study_tables(study_dir)["cells"]
    assert all(row["procs"] == 2 and row["step CV between %"] == 0.0 for row in cells)


def test_a_verdict_cell_names_the_direction_and_the_interval():
    from sysprof.profiler_core.analysis.metrics import aggregate_processes
    from sysprof.profiler_core.studies.derived import verdict_cell

    def group(*medians):  # test inputs: per-process summaries as the runner writes them, shortened
        return aggregate_processes([{"status": "ok", "tokens_per_s": 1000 / m, "phases": {"step": {
            "mean_ms": m, "std_ms": 0.1, "median_ms": m, "min_ms": m, "max_ms": m, "cv": 0.001, "n": 20}}}
            for m in medians])
    eager, compiled = group(30.0, 30.4, 29.8, 30.1), group(20.0, 20.3, 19.9, 20.2)
    assert verdict_cell(eager, compiled, "step").startswith("faster [0.6")
    one = group(30.0)
    assert verdict_cell(one, group(20.0), "step") == "noise unknown (1 process each)"
    assert verdict_cell(eager, group(20.0), "step").startswith("faster [0.")  # a lone process against a group
    assert verdict_cell(eager, None, "step") is None


def test_a_cells_label_names_its_model_and_mode_even_at_their_defaults():
    """A precision study's lines read "model=small mode=train dtype=bf16 …", not "dtype=bf16" beside
    "model=medium …": the default model and mode are named too."""
    assert config_label(RunConfig(dtype="bf16").to_dict()) == "model=small mode=train dtype=bf16"
    assert config_label(RunConfig(model="medium", mode="forward").to_dict()) == "model=medium mode=forward"
