"""Kernel tables across a profiled sweep's cells, from a real H200 analysis (small, ctx 256, fp32 train) placed as
the sweep's first cell; the second cell has not run. The numbers are checked against that analysis's own files."""
import csv
import json
import shutil
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import sweep_rows
from sysprof.profiler_core.studies.results import study_tables
from sysprof.profiler_core.studies.tables import pivot

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"


def profiled_sweep(tmp_path: Path) -> Path:
    cfg = RunConfig.from_dict(json.loads((RUN / "manifest.json").read_text())["config"])
    configs = [cfg, RunConfig.from_dict(cfg.to_dict() | {"ctx": 512})]
    sweep_dir = sweep.create(tmp_path, "profiled", configs, ["ctx"])
    shutil.copytree(RUN, sweep.cell_dir(sweep_dir, 0, configs[0]))
    return sweep_dir


def test_profiled_sweep_gets_the_cross_cell_kernel_tables(tmp_path):
    tables = study_tables(profiled_sweep(tmp_path))
    analysis = json.loads((RUN / "kernels" / "analysis.json").read_text())
    steps = len(analysis["steps"])
    top = tables["top kernel per pass (profiled pass)"]
    with (RUN / "kernels" / "phase_kernels.csv").open() as handle:
        first_forward = next(row for row in csv.DictReader(handle) if row["phase"] == "forward")
    assert [(r["ctx"], r["pass"]) for r in top] == [(256, "forward"), (256, "backward"), (256, "optimizer"),
                                                    (512, "forward"), (512, "backward"), (512, "optimizer")]
    assert top[0]["kernel"] == first_forward["name"] and top[0]["% of pass"] == 57.3
    assert top[0]["ms/step"] == round(int(first_forward["total_ns"]) / steps / 1e6, 3)
    assert top[3]["status"] == "pending" and top[3]["kernel"] is None
    gemm = tables["GEMM % of GPU time: forward (inference) vs the train step"]
    assert (gemm[0]["forward GEMM %"], gemm[0]["backward GEMM %"]) == (79.0, 83.1)
    assert 70 < gemm[0]["step GEMM %"] < 79.0 and gemm[1]["step GEMM %"] is None
    softmax = tables["attention: softmax vs matmul kernel time"][0]
    # matmul is the GEMM kernels of QKᵀ and PV: this older profile's scores range also holds the scale and mask
    assert softmax["matmul / softmax time"] == round(2062820 / 568544, 2)
    assert softmax["scale+mask ms/step"] == round(1116066 / steps / 1e6, 3)
    assert softmax["matmul / softmax FLOPs"] == 51.2  # 4·d_head/5, d_head 64
    non_gemm = tables["top non-GEMM kernel per cell"][0]
    with (RUN / "kernels" / "phase_kernels.csv").open() as handle:  # summed over the passes, by hand
        totals = {}
        for row in csv.DictReader(handle):
            if row["class"] != "gemm" and row["phase"] != "other":
                totals[row["name"]] = totals.get(row["name"], 0) + int(row["total_ns"])
    assert non_gemm["kernel"] == max(totals, key=totals.get) and non_gemm["class"] != "gemm"
    assert non_gemm["ms/step"] == round(max(totals.values()) / steps / 1e6, 3)


def test_an_unprofiled_sweep_has_no_kernel_tables_and_pivots_mark_pending(tmp_path):
    sweep_dir = profiled_sweep(tmp_path)
    shutil.rmtree(sweep.cell_dir(sweep_dir, 0, sweep.load_plan(sweep_dir)[0][0]) / "kernels")
    assert not any("kernel" in title for title in study_tables(sweep_dir))
    table = pivot(sweep_rows(sweep_dir), ["model"], ["ctx"], "fwd mean ms").to_dict("records")
    assert table[0]["ctx=512"] == "pending" and isinstance(table[0]["ctx=256"], float)


