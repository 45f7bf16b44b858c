"""Predicted bytes from plain numbers, against values computed by hand, and the comparison rows."""
from __future__ import annotations

import pytest

from sysprof.profiler_core.memory import compare_predicted, predict_memory

# CS336 "small", batch 4, ctx 256, fp32 (../shared/fixtures/README.md)
SMALL = dict(params=128_625_408, d_model=768, d_ff=3072, layers=12, heads=12, vocab=10_000, ctx=256, batch=4)


def test_small_fp32_train_by_hand():
    predicted = predict_memory(**SMALL, mode="train")
    assert predicted["parameters_bytes"] == 514_501_632  # 128,625,408 x 4
    assert predicted["gradients_bytes"] == 514_501_632
    assert predicted["optimizer_state_bytes"] == 1_029_003_264  # m and v, fp32
    assert predicted["residual_stream_per_layer_bytes"] == 3_145_728  # 4·256·768·4
    assert predicted["residual_stream_per_layer_mib"] == 3.0
    assert predicted["residual_stream_all_layers_bytes"] == 12 * 3_145_728
    assert predicted["attention_scores_per_layer_bytes"] == 12_582_912  # 4·12·256²·4 = 12 MiB
    assert predicted["attention_scores_all_layers_bytes"] == 150_994_944
    assert predicted["ffn_hidden_per_layer_bytes"] == 12_582_912  # 4·256·3072·4: same as the scores here
    assert predicted["logits_bytes"] == 40_960_000


def test_modes_and_precision():
    forward = predict_memory(**SMALL, mode="forward")
    assert forward["gradients_bytes"] == 0 and forward["optimizer_state_bytes"] == 0
    fwd_bwd = predict_memory(**SMALL, mode="forward_backward")
    assert fwd_bwd["gradients_bytes"] == 514_501_632 and fwd_bwd["optimizer_state_bytes"] == 0
    bf16 = predict_memory(**SMALL, activation_bytes=2)
    assert bf16["residual_stream_per_layer_mib"] == 1.5
    assert bf16["optimizer_state_bytes"] == 1_029_003_264  # AdamW state stays fp32


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="mode"):
        predict_memory(**SMALL, mode="inference")
    with pytest.raises(ValueError, match="negative"):
        predict_memory(**{**SMALL, "batch": -1})


def test_compare_rows_explain_only_large_gaps():
    predicted = predict_memory(**SMALL)
    measured = {"parameters": 514_501_632, "gradients": 0, "optimizer_state": 1_029_003_264,
                "activations": 1_034_326_016, "attention_scores": 150_994_944}
    rows = {row["item"]: row for row in compare_predicted(predicted, measured)}
    assert set(rows) == {"parameters", "gradients", "optimizer_state", "activations", "attention_scores",
                         "residual_stream_per_layer", "peak"}
    assert rows["peak"]["measured_bytes"] is None  # the session adds the measured peak; none given here
    residual = rows["residual_stream_per_layer"]  # B·T·d·bytes, a unit: predicted, never measured
    assert residual["predicted_bytes"] == SMALL["batch"] * SMALL["ctx"] * SMALL["d_model"] * 4
    assert residual["measured_bytes"] is None and "not measured" in residual["explanation"]
    assert rows["parameters"]["ratio"] == 1.0 and rows["parameters"]["explanation"] == ""
    assert rows["attention_scores"]["ratio"] == 1.0
    assert rows["activations"]["ratio"] == pytest.approx(1_034_326_016 / predicted["saved_activations_bytes"],
                                                         rel=1e-4)
    assert "forward temporaries" in rows["activations"]["explanation"]  # a gap over 10% says why
    assert rows["gradients"]["ratio"] == 0.0 and "zero_grad" in rows["gradients"]["explanation"]


def test_missing_measurement_gives_none():
    rows = compare_predicted(predict_memory(**SMALL, mode="forward"), {"parameters": 600_000_000})
    by_item = {row["item"]: row for row in rows}
    assert by_item["activations"]["measured_bytes"] is None and by_item["activations"]["ratio"] is None
    assert by_item["parameters"]["ratio"] == pytest.approx(600_000_000 / 514_501_632, rel=1e-4)
    assert "master weights" in by_item["parameters"]["explanation"]


def test_prediction_matches_the_real_snapshot(analysis):
    rows = {r["item"]: r for r in compare_predicted(predict_memory(**SMALL), analysis["max_by_category"])}
    for item in ("parameters", "gradients", "optimizer_state"):
        assert rows[item]["ratio"] == 1.0, rows[item]
    # naive attention keeps more than one T×T tensor per layer at some moment (forward: scores+scaled+masked)
    assert rows["attention_scores"]["ratio"] > 1.0


