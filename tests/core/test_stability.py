"""Instability warnings (analysis/stability.py): each one provoked by test inputs built here, its text checked,
and the run report printing them under a saved run's numbers."""
import json
import shutil
from pathlib import Path

from rich.console import Console

from sysprof.profiler_core.analysis.metrics import phase_stats, summarize_ms
from sysprof.profiler_core.analysis.stability import (
    cpu_load_warnings,
    gpu_process_warnings,
    high_cv_warnings,
    inflation_warnings,
    steps_needed_warnings,
    telemetry_warnings,
    warmup_warnings,
    warnings_for_summary,
)
from sysprof.profiler_core.base.nvml import GpuTelemetry
from sysprof.profiler_core.render.run_report import print_run

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def measured(walls: list[float], **extra) -> list[dict]:
    """Test input: measured step records with these wall times (the phases split them 30/60/10)."""
    return [{"kind": "measured", "index": i, "wall_ms": wall, **extra,
             "phases_ms": {"forward": wall * 0.3, "backward": wall * 0.6, "optimizer": wall * 0.1}}
            for i, wall in enumerate(walls)]


def test_high_within_run_cv_names_the_phases():
    phases = {"forward": summarize_ms([10.0, 10.0, 14.0, 10.0, 12.0]), "step": summarize_ms([20.0, 20.1, 19.9])}
    [warning] = high_cv_warnings(phases)
    assert warning["code"] == "high_cv" and set(warning["phases"]) == {"forward"}
    assert warning["message"].startswith("steps vary within the run (CV ≥ 10%: forward 16%): something competes for "
                                         "the GPU or the host")
    assert warning["message"].endswith("use --repeats")
    assert high_cv_warnings({"step": summarize_ms([20.0, 20.1, 19.9])}) == []
    [repeated] = high_cv_warnings(phases, repeats=3)  # already repeated: do not recommend what it did
    assert repeated["message"].endswith("read the spread between the processes, which compare weighs")


def test_slow_first_steps_say_how_much_warm_up_would_do():
    [warning] = warmup_warnings(measured([30.0, 28.0, 20.0, 20.2, 19.8, 20.1, 20.0]), warmup=2)
    assert warning["message"] == ("the first 2 measured step(s) took 29.00 ms against 20.00 ms for the rest: "
                                  "warm-up too short; 4 warm-up steps would do (--warmup 4)")
    assert (warning["slow_steps"], warning["warmup_needed"]) == (2, 4)
    assert warmup_warnings(measured([20.5, 20.0, 20.2, 19.8, 20.1]), warmup=2) == []  # settled from the start
    assert warmup_warnings(measured([30.0, 28.0, 20.0, 20.2, 19.8], **{"pass": "profiled"}), warmup=2) == []
    assert warmup_warnings(measured([30.0, 20.0]), warmup=0) == []  # too few steps to tell


def test_too_few_steps_for_one_percent_say_how_many_would_do():
    stats = {"mean_ms": 20.0, "std_ms": 1.0, "median_ms": 20.0, "min_ms": 18.0, "max_ms": 22.0, "cv": 0.05, "n": 10}
    [warning] = steps_needed_warnings({"step": stats})
    assert warning["message"] == ("10 steps with a CV of 5.0% give the step time to ±3.1% at 95%; 97 steps would do "
                                  "for ±1% (--steps 97)")  # ⌈(1.96·0.05/0.01)²⌉ = ⌈96.04⌉
    assert steps_needed_warnings({"step": {**stats, "n": 97}}) == []


def test_host_load_above_its_cores():
    [warning] = cpu_load_warnings((34.2, 20.0, 12.0), cpu_count=16)
    assert warning["message"].startswith("host CPU load 34.2 over 16 cores: other processes compete for the CPU that "
                                         "launches the kernels")
    assert cpu_load_warnings(17.5, 16)[0]["load"] == 17.5
    assert cpu_load_warnings((8.0, 8.0, 8.0), 16) == [] and cpu_load_warnings(None, 16) == []


def test_other_processes_on_the_gpu():
    [warning] = gpu_process_warnings([{"pid": 4242, "name": "python"}, 777])
    assert warning["message"].startswith("2 other process(es) on this GPU (pid 4242 (python), pid 777): they share its "
                                         "SMs and memory bandwidth")
    assert "CUDA_VISIBLE_DEVICES" in warning["message"] and gpu_process_warnings([]) == []


def test_clock_changes_and_throttling_from_nvml_samples():
    samples = [{"sm_clock_mhz": 1980, "throttle_reasons": []},
               {"sm_clock_mhz": 1410, "throttle_reasons": ["power cap", "idle"]},
               GpuTelemetry(sm_clock_mhz=1755, throttle_reasons=("power cap", "hw thermal"))]  # what NvmlSampler gives
    clock, throttle = telemetry_warnings(samples)
    assert clock["message"].startswith("the SM clock moved between 1410 and 1980 MHz during the measured steps")
    assert throttle["message"].startswith("the GPU throttled during the measured steps (power cap in 2 of 3 samples, "
                                          "hw thermal in 1 of 3 samples)")
    steady = [{"sm_clock_mhz": 1980, "throttle_reasons": ["idle"]}, {"sm_clock_mhz": 1965, "throttle_reasons": None}]
    assert telemetry_warnings(steady) == [] and telemetry_warnings(None) == []


def test_profiled_and_memory_passes_inflating_time():
    summary = {"profile": {"backend": "nsys", "inflation": 2.15}, "memory": {"inflation": 1.8}}
    profiled, memory = inflation_warnings(summary)
    assert profiled["message"].startswith("the nsys pass ran ×2.15 slower than the clean pass")
    assert memory["message"].startswith("the memory pass ran ×1.80 slower than the clean pass")
    assert inflation_warnings({"profile": {"inflation": 1.4}, "memory": "memory/analysis.json"}) == []


def test_every_warning_from_one_summary():
    steps = measured([30.0, 28.0, 20.0, 22.0, 18.0, 20.0, 21.0, 19.0])
    summary = {"config": {"warmup": 1}, "phases": phase_stats(steps), "profile": {"backend": "torch", "inflation": 3.0}}
    codes = [w["code"] for w in warnings_for_summary(
        summary, steps, loadavg=(40.0, 1.0, 1.0), cpu_count=4, gpu_processes=[99],
        telemetry=[{"sm_clock_mhz": 1000, "throttle_reasons": ["sw thermal"]}, {"sm_clock_mhz": 1900}])]
    assert codes == ["high_cv", "short_warmup", "few_steps", "cpu_load", "gpu_shared", "clock_change", "throttling",
                     "profile_inflation"]


def test_run_report_prints_the_warnings_a_saved_run_shows(tmp_path):
    run = shutil.copytree(RUNS / "tiny-ctx64", tmp_path / "run")
    summary = {**json.loads((run / "summary.json").read_text()), "run_dir": str(run)}
    console = Console(record=True, width=200)
    print_run(console, summary)
    text = console.export_text()
    assert "warning: the first 2 measured step(s) took" in text and "warning: steps vary within the run" in text
    assert f"tiny ({summary['params'] / 1e6:.1f}M params) · ctx 64" in text  # the true count beside the name
    quiet = Console(record=True, width=200)
    print_run(quiet, {**summary, "warnings": []})  # the run stored its warnings (none): those are shown
    assert "warning:" not in quiet.export_text()
