"""The rules table: categories add up at the peak, known totals come out exactly, T² look-alikes are not
mistaken for attention scores. Real fixture plus tiny hand-built traces for single rules."""
from __future__ import annotations

from collections import Counter

from sysprof.profiler_core.memory import CATEGORIES, analyze_snapshot, classify_allocations, replay_trace
from sysprof.profiler_core.memory.categories import ATTENTION_NODES, ATTENTION_OPS

PARAM_BYTES = 128_625_408 * 4
T2_BYTES = 4 * 12 * 256 * 256 * 4  # B·H·T²·4 == B·T·d_ff·4 for this model (12·256 == 3072)


def test_categories_add_up_to_the_peak(analysis):
    assert set(analysis["by_category"]) == set(CATEGORIES)
    assert sum(analysis["by_category"].values()) == analysis["peak_allocated_bytes"]


def test_parameters_and_adamw_state_are_exact(analysis):
    assert analysis["by_category"]["parameters"] == PARAM_BYTES
    assert analysis["by_category"]["optimizer_state"] == 2 * PARAM_BYTES
    assert analysis["optimizer"] == "adam"


def test_gradients_reach_one_full_copy_of_the_parameters(analysis):
    # Peak is early in backward (few gradients yet); all of them coexist during the optimizer step.
    assert analysis["by_category"]["gradients"] < PARAM_BYTES // 10
    assert analysis["max_by_category"]["gradients"] == PARAM_BYTES


def test_attention_scores_only_from_score_ops(snapshot):
    replay = replay_trace(snapshot)
    categories, facts = classify_allocations(replay)
    assert facts["attention_score_sizes"] == [T2_BYTES]
    same_size_forward = Counter(
        (category == "attention_scores", alloc.stack.op)
        for alloc, category in zip(replay.allocations, categories)
        if alloc.size == T2_BYTES and alloc.alloc_phase == "forward" and alloc.alloc_step == 0)
    # per layer: scores bmm, scale div, mask where, softmax -> attention; FFN w1/w3 mm, silu, mul -> not.
    assert same_size_forward == Counter({(True, "bmm"): 12, (True, "div_Tensor"): 12, (True, "where_self"): 12,
                                         (True, "_softmax"): 12, (False, "mm"): 24, (False, "silu"): 12,
                                         (False, "mul_Tensor"): 12})
    for alloc, category in zip(replay.allocations, categories):
        if category == "attention_scores":
            assert alloc.stack.ops & ATTENTION_OPS or alloc.stack.autograd_node in ATTENTION_NODES


def test_at_the_peak_each_layer_holds_one_softmax_output(analysis):
    assert analysis["by_category"]["attention_scores"] == 12 * T2_BYTES


def test_every_allocation_gets_one_known_category(snapshot):
    replay = replay_trace(snapshot)
    categories, _ = classify_allocations(replay)
    assert len(categories) == len(replay.allocations) and set(categories) <= set(CATEGORIES)


# ---- tiny hand-built snapshots, one rule each -------------------------------------------------------

def frames(*python: tuple[str, str], cpp: tuple[str, ...] = ()) -> list[dict]:
    return [{"name": n, "filename": "??", "line": 0} for n in cpp] + [
        {"name": name, "filename": filename, "line": 1} for filename, name in python]


FORWARD = frames(("/home/u/models/transformer.py", "forward"))
BACKWARD = frames(cpp=("torch::autograd::Engine::thread_main(std::shared_ptr<X> const&)",))
OPTIMIZER = frames(("/venv/lib/python3.11/site-packages/torch/optim/adamw.py", "step"))


def event(action, addr, size, stack):
    return {"action": action, "addr": addr, "size": size, "frames": stack}


def tiny_snapshot(trace: list[dict], active_blocks: list[tuple[int, int]]) -> dict:
    blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated"} for a, s in active_blocks]
    return {"segments": [{"device": 0, "total_size": 1 << 30, "blocks": blocks}], "device_traces": [trace]}


def categories_by_address(snap: dict) -> dict[int, str]:
    replay = replay_trace(snap)
    categories, _ = classify_allocations(replay)
    return {alloc.address: category for alloc, category in zip(replay.allocations, categories)}


def test_lifetime_rules_on_a_first_step_recording():
    # Recording from the very first step: parameter (addr 1) predates it, AdamW state is created inside it.
    trace = [event("alloc", 10, 100, FORWARD), event("alloc", 11, 50, FORWARD),
             event("free_completed", 11, 50, FORWARD),
             event("alloc", 20, 64, BACKWARD), event("free_completed", 10, 100, BACKWARD),
             event("alloc", 30, 64, OPTIMIZER), event("alloc", 31, 64, OPTIMIZER), event("alloc", 32, 64, OPTIMIZER),
             event("free_completed", 32, 64, OPTIMIZER), event("free_completed", 20, 64, OPTIMIZER)]
    found = categories_by_address(tiny_snapshot(trace, [(1, 64), (30, 64), (31, 64)]))
    assert found == {1: "parameters", 10: "activations", 11: "temporaries", 20: "gradients",
                     30: "optimizer_state", 31: "optimizer_state", 32: "temporaries"}


def test_pre_recording_blocks_split_by_count_when_state_predates_recording():
    trace = [event("alloc", 10, 8, OPTIMIZER), event("free_completed", 10, 8, OPTIMIZER)]
    blocks = [(1, 64), (2, 64), (3, 64), (4, 32), (5, 32), (6, 32), (7, 4096)]
    found = categories_by_address(tiny_snapshot(trace, blocks))
    assert Counter(found[a] for a in range(1, 8)) == Counter(parameters=2, optimizer_state=4, other=1)


def test_previous_steps_gradient_freed_by_zero_grad_without_recorded_alloc():
    trace = [event("free_completed", 99, 256, OPTIMIZER)]
    result = analyze_snapshot(tiny_snapshot(trace, []))
    assert result["baseline_bytes"] == 256 and result["peak_allocated_bytes"] == 256
    assert result["by_category"]["gradients"] == 256
    assert any("without a recorded alloc" in note for note in result["notes"])
