"""The attention study off the GPU: a real CPU run (timing, eager parts against their FLOPs, pivots with the
speedups over eager), one-line refusals for a device that is not there, and the tables of the real H200 runs."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.cli.main import main
from sysprof.profiler_core.kernels.attention_flops import attention_flops
from sysprof.profiler_core.studies.kinds.attention.memory import TITLE as TENSOR_TITLE
from sysprof.profiler_core.studies.kinds.attention.memory import predicted_saved
from sysprof.profiler_core.studies.results import study_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "studies"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cpu_study(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    args = ["study", "attention", "--device", "cpu", "--impl", "eager,sdpa", "--dtype", "fp32,bf16", "--d", "16",
            "--seq", "32,64", "--batch", "2", "--iters", "3", "--runs-dir", str(runs), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_attention_study_runs_on_the_cpu_with_both_dtypes(cpu_study):
    cells = cpu_study["attention microbenchmark, batch 2, cpu, fp32, bf16 (bf16 under autocast)"]
    assert [(c["impl"], c["dtype"], c["seq"]) for c in cells] == [
        ("eager", "fp32", 32), ("eager", "fp32", 64), ("eager", "bf16", 32), ("eager", "bf16", 64),
        ("sdpa", "fp32", 32), ("sdpa", "fp32", 64), ("sdpa", "bf16", 32), ("sdpa", "bf16", 64)]
    assert all(c["status"] == "ok" and c["fwd mean ms"] > 0 and c["bwd mean ms"] > 0 for c in cells)
    assert all(c["fwd std ms"] is not None for c in cells)  # every time carries its spread
    assert all(c["fwd+bwd mean ms"] == pytest.approx(c["fwd mean ms"] + c["bwd mean ms"]) for c in cells)
    assert "fwd+bwd mean ms by d × seq" in cpu_study
    memory = next(rows for title, rows in cpu_study.items() if title.startswith("attention memory"))
    assert all(row["before backward MiB"] is None for row in memory)  # the CPU has no allocator counters
    assert memory[1]["one T×T tensor MiB"] == 2 * 64 * 64 * 4 / 2**20
    assert memory[3]["one T×T tensor MiB"] == 2 * 64 * 64 * 2 / 2**20  # bf16's T×T tensor is half the size


@pytest.mark.slow  # its fixture runs the study in real processes
def test_eager_parts_are_timed_next_to_their_flops(cpu_study):
    flops = next(rows for title, rows in cpu_study.items() if title.startswith("attention FLOPs vs time"))
    assert [(r["dtype"], r["seq"]) for r in flops] == [("fp32", 32), ("fp32", 64), ("bf16", 32), ("bf16", 64)]
    for row in flops:
        assert row["FLOPs matmul/softmax"] == 4 * 16 / 5  # the reports' 4·d_head/5
        assert row["matmul ms"] > 0 and row["softmax ms"] > 0 and row["scale+mask ms"] > 0
        assert row["time matmul/softmax"] == pytest.approx(row["matmul ms"] / row["softmax ms"], abs=0.006)
    assert attention_flops(2, 64, 16) == {"matmul": 4 * 2 * 64 * 64 * 16, "softmax": 5 * 2 * 64 * 64,
                                          "scale_mask": 2 * 2 * 64 * 64}


@pytest.mark.slow  # its fixture runs the study in real processes
def test_pivots_group_dtype_then_implementation_with_speedups(cpu_study):
    forward = cpu_study["fwd mean ms by d × seq"]
    assert list(forward[0]) == ["d", "seq", "fp32 eager", "fp32 sdpa", "bf16 eager", "bf16 sdpa",
                                "fp32 sdpa speedup", "bf16 sdpa speedup"]
    assert [(r["d"], r["seq"]) for r in forward] == [(16, 32), (16, 64)]
    for row in forward:
        assert row["fp32 sdpa speedup"] == round(row["fp32 eager"] / row["fp32 sdpa"], 2)
    assert "bwd mean ms by d × seq" in cpu_study and "before backward MiB by d × seq" not in cpu_study


def test_h200_study_pivots_mark_oom_and_keep_the_memory_table():
    """Real H200 run (fp32, before autocast): eager at T = 65536 ran out of memory; SDPA did not."""
    tables = study_tables(DATA / "attention-oom-h200")
    forward = {row["seq"]: row for row in tables["fwd mean ms by d × seq"]}
    assert forward[65536]["eager"] == "OOM" and isinstance(forward[65536]["sdpa"], float)
    assert forward[65536]["sdpa speedup"] is None and forward[16384]["sdpa speedup"] > 1
    memory = next(rows for title, rows in tables.items() if title.startswith("attention memory"))
    assert {row["seq"]: row["T×T tensors saved"] for row in memory if row["impl"] == "eager"}[16384] == 1.03


@pytest.mark.parametrize("extra, reason", [
    (["--device", "mps"], "cannot run on mps: this torch build"),
    (["--dtype", "fp16"], "--dtype: unknown value 'fp16' (choose from fp32, bf16)"),
    (["--impl", "flash"], "--impl: 'flash' is neither eager, compiled, sdpa nor your function as file.py:fn"),
    (["--impl", "eager,missing.py:attend"], "--impl: no such file missing.py"),
    (["--impl", "compiled:no_such_package_here.attn:fn"], "--impl: no module named 'no_such_package_here'"),
    (["--impl", ","], "--impl: no value"),
    (["--device", "tpu"], "--device must be one of auto, cuda, cpu, mps"),
])
@pytest.mark.slow
def test_bad_attention_options_are_one_line_errors(tmp_path, capsys, extra, reason):
    assert main(["study", "attention", "--runs-dir", str(tmp_path), *extra]) == 2
    error = capsys.readouterr().err
    assert reason in error and error.count("\n") == 1 and "Traceback" not in error
    assert not list(tmp_path.iterdir())  # nothing was created


def test_cuda_without_a_gpu_is_refused(tmp_path, capsys, monkeypatch):
    from sysprof.profiler_core.studies.kinds.attention import study as attention_study

    monkeypatch.setattr(attention_study, "gpu_count", lambda: 0)
    assert main(["study", "attention", "--device", "cuda", "--runs-dir", str(tmp_path)]) == 2
    assert "no CUDA GPU is visible" in capsys.readouterr().err


def test_the_cpu_default_grid_is_small_and_leaves_out_torch_compile(tmp_path, monkeypatch):
    """Only the plan is checked here (no cell runs): the CPU grid the help text promises."""
    from sysprof.profiler_core.studies.kinds.attention import cells as attention

    monkeypatch.setattr(attention, "run_study", lambda study_dir, groups, batch, iters, device, on_cell:
                        attention.write_plan(study_dir, groups, batch, iters, device))
    assert main(["study", "attention", "--device", "cpu", "--runs-dir", str(tmp_path), "--json"]) == 1  # all pending
    (study_dir,) = tmp_path.iterdir()
    plan = json.loads((study_dir / "study.json").read_text())
    assert (plan["device"], plan["iters"], plan["dtypes"]) == ("cpu", 10, ["fp32"])
    assert {(c["impl"], c["d"], c["seq"]) for c in plan["cells"]} == {
        (impl, d, seq) for impl in ("eager", "sdpa") for d in (16, 64) for seq in (128, 512)}


MINE = Path(__file__).resolve().parents[1] / "data" / "attention" / "mine.py"


@pytest.mark.slow
def test_your_own_attention_functions_are_timed_beside_the_built_in_ones_and_one_that_raises_is_a_row(tmp_path):
    impls = f"eager,{MINE}:attention,{MINE}:fused,{MINE}:unfinished"
    args = ["study", "attention", "--device", "cpu", "--impl", impls, "--d", "16", "--seq", "32,64", "--batch", "2",
            "--iters", "3", "--runs-dir", str(tmp_path), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stderr  # 1: a cell did not finish (the function that raises)
    tables = json.loads(done.stdout)
    cells = tables["attention microbenchmark, batch 2, cpu, fp32"]
    by_impl = {(c["impl"].rsplit(":", 1)[-1], c["seq"]): c for c in cells}
    for name in ("eager", "attention", "fused"):
        assert all(by_impl[name, seq]["status"] == "ok" and by_impl[name, seq]["fwd mean ms"] > 0
                   and by_impl[name, seq]["bwd mean ms"] > 0 for seq in (32, 64))
    assert {by_impl["unfinished", seq]["status"] for seq in (32, 64)} == {"failed"}
    forward = tables["fwd mean ms by d × seq"]
    assert "mine.py:attention" in forward[0] and "mine.py:attention speedup" in forward[0]  # against eager; no folders
    (study_dir,) = tmp_path.iterdir()
    log = (study_dir / "stderr.log").read_text()
    assert "NotImplementedError: the Triton kernel is not written yet" in log and "Traceback" in log
    assert "NotImplementedError: the Triton kernel is not written yet" in done.stderr  # the failed rows say why


LAYER = MINE.with_name("layer.py")


@pytest.mark.slow
def test_your_own_attention_layer_is_built_per_cell_and_its_weights_are_in_the_memory_table(tmp_path):
    impls = f"eager,{LAYER}:CausalSelfAttention,compiled:{LAYER}:CausalSelfAttention,{LAYER}:build,{LAYER}:Broken"
    args = ["study", "attention", "--device", "cpu", "--impl", impls, "--d", "16", "--seq", "32", "--batch", "2",
            "--iters", "3", "--runs-dir", str(tmp_path), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stderr  # the two factories that cannot build are failed rows
    tables = json.loads(done.stdout)
    cells = {c["impl"].removeprefix(f"{LAYER}:"): c for c in tables["attention microbenchmark, batch 2, cpu, fp32"]}
    for name in ("CausalSelfAttention", f"compiled:{LAYER}:CausalSelfAttention"):
        assert cells[name]["status"] == "ok" and cells[name]["fwd mean ms"] > 0 and cells[name]["bwd mean ms"] > 0
    assert cells["build"]["status"] == "failed" and "cannot fill dropout" in cells["build"]["why"]
    assert cells["Broken"]["status"] == "failed" and "the layer is not finished" in cells["Broken"]["why"]
    memory = {row["impl"]: row for row in tables[next(t for t in tables if t.startswith("attention memory ("))]}
    weights = (3 * 16 * 16 + 16 * 16) * 4 / 2**20  # Q/K/V and O projections, d_model 16, fp32
    assert memory[f"{LAYER}:CausalSelfAttention"]["weights MiB"] == weights
    assert memory["eager"].get("weights MiB") is None  # a function has no weights of its own
    by_tensor = {row["impl"]: row for row in tables[TENSOR_TITLE]}
    assert by_tensor[f"{LAYER}:CausalSelfAttention"]["Q, K, V MiB"] is None  # its Q, K, V are its projections'
    assert "layer.py:CausalSelfAttention speedup" in tables["fwd mean ms by d × seq"][0]
    (study_dir,) = tmp_path.iterdir()
    assert "RuntimeError: the layer is not finished" in (study_dir / "stderr.log").read_text()


def test_a_function_with_a_mask_parameter_gets_the_causal_mask():
    torch = pytest.importorskip("torch")
    from sysprof.profiler_core.runner.attention_impls import implementation, naive_attention

    q, k, v = (torch.randn(2, 8, 4) for _ in range(3))
    expected = naive_attention(q, k, v)
    for name in ("attention", "fused"):  # (q, k, v, mask) and (q, k, v)
        assert torch.allclose(implementation(f"{MINE}:{name}")(q, k, v), expected, atol=1e-5)


def test_memory_by_tensor_predicts_what_backward_keeps_and_the_h200_measured_exactly_that():
    """Real H200 study (fp32, batch 8, 60 cells): eager keeps the mask and the softmax output, SDPA its
    log-sum-exp; predicted from the shapes, to the byte what the study measured."""
    table = study_tables(DATA / "attention-h200")[TENSOR_TITLE]
    predicted = [row for row in table if row["impl"] in ("eager", "sdpa")]
    assert len(predicted) == 40 and all(row["measured ÷ predicted"] == 1.0 for row in predicted)
    eager = next(row for row in table if row["impl"] == "eager" and row["seq"] == 4096 and row["d"] == 64)
    assert eager["softmax output MiB"] == eager["QKᵀ scores MiB"] == 8 * 4096 * 4096 * 4 / 2**20
    assert eager["predicted saved MiB"] == eager["causal mask MiB"] + eager["softmax output MiB"]
    sdpa = next(row for row in table if row["impl"] == "sdpa" and row["seq"] == 4096 and row["d"] == 64)
    assert sdpa["QKᵀ scores MiB"] is None and sdpa["predicted saved MiB"] == 8 * 4096 * 4 / 2**20
    compiled = [row for row in table if row["impl"] == "compiled"]
    assert compiled and all(row["predicted saved MiB"] is None and row["measured ÷ predicted"] is None
                            for row in compiled)
    oom = next(row for row in study_tables(DATA / "attention-oom-h200")[TENSOR_TITLE] if row["status"] == "oom")
    assert oom["predicted saved MiB"] == (65536**2 + 8 * 65536**2 * 4) / 2**20 and oom["measured saved MiB"] is None


def test_under_autocast_the_matmuls_keep_bf16_copies_too():
    fp32, bf16 = (predicted_saved("eager", 2, 64, 16, dtype) for dtype in ("fp32", "bf16"))
    copies = (2 * 2 * 64 * 16 * 2 + 2 * 64 * 64 * 2 + 2 * 64 * 16 * 2) / 2**20  # Q, K; softmax output, V in bf16
    assert bf16 == pytest.approx(fp32 + copies)
    assert predicted_saved("sdpa", 2, 64, 16, "bf16") == (2 * 64 * 4 + 3 * 2 * 64 * 16 * 2) / 2**20
    assert predicted_saved("mine.py:attention", 2, 64, 16, "fp32") is None


H100_BF16 = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "reports" / "data" / "h100_2026-11-26" \
    / "20261126-230302-attention"


def test_under_bf16_autocast_the_h100_measured_what_the_shapes_predict():
    """Real H100 study (bf16 autocast, batch 8, d 32 and 128, T 512-16384), beside a user's function and layer:
    the bf16 copies the matmuls keep are predicted exactly for eager; SDPA measured 1 KiB more than its log-sum-exp
    and bf16 copies in every cell, a constant the prediction does not name."""
    table = study_tables(H100_BF16)[TENSOR_TITLE]
    predicted = [row for row in table if row["impl"] in ("eager", "sdpa")]
    assert len(predicted) == 16 and all(row["dtype"] == "bf16" and row["status"] == "ok" for row in predicted)
    assert all(row["measured ÷ predicted"] == pytest.approx(1.0, abs=0.001) for row in predicted)
    excess = {row["impl"]: set() for row in predicted}
    for row in predicted:
        excess[row["impl"]].add(round((row["measured saved MiB"] - row["predicted saved MiB"]) * 1024, 6))
    assert excess == {"eager": {0.0}, "sdpa": {1.0}}  # KiB
    users = [row for row in table if row["impl"].startswith("tests/data/attention/")]
    assert len(users) == 16 and all(row["predicted saved MiB"] is None and row["measured saved MiB"] > 0
                                    for row in users)


def test_pivot_headers_name_a_users_attention_by_file_unless_two_files_share_a_name():
    from sysprof.profiler_core.studies.kinds.attention.tables import _attention_pivots

    def cells(*impls):
        return [{"impl": impl, "dtype": "fp32", "d": 16, "seq": 32, "fwd mean ms": 1.0 + i} for i, impl in
                enumerate(impls)]
    one = _attention_pivots(cells("eager", "lab/a/mine.py:fn"))["fwd mean ms by d × seq"][0]
    assert set(one) == {"d", "seq", "eager", "mine.py:fn", "mine.py:fn speedup"}
    two = _attention_pivots(cells("eager", "lab/a/mine.py:fn", "lab/b/mine.py:fn"))["fwd mean ms by d × seq"][0]
    assert {"lab/a/mine.py:fn", "lab/b/mine.py:fn", "lab/b/mine.py:fn speedup"} <= set(two)
