"""--nvtx-modules in the runner, on the CPU: the hooks' NVTX and allocator calls go to a recorder instead of CUDA,
so every push has its pop, every start its end, and tags follow the innermost module, for the built-in model and
the nanoGPT-style example; nothing is hooked in the clean timing pass; a model the hooks cannot wrap fails in one
line that names the flag."""
from __future__ import annotations

import functools
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sysprof.models.phases import module_range, parse_module_range
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner import engine
from sysprof.profiler_core.runner.module_ranges import ModuleRanges, hooked_modules, install_module_ranges
from sysprof.profiler_core.runner.timing import StepInstruments, run_step
from sysprof.profiler_core.runner.workload import build_workload

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "tests" / "data" / "models" / "nanogpt_style" / "gpt.py"
TINY = {"model": "tiny", "device": "cpu", "ctx": 16, "batch": 2, "warmup": 1, "steps": 2}
MODELS = {"built-in": {}, "nanogpt_style": {"model_factory": f"{GPT}:build", "model_args": ("n_layer=2",)}}


class Recorder:
    """Stands in for NVTX and the CUDA allocator: keeps every call in order."""

    def __init__(self):
        self.calls: list[tuple[str, object]] = []
        self.ids = itertools.count()

    def push(self, name):
        self.calls.append(("push", name))

    def pop(self):
        self.calls.append(("pop", None))

    def start(self, name):
        handle = next(self.ids)
        self.calls.append(("start", (name, handle)))
        return handle

    def end(self, handle):
        self.calls.append(("end", handle))

    def tag(self, text):
        self.calls.append(("tag", text))

    def named(self, kind):
        return [value if kind != "start" else value[0] for k, value in self.calls if k == kind]


def pushed_names(calls) -> list[str]:
    """The names pushed, after checking that no pop finds the stack empty and that it ends empty."""
    stack, names = [], []
    for kind, value in calls:
        if kind == "push":
            stack.append(value)
            names.append(value)
        elif kind == "pop":
            assert stack, "pop without a push"
            stack.pop()
    assert stack == []
    return names


def started_names(calls) -> list[str]:
    """The names started, after checking that every start has exactly one end and no end comes first."""
    open_ranges, names = {}, []
    for kind, value in calls:
        if kind == "start":
            open_ranges[value[1]] = value[0]
            names.append(value[0])
        elif kind == "end":
            assert value in open_ranges, f"end of {value} that is not open"
            del open_ranges[value]
    assert open_ranges == {}
    return names


def workload(model: str, **overrides):
    cfg = RunConfig(**{**TINY, **MODELS[model], **overrides})
    return build_workload(cfg, torch.device("cpu"))


def run_steps(work, ranges: ModuleRanges, steps: int = 2) -> None:
    tools = StepInstruments(work.device)
    for _ in range(steps):
        try:
            run_step(work, tools)
        finally:
            ranges.end_step()  # as the runner does after every step


def expected_names(model: torch.nn.Module, depth: int) -> set[str]:
    # Containers without a forward of their own (ModuleList) are hooked but never run.
    return {module_range(path, type(module).__name__) for path, module in hooked_modules(model, depth)
            if not isinstance(module, torch.nn.ModuleList)}


@pytest.mark.parametrize("model", list(MODELS))
def test_forward_pushes_pop_and_backward_starts_end(model):
    work, recorder = workload(model), Recorder()
    ranges = install_module_ranges(work.model, 3, "nsys", calls=recorder)
    run_steps(work, ranges)
    forward, backward = pushed_names(recorder.calls), started_names(recorder.calls)
    assert set(forward) == expected_names(work.model, 3)
    assert len(forward) == 2 * len(set(forward))  # once per step: no module hooked twice
    categories = {parse_module_range(name)[0].rsplit(".", 1)[-1] for name in backward}
    assert {"attn", "lm_head" if model == "built-in" else "head"} <= categories
    assert set(backward) <= set(forward)


