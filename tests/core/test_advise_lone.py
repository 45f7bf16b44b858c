"""A plan of one candidate needs no second measurement (it was chosen among none), and the change at once takes FP8
in bf16's place only where FP8 pays: what lets `advise --budget 10` answer 2.7B from fp32 with FP8 on an H200 (the
figures below are that study's, tests/data/studies/advise-2p7b-fp8-h200)."""
import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise.budget_plan import plan
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.memory import seen_of
from sysprof.profiler_core.studies.kinds.advise.together import together

STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-2p7b-fp8-h200"
BASE = RunConfig(model="2.7B", ctx=512, batch=4, dtype="fp32", attention="naive", optimizer_impl="foreach",
                 device="cuda", repeats=4)
H200 = (int(139.8 * 2**30), "GPU 0's memory")
HINT = advise_diagnosis.Hints(attention_share=0.019, optimizer_share=0.070)  # the diagnosis: GEMM-bound, eager
STEP_S, DIAGNOSIS_S, CEILING_S = 1.055, 60, 30


@pytest.fixture
def torchao_installed(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "torchao" else real(name, *a))


def _seen(cfg=BASE):
    summary = json.loads(next((STUDY / "cells").glob("000-*/summary.json")).read_text())
    peaks = {phase: int(peak) for phase, peak in summary["peak_memory_bytes"].items() if peak}
    return seen_of(cfg, peaks, None, "9.0")


def _found(cfg=BASE, limit=H200):
    return advise_diagnosis.weighted(candidates(cfg, True, limit, _seen(cfg)), HINT)


def test_2p7b_from_fp32_takes_fp8_fused_and_sdpa_into_the_change_at_once(torchao_installed):
    at_once = together(BASE, _found(), H200, _seen())
    assert at_once.changes == {"compile": True, "compile_mode": "reduce-overhead", "dtype": "fp8", "batch": 16,
                               "optimizer_impl": "fused", "attention": "sdpa"}


def test_fp8_stays_out_where_it_may_not_pay_or_apply(torchao_installed):
    small = dataclasses.replace(BASE, model="small")  # 768 wide: the nanoGPT-style small ran 4.4× slower in FP8
    assert together(small, _found(small), H200, _seen(small)).changes["dtype"] == "bf16"
    mine = dataclasses.replace(BASE, model_factory="tests/data/models/nanogpt_style/gpt.py:build")
    assert "fp8" not in str(together(mine, _found(mine), H200, _seen(mine)).changes)


def test_without_torchao_the_change_at_once_keeps_bf16(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchao" else real(name, *a))
    assert together(BASE, _found(), H200, _seen()).changes["dtype"] == "bf16"


def test_ten_minutes_plan_the_change_at_once_alone_with_no_second_measurement(torchao_installed):
    found = _found()
    chosen = plan([together(BASE, found, H200, _seen()), *found], 600 - DIAGNOSIS_S - CEILING_S, BASE, "cuda",
                  STEP_S)
    [lone] = chosen.chosen
    assert lone.changes["dtype"] == "fp8" and chosen.second_s == 0.0
    assert chosen.estimate_s < 600 - DIAGNOSIS_S - CEILING_S  # 464 s planned; the study's processes took 402 s


def test_a_second_candidate_brings_back_the_room_to_measure_the_best_again():
    base = RunConfig(model="small", repeats=4)
    found = candidates(base, on_gpu=True, limit=H200)
    wide = plan(found, 10**6, base, "cuda")
    assert len(wide.chosen) > 1 and wide.second_s > 0


def test_steps_the_budget_left_no_room_for_are_said_with_the_answer(tmp_path):
    (tmp_path / "advice.json").write_text("{}")
    advise_refine.record_unaffordable(tmp_path, "a + b", [("batch 128", {"batch": 128})], 366.0)
    refine = json.loads((tmp_path / "advice.json").read_text())["refine"]
    answer = {"answer": "a + b: tokens/s 23.65× [22.59–24.75] of the baseline's, measured once, the lone candidate",
              "command": "sysprof run --batch 64"}
    found = advise_refine._with_unaffordable({"recommended": [answer]}, refine)
    assert found["recommended"][0]["answer"].endswith(
        "; not tried on top of it (over the budget: about 6.1 min for the baseline, the answer and 1 step on top of "
        "it): batch 128")


def test_a_resume_adopts_a_lone_candidate_its_stop_left_without_a_combination(tmp_path, monkeypatch):
    """Stopped after its cells and before the combination was written, the 2.7B study resumes into the same answer
    without measuring anything again."""
    import io
    import shutil
    from contextlib import redirect_stderr, redirect_stdout

    from sysprof.profiler_core.cli import main as cli
    from sysprof.profiler_core.studies import sweep
    from sysprof.profiler_core.studies.kinds.advise import combination as advise_combination
    from sysprof.profiler_core.studies.kinds.advise import study as advise

    study_dir = tmp_path / "advise"
    shutil.copytree(STUDY, study_dir)
    advice = json.loads((study_dir / "advice.json").read_text())
    (study_dir / "advice.json").write_text(json.dumps({k: v for k, v in advice.items() if k != "combination"}))
    ran = []
    monkeypatch.setattr(sweep, "run", lambda *args, **kwargs: ran.append(args))  # every cell is done: nothing to run
    monkeypatch.setattr(advise_combination, "combine",
                        lambda *args: pytest.fail("a lone candidate is not measured again"))
    monkeypatch.setattr(advise, "_ceiling", lambda args, study_dir: None)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cli.main(["advise", "--resume", str(study_dir), "--budget", "1"])
    assert json.loads((study_dir / "advice.json").read_text())["combination"] == advice["combination"]