def test_a_cell_row_carries_its_profiled_pass_apart_from_its_clean_times():
    """The profiled pass's summary has the shape of any run's; a real CPU run's stands in for one here."""
    from sysprof.profiler_core.studies.tables import cell_row

    run = RUN.parent / "tiny-ctx32"
    summary = json.loads((run / "summary.json").read_text())
    clean = summary | {"profile": {"backend": "nsys", "inflation": 1.8}}
    row = cell_row(summary["config"], clean, [], profiled=summary)
    assert row["profiled fwd ms"] == summary["phases"]["forward"]["median_ms"]
    assert row["profiled step ms"] == summary["phases"]["step"]["median_ms"] and row["inflation"] == 1.8
    assert cell_row(summary["config"], summary, [])["profiled fwd ms"] is None


def test_the_sweep_command_prints_the_kernel_tables_after_its_own(tmp_path, capsys):
    import argparse

    from sysprof.profiler_core.cli.sweep import report_sweep

    args = argparse.Namespace(pivot=None, value="fwd mean ms", output=None, json=False, events=False, full_names=False)
    assert report_sweep(args, profiled_sweep(tmp_path), 1.0) == 1  # the second cell has not run
    printed = " ".join(capsys.readouterr().out.split())
    assert "top kernel per pass (profiled pass)" in printed and "GEMM % of GPU time" in printed


def test_rows_keep_every_varied_field_and_autocast_cells_pair_with_their_fp32_twin(tmp_path):
    """fp32 and bf16, eager and compiled: four cells, each given the real analysis (so the pairs' speed-ups are 1)
    but the compiled bf16 one, which has not run."""
    cfg = RunConfig.from_dict(json.loads((RUN / "manifest.json").read_text())["config"])
    configs = [RunConfig.from_dict(cfg.to_dict() | {"dtype": dtype, "compile": compiled})
               for compiled in (False, True) for dtype in ("fp32", "bf16")]
    sweep_dir = sweep.create(tmp_path, "profiled", configs, ["dtype", "compile"])
    for index in range(3):
        shutil.copytree(RUN, sweep.cell_dir(sweep_dir, index, configs[index]))
    tables = study_tables(sweep_dir)
    gemm = tables["GEMM % of GPU time: forward (inference) vs the train step"]
    assert [(row["dtype"], row["compile"]) for row in gemm] == [("fp32", False), ("bf16", False), ("fp32", True),
                                                                ("bf16", True)]
    top = tables["top kernel per pass (profiled pass)"]
    assert len({(row["dtype"], row["compile"], row["pass"]) for row in top}) == len(top)  # no two rows alike
    pairs = tables["attention kernel time: fp32 vs autocast (speed-up = fp32 ÷ autocast)"]
    assert [(row["compile"], row["autocast"], row["status"]) for row in pairs] == [(False, "bf16", "ok"),
                                                                                  (True, "bf16", "pending")]
    assert pairs[0]["softmax speed-up"] == 1.0 and pairs[0]["softmax fp32 ms"] == pairs[0]["softmax autocast ms"]
    assert pairs[1]["softmax autocast ms"] is None and pairs[1]["softmax speed-up"] is None


def test_the_inference_forward_is_a_column_beside_the_train_passes_and_the_forwards_top_non_gemm_kernel(tmp_path):
    """--mode forward,train: the train cell has the real analysis; the forward cell the same analysis cut to its
    forward's kernels (what a mode-forward profile holds: one pass)."""
    cfg = RunConfig.from_dict(json.loads((RUN / "manifest.json").read_text())["config"])
    configs = [RunConfig.from_dict(cfg.to_dict() | {"mode": mode}) for mode in ("forward", "train")]
    sweep_dir = sweep.create(tmp_path, "profiled", configs, ["mode"])
    for index, cfg in enumerate(configs):
        shutil.copytree(RUN, sweep.cell_dir(sweep_dir, index, cfg))
    kernels = sweep.cell_dir(sweep_dir, 0, configs[0]) / "kernels" / "phase_kernels.csv"
    lines = kernels.read_text().splitlines(keepends=True)
    kernels.write_text("".join([lines[0], *(line for line in lines[1:] if line.startswith("forward,"))]))
    tables = study_tables(sweep_dir)
    [row] = tables["top kernel per pass: the inference forward beside the train step's passes (% of the pass)"]
    assert row["inference forward"] == row["train forward"] and row["inference forward"].endswith(" (57%)")
    assert set(row) >= {"model", "ctx", "train backward", "train optimizer"}
    forward = tables["top non-GEMM kernel of the forward"]
    with kernels.open() as handle:
        best = max((r for r in csv.DictReader(handle) if r["class"] != "gemm"), key=lambda r: int(r["total_ns"]))
    steps = len(json.loads((RUN / "kernels" / "analysis.json").read_text())["steps"])
    assert forward[0]["kernel"] == best["name"] and forward[0]["% of forward"] == float(best["pct_of_phase"])
    assert forward[0]["instances/forward"] == round(int(best["instances"]) / steps, 1)
    assert forward[0]["ms/forward"] == round(int(best["total_ns"]) / steps / 1e6, 3)


