"""The advisor's last stage: candidates not in the answer, each added to it, as far as the budget affords; and the
answer it makes of a real CPU study (tests/data/studies/advise-refine-cpu: the CS336-style model at d_model 64)."""
import dataclasses
import shutil
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise import step_rows as advise_step_rows
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.kinds.advise.budget_plan import by_expected_gain
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.memory import Seen
from sysprof.profiler_core.studies.kinds.advise.recommendation import shared_caveat

DATA = Path(__file__).resolve().parents[1] / "data" / "studies"
SMALL = RunConfig(model="small", ctx=256, batch=4, device="cuda", repeats=4, warmup=2, steps=10)
H100 = (80 * 2**30, "GPU 0's memory")


def _found(cfg: RunConfig = SMALL):
    return by_expected_gain(candidates(cfg, True, H100, Seen()))


def test_proposals_add_to_the_answer_what_it_does_not_change_yet():
    proposed = dict(advise_refine.proposals(SMALL, {"batch": 16, "dtype": "bf16"}, _found(), H100, Seen()))
    assert "batch 8" not in proposed and "bf16 autocast" not in proposed  # groups the answer already changed
    assert "TF32 for fp32 matmuls" not in proposed  # bf16's alternative: no fp32 matmul left to speed up
    assert proposed["torch.compile reduce-overhead"] == {"batch": 16, "dtype": "bf16", "compile": True,
                                                         "compile_mode": "reduce-overhead"}
    assert proposed["fused optimizer step"] == {"batch": 16, "dtype": "bf16", "optimizer_impl": "fused"}


def test_an_answer_that_grew_the_batch_is_tried_at_twice_that_batch_first():
    """bf16 halves the activations and CUDA graphs remove the launch gaps a small batch filled: the next doubling
    may now pay, where the first stage's largest batch was the best one it could see."""
    proposed = advise_refine.proposals(SMALL, {"batch": 16, "dtype": "bf16"}, _found(), H100, Seen())
    assert proposed[0] == ("batch 32", {"batch": 32, "dtype": "bf16"})
    unchanged = dict(advise_refine.proposals(SMALL, {"dtype": "bf16"}, _found(), H100, Seen()))
    assert "batch 32" not in unchanged and unchanged["batch 16"] == {"dtype": "bf16", "batch": 16}
    tight = advise_refine.proposals(SMALL, {"batch": 16, "dtype": "bf16"}, _found(), (3 * 2**30, "small"), Seen())
    assert "batch 32" not in dict(tight)  # it would not fit


def test_the_budget_takes_proposals_in_order_while_their_estimate_fits():
    proposed = advise_refine.proposals(SMALL, {"batch": 16}, _found(), H100, Seen())
    names = [name for name, _ in proposed]
    assert names.index("torch.compile reduce-overhead") < names.index("fused optimizer step")
    chosen, left_out, spent = advise_refine.affordable(SMALL, ({"batch": 16}, 0.05), (15.0, 2.0, True), 150.0, proposed)
    assert chosen and left_out and spent <= 150.0
    assert {name for name, _ in chosen} | {name for name, _ in left_out} == set(names)
    everything, none_left, _ = advise_refine.affordable(SMALL, ({"batch": 16}, 0.05), (15.0, 2.0, True), 1e6, proposed)
    assert len(everything) == len(proposed) and not none_left
    nothing, all_left, _ = advise_refine.affordable(SMALL, ({"batch": 16}, 0.05), (15.0, 2.0, True), 10.0, proposed)
    assert not nothing and len(all_left) == len(proposed)