@pytest.mark.parametrize("model, embedding", [("built-in", "token_embeddings"), ("nanogpt_style", "wte")])
def test_an_embeddings_backward_range_holds_its_own_gradient(model, embedding):
    """Token ids need no gradient, so PyTorch fires the module's backward hook before its backward ran; the range
    stays open until its weight's gradient is accumulated (nanoGPT's weight is tied to the head: after both)."""
    work, recorder = workload(model), Recorder()
    ranges = install_module_ranges(work.model, 1, "nsys", calls=recorder)
    weight = getattr(work.model, embedding).weight
    weight.register_hook(lambda grad: recorder.calls.append(("gradient", embedding)))
    run_steps(work, ranges, steps=1)
    started_names(recorder.calls)
    name = module_range(embedding, "Embedding")
    start = next(i for i, (k, v) in enumerate(recorder.calls) if k == "start" and v[0] == name)
    handle = recorder.calls[start][1][1]
    end = recorder.calls.index(("end", handle))
    assert start < recorder.calls.index(("gradient", embedding)) < end


def test_depth_limits_the_hooked_modules():
    work, recorder = workload("nanogpt_style"), Recorder()
    run_steps(work, install_module_ranges(work.model, 1, "nsys", calls=recorder), steps=1)
    paths = {parse_module_range(name)[0] for name in pushed_names(recorder.calls)}
    assert paths == {"wte", "wpe", "ln_f", "head"}  # `blocks` is a ModuleList: hooked, never called


def hook_count(model: torch.nn.Module) -> int:
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) + len(m._backward_hooks)
               + len(m._backward_pre_hooks) for m in model.modules())


def test_nothing_is_hooked_in_the_clean_pass_or_at_depth_0():
    work, recorder = workload("built-in"), Recorder()
    assert install_module_ranges(work.model, 0, "nsys", calls=recorder) is None
    assert install_module_ranges(work.model, 3, "none", calls=recorder) is None
    assert hook_count(work.model) == 0
    ranges = install_module_ranges(work.model, 2, "torch", calls=recorder)
    assert hook_count(work.model) > 0
    ranges.remove()
    assert hook_count(work.model) == 0 and recorder.calls == []


def test_memory_tags_follow_the_innermost_module_and_clear_at_step_end():
    work, recorder = workload("built-in"), Recorder()
    run_steps(work, install_module_ranges(work.model, 3, "memory", calls=recorder), steps=1)
    stack: list[str] = []
    for (kind, value), following in zip(recorder.calls, recorder.calls[1:]):
        if kind == "push":
            stack.append(value)
        elif kind == "pop":
            stack.pop()
        if kind in ("push", "pop"):
            assert following == ("tag", stack[-1] if stack else "")  # entering sets it, leaving restores the parent
        if kind == "start":
            assert following == ("tag", value[0])
    assert recorder.calls[-1] == ("tag", "")
    assert install_module_ranges(work.model, 3, "nsys", calls=Recorder()).tagging is False


def test_forward_mode_opens_no_backward_ranges():
    work, recorder = workload("built-in", mode="forward"), Recorder()
    run_steps(work, install_module_ranges(work.model, 2, "nsys", calls=recorder), steps=1)
    assert pushed_names(recorder.calls) and recorder.named("start") == []


def test_ranges_left_open_are_closed_at_step_end():
    work, recorder = workload("built-in"), Recorder()
    ranges = install_module_ranges(work.model, 1, "nsys", calls=recorder)
    ranges.backward_pre(work.model.lm_head, (None,))  # a backward whose closing hook never comes
    ranges.end_step()
    assert started_names(recorder.calls) == [module_range("lm_head", "Linear")]


def test_an_in_place_change_the_hooks_cannot_wrap_is_explained():
    work, recorder = workload("built-in", model_factory=f"{GPT}:in_place"), Recorder()
    ranges = install_module_ranges(work.model, 1, "nsys", calls=recorder)
    with pytest.raises(RuntimeError) as failure:
        run_steps(work, ranges, steps=1)
    pushed_names(recorder.calls)  # still balanced: the post-hooks run when forward raises
    reason = ranges.explain(failure.value)
    assert reason.startswith("--nvtx-modules:") and "2 (ReLU)" in reason and "\n" not in reason
    assert ranges.explain(RuntimeError("CUDA error: misaligned address")) is None


