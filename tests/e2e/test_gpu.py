"""GPU paths, proven on an H200 (skipped without CUDA)."""
import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu


def sysprof_json(args, env):
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *args, "--json"], env=env,
                            capture_output=True, text=True, timeout=600)
    return result.returncode, json.loads(result.stdout) if result.stdout else None, result.stderr


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_small_train_on_cuda_reports_events_memory_and_mfu(cli_env, dtype):
    code, summary, stderr = sysprof_json(["--model", "small", "--dtype", dtype, "--warmup", "3", "--steps", "5"],
                                         cli_env)
    assert code == 0, stderr
    assert summary["env"]["device_type"] == "cuda" and summary["env"]["phase_timer"] == "cuda_events"
    phases = summary["phases"]
    assert phases["forward"]["median_ms"] + phases["backward"]["median_ms"] <= phases["step"]["median_ms"]
    assert summary["peak_memory_bytes"]["backward"] > summary["params"] * 4  # weights + saved activations
    if "H100" in summary["env"]["device_name"] or "H200" in summary["env"]["device_name"]:
        assert 0 < summary["mfu"] < 1
    assert summary["precision_used"] == ("fp32" if dtype == "fp32" else "bf16")


def test_compile_time_is_reported_apart_from_steps(cli_env):
    code, summary, stderr = sysprof_json(["--model", "tiny", "--compile", "--warmup", "1", "--steps", "3"], cli_env)
    assert code == 0, stderr
    assert summary["compile_s"] > 0.5
    assert summary["phases"]["step"]["max_ms"] < summary["compile_s"] * 1e3


@pytest.mark.parametrize("mode, graphs", [("reduce-overhead", "used"), ("max-autotune-no-cudagraphs", "not asked")])
def test_compile_mode_reports_whether_cuda_graphs_were_used(cli_env, mode, graphs):
    code, summary, stderr = sysprof_json(["--model", "tiny", "--compile", "--compile-mode", mode, "--dtype", "bf16",
                                          "--warmup", "2", "--steps", "3"], cli_env)
    assert code == 0, stderr
    assert summary["compile"]["mode"] == mode and summary["compile"]["cuda_graphs"] == graphs


def test_another_process_on_the_gpu_is_a_stored_warning_and_telemetry_is_kept(cli_env):
    from pathlib import Path

    other = subprocess.Popen([sys.executable, "-c", "import time, torch; x = torch.ones(1, device='cuda'); "
                              "print('up', flush=True); time.sleep(300)"], stdout=subprocess.PIPE, text=True,
                             env=cli_env)
    try:
        assert other.stdout.readline().strip() == "up"
        code, summary, stderr = sysprof_json(["--model", "tiny", "--warmup", "2", "--steps", "30"], cli_env)
    finally:
        other.kill()
    assert code == 0, stderr
    shared = [w for w in summary["warnings"] if w["code"] == "gpu_shared"]
    # the other job alone: the runner, forked by a warm-start server or not, is never counted as another process
    assert shared and re.search(rf"^1 other process\(es\) on GPU 0 \(pid {other.pid} ", shared[0]["message"]), \
        summary["warnings"]
    samples = (Path(summary["run_dir"]) / "telemetry.jsonl").read_text().splitlines()
    assert samples and all(json.loads(line)["sm_clock_mhz"] > 0 for line in samples)


def test_oom_is_a_result_not_a_crash(cli_env):
    # --force: the predicted peak refuses this config up front; the test wants the real OOM.
    code, summary, stderr = sysprof_json(["--model", "2.7B", "--ctx", "4096", "--max-ctx", "4096", "--batch", "64",
                                          "--warmup", "0", "--steps", "1", "--force"], cli_env)
    assert code == 1, stderr
    assert summary["status"] == "oom" and summary["error"]["kind"] == "oom"
    assert summary["error"]["phase"] in ("build", "forward", "backward", "optimizer")
    assert summary["error"]["peak_allocated_bytes"] > 0


def test_fp16_uses_grad_scaler_and_runs(cli_env):
    code, summary, stderr = sysprof_json(["--model", "tiny", "--dtype", "fp16", "--warmup", "1", "--steps", "2"],
                                         cli_env)
    assert code == 0, stderr
    assert summary["status"] == "ok" and summary["config"]["dtype"] == "fp16"


def _per_step_ms(analysis, phase):
    return analysis["phases"][phase]["gpu_ns"] / 1e6 / analysis_steps(analysis)


def analysis_steps(analysis):
    return max(1, len([s for s in analysis.get("steps", []) if s.get("step", -1) >= 0]))