def test_the_stored_prediction_is_the_built_in_models_only(snapshot_path):
    """The memory pass stores a predicted-vs-measured table for the built-in model, none for a user's model
    (the closed form describes the built-in one; the app shows what is stored)."""
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.session.analysis import memory_analysis

    built_in = memory_analysis(RunConfig(model="small", ctx=256, batch=4), snapshot_path)
    assert [row["item"] for row in built_in["predicted_vs_measured"]][:3] == ["parameters", "gradients",
                                                                             "optimizer_state"]
    own = memory_analysis(RunConfig(model="small", ctx=256, batch=4, model_factory="pkg.model:build"), snapshot_path)
    assert "predicted_vs_measured" not in own and "no predicted memory for your own model (yet)" in own["notes"]


def test_saved_activations_are_the_tensors_autograd_saves():
    """The per-layer count is checked against autograd itself: the real model on the CPU in fp32, every tensor its
    saved-tensor hook sees (parameters and buffers aside), each storage once. Dims are chosen so that no two of
    B·T, d, d_ff, T coincide and a tensor's size tells what it is."""
    torch = pytest.importorskip("torch")
    from einops import rearrange

    from sysprof.models.presets import ModelSpec
    from sysprof.models.transformer import TransformerLM
    from sysprof.profiler_core.memory.accounting import saved_activations

    spec, batch, ctx = ModelSpec("t", d_model=64, d_ff=160, layers=3, heads=4, vocab=500), 2, 24
    torch.manual_seed(0)
    model = TransformerLM(spec, ctx, "naive")
    own = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in own:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    tokens = torch.randint(spec.vocab, (batch, ctx))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        logits = model(tokens)
        torch.nn.functional.cross_entropy(rearrange(logits, "b t v -> (b t) v"), rearrange(tokens, "b t -> (b t)"))
    predicted = saved_activations(batch=batch, ctx=ctx, d_model=64, d_ff=160, layers=3, heads=4, vocab=500,
                                  autocast=False, attention="naive", linear_params=0)
    assert predicted["allocator_slack"] == 0  # tensors this small come from the small pool
    # What the count leaves out: the tokens, the RMSNorm statistics (B·T each) and the causal masks (T² bools).
    assert sum(predicted.values()) == pytest.approx(sum(saved.values()), rel=0.02)


@pytest.mark.parametrize(("model", "ctx", "phase"), [("2.7B", 128, "optimizer step"), ("small", 512, "backward start")])
def test_the_peak_is_the_larger_of_backward_start_and_the_optimizer_step(model, ctx, phase):
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.memory.accounting import PEAK_ITEMS, predict_run_memory

    predicted = predict_run_memory(RunConfig(model=model, ctx=ctx))
    assert predicted["peak_phase"] == phase
    assert predicted["peak_bytes"] == sum(predicted[key] for _, key in PEAK_ITEMS)  # the items add up to it
    slack = predicted["parameter_slack_at_peak_bytes"]
    if phase == "optimizer step":  # parameters, gradients, m and v, foreach AdamW's sqrt(v): 20 bytes a parameter
        assert predicted["peak_bytes"] == 20 * predicted["parameters_bytes"] // 4 + slack
        assert slack == 5 * predicted["large_parameter_tensors"] * 2**19  # five copies, half a MiB a block
    else:
        assert predicted["activations_at_peak_bytes"] == predicted["saved_activations_bytes"]


def test_the_peak_by_precision_attention_and_optimizer():
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.memory.accounting import predict_run_memory

    def peak(**fields):
        return predict_run_memory(RunConfig(model="small", ctx=512, **fields))

    assert peak(attention="sdpa")["saved_layer_attention_bytes"] < \
        peak()["saved_layer_attention_bytes"] / 100  # no T×T matrices kept
    bf16 = peak(dtype="bf16")
    assert bf16["saved_weight_copies_bytes"] > 0 and peak()["saved_weight_copies_bytes"] == 0
    assert peak(mode="train", optimizer_impl="fused")["optimizer_temporary_bytes"] == 0
    two_point_seven = predict_run_memory(RunConfig(model="2.7B", ctx=128, optimizer_impl="fused"))
    assert two_point_seven["peak_bytes"] == 16 * two_point_seven["parameters_bytes"] // 4 + \
        4 * two_point_seven["large_parameter_tensors"] * 2**19
    assert two_point_seven["large_parameter_tensors"] == 7 * 32 + 2
    forward = peak(mode="forward")
    assert forward["peak_phase"] == "forward" and forward["saved_activations_bytes"] == 0
    fwd_bwd = peak(mode="forward_backward")
    assert fwd_bwd["optimizer_state_bytes"] == 0 and fwd_bwd["peak_phase"] == "backward start"