@pytest.fixture
def recorded_runner(monkeypatch):
    """engine.Runner with the hooks' calls going to a recorder (there is no CUDA to take them here)."""
    recorder = Recorder()
    monkeypatch.setattr(engine, "install_module_ranges", functools.partial(install_module_ranges, calls=recorder))
    return recorder


def test_runner_writes_modules_json_in_a_capture_pass_only(recorded_runner, tmp_path, capsys):
    cfg = RunConfig(**TINY, **MODELS["nanogpt_style"], nvtx_modules=3)
    for name in ("profiled", "clean"):
        (tmp_path / name).mkdir()
    assert engine.execute(engine.Runner(cfg, tmp_path / "profiled", capture="nsys")) == 0
    modules = json.loads((tmp_path / "profiled" / "modules.json").read_text())
    assert modules["depth"] == 3
    assert modules["modules"]["blocks.0.attn"] == {"type": "CausalSelfAttention", "own_category": "attention",
                                                   "category": "attention", "params": 4 * 128 * 128 + 4 * 128}
    assert [modules["modules"][p]["category"] for p in ("blocks.0.mlp", "blocks.0.ln_1", "blocks.0", "wte")] == [
        "mlp", "norm", "other", "embedding"]
    assert "module ranges on" in capsys.readouterr().out
    pushed_names(recorded_runner.calls)
    started_names(recorded_runner.calls)
    assert engine.execute(engine.Runner(cfg, tmp_path / "clean", capture="none")) == 0
    assert not (tmp_path / "clean" / "modules.json").exists()


def test_runner_fails_the_pass_in_one_line_when_the_hooks_cannot_wrap_the_model(recorded_runner, tmp_path):
    cfg = RunConfig(**TINY, model_factory=f"{GPT}:in_place", nvtx_modules=2)
    assert engine.execute(engine.Runner(cfg, tmp_path, capture="nsys")) == 1
    error = json.loads((tmp_path / "summary.json").read_text())["error"]
    assert error["kind"] == "config" and error["message"].startswith("--nvtx-modules:")


@pytest.mark.slow
def test_the_flag_without_a_capture_pass_says_so(tmp_path):
    from sysprof.profiler_core.cli.main import execute_run

    seen: list[dict] = []
    summary = execute_run(RunConfig(**TINY, nvtx_modules=2), str(tmp_path), on_event=seen.append)
    assert summary["status"] == "ok"
    assert any("--nvtx-modules adds ranges in the profiled and memory passes" in e.get("message", "") for e in seen)
    assert not list(tmp_path.rglob("modules.json"))  # the clean pass never hooks


@pytest.mark.slow
def test_the_hook_cost_benchmark_runs_on_the_cpu():
    result = subprocess.run([sys.executable, "-m", "benchmarks.overhead.module_hooks", "--device", "cpu",
                             "--model", "tiny", "--ctx", "16", "--batch", "2", "--rounds", "1", "--steps", "2"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "×" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| off", "| module ranges", "| ranges + memory tags"]


def test_under_torch_profiler_the_ranges_are_mirrored_as_record_function_ranges(monkeypatch, tmp_path):
    """What the torch backend reads back: user_annotation events named like the NVTX ranges (the NVTX calls
    themselves are stubbed: a CPU build of torch has none)."""
    from sysprof.profiler_core.kernels.torch_trace import load_trace_events
    from sysprof.profiler_core.runner.module_ranges import CudaRangeCalls

    for name, stub in (("range_push", lambda name: 0), ("range_pop", lambda: 0), ("range_start", lambda name: 7),
                       ("range_end", lambda range_id: None)):
        monkeypatch.setattr(torch.cuda.nvtx, name, stub)
    work = workload("nanogpt_style")
    ranges = install_module_ranges(work.model, 3, "torch", calls=CudaRangeCalls(mirror=True, tag_memory=False))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        run_steps(work, ranges, steps=1)
    profiler.export_chrome_trace(str(tmp_path / "trace.json"))
    names = [e["name"] for e in load_trace_events(tmp_path / "trace.json") if e.get("cat") == "user_annotation"]
    forward = expected_names(work.model, 3)
    assert forward <= set(names)
    assert names.count(module_range("blocks.0.attn", "CausalSelfAttention")) == 2  # its forward and its backward