@pytest.mark.parametrize("profiler", ["nsys", "torch"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_profiled_pass_gives_kernel_tables_attributed_to_phases(cli_env, tmp_path, profiler, dtype):
    from pathlib import Path
    code, summary, stderr = sysprof_json(["--model", "small", "--dtype", dtype, "--profiler", profiler,
                                          "--warmup", "3", "--steps", "5"], cli_env)
    assert code == 0, stderr
    profile = summary["profile"]
    assert profile["status"] == "ok" and "error" not in profile, profile
    assert profile["inflation"] > 1.0  # profiled steps are slower; they are never reported as the step time
    analysis = json.loads((Path(summary["run_dir"]) / profile["kernels"]).read_text())
    clean = summary["phases"]
    for phase in ("forward", "backward", "optimizer"):
        assert analysis["phases"][phase]["kernels"] > 0
    # Backward must not be lost (nsys's same-thread matching gives it ~0): it launches more kernels than forward.
    assert analysis["phases"]["backward"]["kernels"] > analysis["phases"]["forward"]["kernels"]
    # Kernel time never exceeds the phase's event time by much; a launch-bound phase (bf16) has far less.
    assert _per_step_ms(analysis, "backward") < 1.2 * clean["backward"]["median_ms"]
    assert analysis["gemm_fraction"]["backward"] > 0.3
    # Attention sub-ranges: QKᵀ apart from scale and mask, its kernels GEMMs only; FLOPs set against kernel time.
    attention = analysis["attention"]
    assert list(attention["by_part"]) == ["computing attention scores", "scale and mask", "computing softmax",
                                          "final matmul"] and attention["mask_range"]
    assert attention["matmul_ns"] == attention["by_class"]["gemm"]  # every attention GEMM is QKᵀ or PV
    assert attention["scale_mask_ns"] == attention["by_part"]["scale and mask"] > 0
    assert [row["part"] for row in attention["flops"]] == ["matmul (QKᵀ + PV)", "softmax", "scale + mask"]
    assert (Path(summary["run_dir"]) / "kernels" / "attention_kernels.csv").is_file()


def test_memory_pass_snapshot_agrees_with_counters(cli_env):
    from pathlib import Path
    code, summary, stderr = sysprof_json(["--model", "small", "--memory", "--warmup", "2", "--steps", "2"], cli_env)
    assert code == 0, stderr
    run_dir = Path(summary["run_dir"])
    analysis = json.loads((run_dir / summary["memory"]["analysis"]).read_text())
    assert (run_dir / summary["memory"]["snapshot"]).stat().st_size > 0
    counted_peak = max(summary["peak_memory_bytes"].values())
    # the snapshot sums requested sizes; the counters count allocator blocks (rounded up)
    assert 0.85 * counted_peak < analysis["peak_allocated_bytes"] <= 1.01 * counted_peak
    assert sum(analysis["by_category"].values()) == analysis["peak_allocated_bytes"]
    # the timeline image beside the analysis (matplotlib from .gpu's wheels), and each category's largest block
    assert analysis["images"] == ["timeline.png", "timeline.svg"], analysis["notes"]
    assert (run_dir / summary["memory"]["analysis"]).with_name("timeline.png").stat().st_size > 10_000
    assert analysis["largest_by_category"]["attention_scores"]["size_bytes"] == 4 * 12 * 256 * 256 * 4


def test_oom_with_memory_capture_dumps_the_failing_step(cli_env):
    from pathlib import Path
    code, summary, stderr = sysprof_json(["--model", "2.7B", "--ctx", "4096", "--max-ctx", "4096", "--batch", "64",
                                          "--memory", "--warmup", "0", "--steps", "1", "--force"], cli_env)
    assert code == 1 and summary["status"] == "oom", stderr
    memory = summary["memory"]
    assert memory["status"] == "oom" and (Path(summary["run_dir"]) / memory["snapshot"]).is_file()


def test_external_model_on_cuda_with_kernel_tables_and_memory(cli_env):
    """The user's own model (tests/data/models, a GPT-2 style with .logits output) through every pass."""
    from pathlib import Path

    gpt = Path(__file__).resolve().parents[1] / "data" / "models" / "nanogpt_style" / "gpt.py"
    code, summary, stderr = sysprof_json(["--model", "small", "--model-factory", f"{gpt}:build", "--dtype", "bf16",
                                          "--warmup", "3", "--steps", "5", "--profiler", "torch", "--memory"],
                                         cli_env)
    assert code == 0, stderr
    assert summary["env"]["device_type"] == "cuda"
    assert summary["flops_per_step"] > 0 and 0 < summary["mfu"] < 1  # FLOPs counted on a meta copy of the model
    assert summary["profile"]["status"] == "ok" and summary["memory"]["status"] == "ok"
    assert summary["peak_memory_bytes"]["backward"] > summary["params"] * 4


MODULE_RUN = ["--model", "tiny", "--ctx", "128", "--batch", "4", "--warmup", "2", "--steps", "3", "--nvtx-modules", "3"]


def _module_rows(analysis, phase):
    return {row["category"] for row in analysis["modules"]["rows"] if row["phase"] == phase and not row["sub_range"]}


def test_module_ranges_group_kernels_and_memory_by_module_type(cli_env):
    """--nvtx-modules on the nanoGPT-style example: kernels of forward and backward (the autograd thread's ranges)
    and the memory pass's allocations grouped by module type; the clean pass stays unhooked."""
    from pathlib import Path

    gpt = Path(__file__).resolve().parents[1] / "data" / "models" / "nanogpt_style" / "gpt.py"
    code, summary, stderr = sysprof_json([*MODULE_RUN, "--model-factory", f"{gpt}:build", "--profiler", "nsys",
                                          "--memory"], cli_env)
    assert code == 0, stderr
    run_dir = Path(summary["run_dir"])
    assert summary["profile"]["status"] == "ok" and "error" not in summary["profile"], summary["profile"]
    assert not (run_dir / "modules.json").exists() and (run_dir / "profiled" / "modules.json").is_file()
    kernels = json.loads((run_dir / summary["profile"]["kernels"]).read_text())
    assert kernels["modules"]["ranges"] > 0, kernels["modules"]
    for phase in ("forward", "backward"):
        assert {"attention", "mlp", "norm", "embedding", "head"} <= _module_rows(kernels, phase), phase
    forward_subs = {row["sub_range"] for row in kernels["modules"]["rows"] if row["category"] == "mlp"}
    assert "up projection and gelu" in forward_subs  # the example's own NVTX range, a sub-row of mlp
    memory = json.loads((run_dir / summary["memory"]["analysis"]).read_text())
    modules = memory["modules"]
    assert modules.get("tagged_allocations", 0) > 0, modules
    assert modules["max_bytes"]["attention"] > 0 and modules["max_bytes"]["mlp"] > 0
    assert {"attention", "mlp"} <= {row["category"] for row in modules["largest"]}


def test_module_ranges_under_torch_profiler(cli_env):
    """The same ranges mirrored as record_function ranges: forward always; backward where torch.profiler records
    the autograd thread's ranges (else the analysis says it lacks them)."""
    from pathlib import Path

    gpt = Path(__file__).resolve().parents[1] / "data" / "models" / "nanogpt_style" / "gpt.py"
    code, summary, stderr = sysprof_json([*MODULE_RUN, "--model-factory", f"{gpt}:build", "--profiler", "torch"],
                                         cli_env)
    assert code == 0, stderr
    kernels = json.loads((Path(summary["run_dir"]) / summary["profile"]["kernels"]).read_text())
    assert {"attention", "mlp"} <= _module_rows(kernels, "forward"), kernels["modules"]
    backward = _module_rows(kernels, "backward")
    assert {"attention", "mlp"} <= backward or any("autograd thread" in n for n in kernels["modules"]["notes"])


def test_attention_study_memory_around_backward_and_autocast_on_cuda(cli_env, tmp_path):
    """The handout's memory in use before backward, in absolute terms; bf16 through autocast keeps an fp32
    softmax, so eager bf16 saves more than one bf16 T×T tensor."""
    args = ["study", "attention", "--device", "cuda", "--impl", "eager,compiled,sdpa", "--dtype", "fp32,bf16",
            "--d", "64", "--seq", "1024,4096", "--iters", "5", "--runs-dir", str(tmp_path), "--json"]
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=cli_env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    tables = json.loads(done.stdout)
    memory = next(rows for title, rows in tables.items() if title.startswith("attention memory"))
    for row in memory:
        assert row["inputs MiB"] < row["before backward MiB"] <= row["fwd peak MiB"], row
        assert row["bwd peak MiB"] >= row["after backward MiB"] > row["inputs MiB"], row
    cells = {(r["impl"], r["dtype"], r["seq"]): r for r in memory}
    assert cells[("eager", "fp32", 4096)]["T×T tensors saved"] >= 1
    assert cells[("eager", "bf16", 4096)]["T×T tensors saved"] > 1  # the autocast softmax output is fp32
    assert cells[("sdpa", "fp32", 4096)]["T×T tensors saved"] < 0.1
    flops = next(rows for title, rows in tables.items() if title.startswith("attention FLOPs vs time"))
    assert all(row["matmul ms"] > 0 and row["softmax ms"] > 0 for row in flops)
    assert "before backward MiB by d × seq" in tables
    forward = tables["fwd mean ms by d × seq"]
    assert {"fp32 compiled speedup", "bf16 sdpa speedup"} <= set(forward[0])


def test_a_cuda_run_reads_the_gpus_energy_per_step(cli_env):
    """NVML's counter around each step: joules per step, tokens per joule at the power the steps drew, which agrees
    with tokens/s over watts (the two differ only by median against mean step), and the cap and clock in force."""
    code, summary, stderr = sysprof_json(["--model", "small", "--warmup", "3", "--steps", "30"], cli_env)
    assert code == 0, stderr
    energy = summary["energy"]
    assert 20 < energy["watts"] <= 1.2 * energy["power_limit_w"]
    assert energy["steps"] == 30 and energy["sm_clock_mhz"] > 100
    assert energy["tokens_per_joule"] == pytest.approx(summary["tokens_per_s"] / energy["watts"], rel=0.15)