def test_a_cpu_study_answers_with_a_gain_its_first_bottleneck_hid(tmp_path):
    """bf16 alone was 15% slower than the baseline at batch 4, so the combination never tried it; on top of the
    combination's answer (batch 16) it was 13% faster, and it becomes the answer."""
    study_dir = shutil.copytree(DATA / "advise-refine-cpu", tmp_path / "study")
    tables = advise_refine.tables(Study.load(study_dir))
    alone = {row["candidate"]: row for row in tables["advice: each candidate against the baseline, interleaved"]}
    assert alone["bf16 autocast"]["why"].startswith("slower")
    combined = tables["measured again: the best candidate, then each next one added, against the step before"]
    assert [row["step"] for row in combined] == ["baseline", "batch 16", "batch 16 + compiled optimizer step"]
    rows = {row["step"]: row for row in tables[advise_refine.REFINE_TABLE]}
    assert list(rows) == ["baseline", "batch 16", "batch 16 + compiled optimizer step", "batch 16 + bf16 autocast",
                          "batch 16 + torch.compile default"]
    assert rows["batch 16 + bf16 autocast"]["why"] == "helps"
    assert rows["batch 16 + torch.compile default"]["why"] == advise_step_rows.LEFT_OUT
    [answer] = tables[RECOMMENDED_TABLE]
    assert answer["answer"] == ("batch 16 + bf16 autocast: tokens/s 1.86× [1.76–1.96] of the baseline's measured "
                                "beside it, 13% faster than batch 16")
    assert answer["command"].startswith("sysprof run ") and "--batch 16" in answer["command"]
    assert "--dtype bf16" in answer["command"]


def test_a_study_without_the_stage_keeps_its_answer():
    study = Study.load(DATA / "advise-tiny-cpu")
    tables = advise_refine.tables(study)
    assert advise_refine.REFINE_TABLE not in tables
    assert tables[RECOMMENDED_TABLE] == advise_tables.tables(study)[RECOMMENDED_TABLE]


def test_shared_processes_let_a_short_budget_take_the_cheap_arms_beside_a_compile():
    """The H200 run of the CS336-style model (fp32, ctx 256, batch 4, `--budget 4 --repeats 2`, a 70 ms step, every
    phase launch-bound) planned reduce-overhead and batch 16 and left bf16, TF32 and batch 8 out "over the budget
    (about 0.0 min more)": the room kept to measure the compile again was a cold compile's. As an arm it is measured
    again with its graphs cached, and an eager arm costs its steps: the cheap ones fit beside it now (here the built-in
    small model, whose SDPA and fused-step candidates apply too)."""
    from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
    from sysprof.profiler_core.studies.kinds.advise.budget_plan import plan

    base = dataclasses.replace(SMALL, repeats=2, warmup=3, steps=20)
    hint = advise_diagnosis.Hints(launch_bound=("forward", "backward", "optimizer"))
    found = advise_diagnosis.weighted(candidates(base, True, H100, Seen()), hint)
    shared = plan(found, 4 * 60 - 35, base, "cuda", step_s=0.07, shared=True)
    names = [c.name for c in shared.chosen]
    assert names[:2] == ["torch.compile reduce-overhead", "batch 16"]
    assert {"bf16 autocast", "TF32 for fp32 matmuls"} <= set(names) and len(names) >= 5
    fresh = plan(found, 4 * 60 - 35, base, "cuda", step_s=0.07, shared=False)
    # a fresh process a candidate's repeat: the compile alone fits, with no room to measure a second beside it
    assert [c.name for c in fresh.chosen] == ["torch.compile reduce-overhead"] and fresh.second_s == 0


def test_a_compiled_step_measured_beside_an_eager_baseline_says_its_ratio_may_read_high():
    """On an H200 eager arms of a shared process ran at 0.86–0.97 of a process of their own while compiled arms
    ran at theirs: a compiled answer's ratio over an eager baseline may read high, and the answer says so."""
    import json

    study = Study.load(DATA / "advise-refine-cpu")
    refine = json.loads((DATA / "advise-refine-cpu" / "advice.json").read_text())["refine"] | {"offset": 1}
    assert "may read high" in shared_caveat(refine, study, "batch 16 + compiled optimizer step")
    assert shared_caveat(refine, study, "batch 16 + bf16 autocast") == ""
    assert shared_caveat(refine | {"shared": False}, study, "batch 16 + compiled optimizer step") == ""