def test_cells_carry_tokens_per_second_and_mfu_and_params_where_the_sizes_differ():
    """Real CPU runs of tiny at ctx 32 and 64 (no MFU on a CPU), and the H200-analysed small one's summary."""
    from sysprof.profiler_core.studies.tables import cell_row, visible_columns

    summaries = [json.loads((RUN.parent / name / "summary.json").read_text()) for name in ("tiny-ctx32", "tiny-ctx64")]
    rows = [cell_row(summary["config"], summary, []) for summary in summaries]
    assert [row["tokens/s"] for row in rows] == [summary["tokens_per_s"] for summary in summaries]
    assert all(row["MFU %"] is None for row in rows)  # a CPU run has no peak FLOP/s
    assert "tokens/s" in visible_columns(rows, ["ctx"]) and "params" not in visible_columns(rows, ["ctx"])
    with_gpu = summaries[0] | {"mfu": 0.41, "params": 128_625_408}
    sized = [rows[0], cell_row(summaries[0]["config"] | {"model": "small"}, with_gpu, [])]
    assert sized[1]["MFU %"] == 41.0 and "params" in visible_columns(sized, ["model"])


H100_SWEEP = Path(__file__).resolve().parents[1] / "data" / "studies" / "profiled-big-h100"


def test_a_real_xl_and_2p7b_sweep_puts_the_inference_forward_beside_the_train_step():
    """`sweep --model xl,2.7B --ctx 512 --mode forward,train --profiler nsys` on an H100: a forward-only cell's
    analysis lists an empty backward phase, which read as "backward GEMM % 0"; its share is no share at all."""
    tables = study_tables(H100_SWEEP)
    gemm = {(r["model"], r["mode"]): r for r in tables["GEMM % of GPU time: forward (inference) vs the train step"]}
    for model in ("xl", "2.7B"):
        cell = next(H100_SWEEP.glob(f"cells/*-{model}-ctx512-b4-forward-*"))
        fraction = json.loads((cell / "kernels" / "analysis.json").read_text())["gemm_fraction"]["forward"]
        forward = gemm[(model, "forward")]
        assert forward["forward GEMM %"] == round(fraction * 100, 1)
        assert forward["backward GEMM %"] is None and forward["step GEMM %"] is None
        assert gemm[(model, "train")]["backward GEMM %"] > 80  # fp32 on an H100: GEMM-bound backward
    side = tables["top kernel per pass: the inference forward beside the train step's passes (% of the pass)"]
    assert [r["model"] for r in side] == ["xl", "2.7B"] and all(r["inference forward"] for r in side)


def test_a_compiled_sweep_has_no_attention_ranges_and_so_no_softmax_table():
    """torch.compile drops the attention ranges from its graph: a real compiled H100 sweep (2.7B bf16, inference
    forward and train step) printed softmax, matmul and scale+mask as 0 ms; with no ranges there is nothing to say."""
    sweep_dir = H100_SWEEP.parent / "profiled-compiled-h100"
    for cell in sweep_dir.glob("cells/*"):
        assert json.loads((cell / "kernels" / "analysis.json").read_text())["attention"]["ranges"] == 0
    tables = study_tables(sweep_dir)
    assert "attention: softmax vs matmul kernel time" not in tables
    gemm = {r["mode"]: r for r in tables["GEMM % of GPU time: forward (inference) vs the train step"]}
    assert gemm["forward"]["forward GEMM %"] > 0 and gemm["forward"]["step GEMM %"] is None
    assert 0 < gemm["train"]["step GEMM %"] < gemm["train"]["backward GEMM %"]
