"""The candidate of every kind of change at once, and compiled candidates in fewer shared processes: what lets a
5-minute budget measure CUDA graphs, bf16 and a larger batch together on a launch-bound step (planned here from the
figures an H200 measured for the CS336-style user model: diagnosis 37 s, an 87 ms step, every phase launch-bound)."""
import dataclasses
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise.budget_plan import plan, processes_of
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.memory import Seen
from sysprof.profiler_core.studies.kinds.advise.together import together

ROPE_LM = Path(__file__).resolve().parents[2] / "benchmarks" / "user_models" / "rope_lm"
USER = RunConfig(model="small", ctx=256, batch=4, device="cuda", repeats=4, model_factory=f"{ROPE_LM}/model.py:build",
                 optimizer=f"{ROPE_LM}/optim.py:AdamW")
H200 = (139 * 2**30, "GPU 0's memory")
LAUNCH_BOUND = advise_diagnosis.Hints(launch_bound=("forward", "backward", "optimizer"), optimizer_share=0.13)


def weighted(cfg=USER, limit=H200):
    return advise_diagnosis.weighted(candidates(cfg, True, limit, Seen()), LAUNCH_BOUND)


def test_every_kind_of_change_at_once_leaves_out_what_may_not_apply_or_takes_minutes():
    at_once = together(USER, weighted(), H200, Seen())
    assert at_once.changes == {"compile": True, "compile_mode": "reduce-overhead", "batch": 16, "dtype": "bf16"}
    assert at_once.name == "torch.compile reduce-overhead + batch 16 + bf16 autocast"  # the diagnosis's order
    assert at_once.config.batch == 16 and at_once.config.compiles and at_once.prior > 3


def test_no_candidate_at_once_where_fewer_than_two_kinds_apply():
    only_batch = dataclasses.replace(USER, dtype="bf16", compile=True, compile_mode="reduce-overhead")
    assert together(only_batch, weighted(only_batch), H200, Seen()) is None


def test_a_five_minute_budget_measures_it_first_and_three_more_beside_it():
    found = weighted()
    found = [together(USER, found, H200, Seen()), *found]
    chosen = plan(found, 300 - 37 - 15, USER, "cuda", 0.087, shared=True).chosen
    assert chosen[0].name.startswith("torch.compile reduce-overhead + batch 16") and len(chosen) >= 4
    fresh = plan(found, 300 - 37 - 15, USER, "cuda", 0.087, shared=False).chosen
    assert len(fresh) < len(chosen)


def test_a_compiled_candidate_runs_two_processes_an_eager_one_all_of_them():
    compiled = dataclasses.replace(USER, compile=True)
    assert processes_of(compiled, USER, shared=True) == 2 and processes_of(USER, USER, shared=True) == 4
    assert processes_of(compiled, USER, shared=False) == 2  # fresh ones too: each pays a compile
    assert processes_of(compiled, dataclasses.replace(USER, repeats=1), shared=True) == 1


def test_on_a_cpu_it_leaves_out_the_compile_whose_c_plus_plus_takes_minutes():
    tiny = RunConfig(model="tiny", ctx=64, batch=4, device="cpu", repeats=4)
    found = advise_diagnosis.weighted(candidates(tiny, False, None, Seen()), advise_diagnosis.Hints())
    at_once = together(tiny, found, None, Seen())
    assert "compile" not in at_once.changes and at_once.changes["batch"] == 16 and at_once.changes["dtype"] == "bf16"


def _seen_on_the_h200():
    """What the diagnosis of the CS336-style user model measured on an H200 (saved study): 3.40 GB at batch 4 in
    the backward, 2.25 GB in the optimizer step (its weights, gradients and AdamW state)."""
    from sysprof.profiler_core.studies.document import Study
    from sysprof.profiler_core.studies.kinds.advise.stages import diagnosis_seen

    study = Study.load(Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-together-h200")
    return study.cells[0].config, diagnosis_seen(study.cells[0], study.cells[0].config)


def test_once_the_diagnosis_measured_memory_it_takes_the_largest_batch_half_the_device_holds():
    """Brute force on that H200: batch 16 + bf16 + reduce-overhead 16.7×, batch 32 30.9×, batch 64 37.5×. The
    measured split (what stays between steps, what grows with the batch) puts batch 64 at about 21 GB."""
    from sysprof.profiler_core.studies.kinds.advise.memory import estimated_peak

    base, seen = _seen_on_the_h200()
    assert seen.batch == 4 and 2.2e9 < seen.kept_bytes < 2.3e9 and 3.3e9 < seen.measured_peak < 3.5e9
    assert 20e9 < estimated_peak(dataclasses.replace(base, batch=64), seen) < 21e9
    h200 = together(base, weighted(base), H200, seen)
    assert h200.changes["batch"] == 64 and "batch 64" in h200.name and h200.prior > together(
        base, weighted(base), H200, Seen()).prior
    a100 = together(base, weighted(base, (40 * 10**9, "GPU 0's memory")), (40 * 10**9, "GPU 0's memory"), seen)
    assert a100.changes["batch"] == 32  # batch 64's 21 GB is more than half of 40 GB
    snug = (8 * 10**9, "GPU 0's memory")  # where not even the ladder's first step fits, the group's own batch stays
    assert together(base, weighted(base, snug), snug, seen).changes["batch"] == 16


def test_a_batch_a_users_model_would_not_fit_is_refused_from_its_measured_split():
    from sysprof.profiler_core.studies.kinds.advise.memory import sharing_problem

    base, seen = _seen_on_the_h200()
    small_card = (12 * 10**9, "GPU 0's memory")  # batch 16's 6.8 GB fits in 95%, batch 64's 21 GB would not
    found = {c.name: c for c in candidates(base, True, small_card, seen)}
    assert found["batch 16"].reason is None
    assert sharing_problem([base, dataclasses.replace(base, batch=64)], H200, seen) is None
    too_big = sharing_problem([base, dataclasses.replace(base, batch=64)], small_card, seen)
    assert too_big.startswith("together they would need about")
    from sysprof.profiler_core.studies.kinds.advise.memory import fit_problem_seen

    assert fit_problem_seen(dataclasses.replace(base, batch=64), small_card, seen).startswith("would need about")
