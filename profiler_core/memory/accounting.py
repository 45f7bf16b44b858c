"""Back-of-the-envelope memory from plain numbers, and its comparison with a measured snapshot.

Formulas (B batch, T context, d d_model, f d_ff, H heads, L layers, V vocab, P parameter count):
  parameters        P · param_bytes
  gradients         P · param_bytes                    (forward_backward, train)
  optimizer state   2 · P · 4                          (train; AdamW m and v, fp32 even under autocast)
  residual stream   B · T · d · act_bytes per layer    (one layer's input/output, the unit of activations)
  attention scores  B · H · T² · act_bytes per layer   (one T×T score matrix per head)
  logits            B · T · V · act_bytes

The peak (the figure `sysprof run` refuses a config by and Configure shows) counts what autograd actually saves
for backward, tensor by tensor, in the built-in model (models/transformer.py), by precision and attention:
  fp32, per layer: 10 residual-wide tensors (block input, the two RMSNorms' input·rms and output, rotated q and k,
    v, the attention output's copy, the second residual) + 4 d_ff-wide (w1 out, SiLU out, w3 out, their product)
    + the softmax output (B·H·T², naive) or SDPA's output and log-sum-exp (CUDA's fused kernels return their
    output laid out as (B, T, H, d_head), so the output projection's input is that tensor, not a copy).
  autocast (bf16/fp16): the residual stream stays fp32 (fp32 embedding + a bf16 branch promotes), each Linear
    saves its own 2-byte cast of its input (q, k, v, w1, w3 cast the same tensor separately) and the cast copy of
    its weight (the cast cache, 2 bytes a weight, held until backward); softmax runs in fp32 and the PV matmul
    saves a 2-byte copy of it.
  head: the final norm's tensors and cross-entropy's fp32 log-softmax (the logits themselves are not kept).
  allocator: up to 1 MiB of an unsplit block per large tensor (saved activations; weights, gradients, m, v and
    the temporary, one block each), counted as half a MiB each.
  activation checkpointing: each layer keeps its fp32 input only (4 bytes a residual element); one layer's tensors
    above are alive again while its backward recomputes them.
The step peaks at the larger of backward's start (parameters + AdamW state + saved activations) and the optimizer
step (parameters + gradients + state + foreach AdamW's one parameter-sized temporary, sqrt(v)).
Checked on an H100 against every preset × ctx 128/256/512 × fp32/bf16 × naive/SDPA (benchmarks/memory/README.md).
"""

from __future__ import annotations

from sysprof.models.presets import count_params
from sysprof.profiler_core.base.config import DTYPE_BYTES, PARAM_BYTES, RunConfig

MIB = 1024 * 1024
MODES = ("forward", "forward_backward", "train")
ADAMW_STATES_PER_PARAMETER = 2
ADAMW_STATE_BYTES = 4  # torch keeps exp_avg / exp_avg_sq in the parameter dtype; fp32 master weights here
# Optimizer implementations whose step needs no parameter-sized temporary (a fused kernel; inductor's fusion).
NO_TEMPORARY_IMPLS = ("fused", "compiled")

# CUDA's caching allocator hands out a large block whole when splitting it would leave less than 1 MiB: each
# saved tensor of a MiB or more carries 0 to 1 MiB more than its size, half a MiB on average. Large saved tensors
# per layer, by (autocast, naive attention): the residual-wide and d_ff-wide ones, the score matrices, and under
# autocast the input casts and the seven weight copies.
SLACK_PER_LARGE_BLOCK = MIB // 2
LARGE_BLOCKS_PER_LAYER = {(False, True): 15, (False, False): 14, (True, True): 26, (True, False): 24}

# Why measured and predicted may differ; shown when the ratio is far from 1.
EXPLANATIONS = {
    "parameters": "autocast keeps fp32 master weights and adds bf16 copies made per op (cast cache); "
                  "allocator rounds each block up to 512 B and may hand out an unsplit remainder (< 1 MiB).",
    "gradients": "gradients exist only from backward until zero_grad(set_to_none): at a peak early in backward "
                 "most are not allocated yet; compare with the per-category maximum instead.",
    "optimizer_state": "AdamW allocates m and v lazily on the first step: 0 before it; the snapshot splits "
                       "pre-recording blocks by count, so an optimizer without 2 states per parameter is misread.",
    "activations": "the prediction counts the tensors the built-in model saves for backward; a snapshot's "
                   "activation category also holds forward temporaries alive at its peak, and autocast's weight "
                   "copies may be filed under parameters.",
    "residual_stream_per_layer": "one layer's input (B·T·d·bytes), the unit activations are counted in: not a "
                                 "category of its own, so not measured",
    "attention_scores": "a naive attention keeps several T×T tensors per layer (scores, scaled, masked, softmax) "
                        "and their gradients in backward; fused attention (SDPA/flash) keeps none.",
    "peak": "the peak is the larger of backward's start and the optimizer step; a gap names the term that is off "
            "in the rows above (a user's optimizer or a non-AdamW state changes the optimizer step's share).",
}
FAR_FROM_ONE = (0.9, 1.1)
# The items that add up to the predicted peak, in the order Configure lists them (keys of predict_memory).
PEAK_ITEMS = (("parameters", "parameters_bytes"), ("gradients", "gradients_at_peak_bytes"),
              ("AdamW state", "optimizer_state_bytes"), ("saved activations", "activations_at_peak_bytes"),
              ("AdamW temp", "optimizer_temporary_at_peak_bytes"),
              ("alloc. slack", "parameter_slack_at_peak_bytes"))


def predict_run_memory(cfg: RunConfig) -> dict:
    """The prediction for a run's config: the one the Configure screen shows and memory/analysis.json stores."""
    spec = cfg.spec()
    return predict_memory(params=count_params(spec), d_model=spec.d_model, d_ff=spec.d_ff, layers=spec.layers,
                          heads=spec.heads, vocab=spec.vocab, ctx=cfg.ctx, batch=cfg.batch, param_bytes=PARAM_BYTES,
                          activation_bytes=DTYPE_BYTES[cfg.dtype], mode=cfg.mode, attention=cfg.attention,
                          optimizer_temporary=cfg.optimizer_impl not in NO_TEMPORARY_IMPLS,
                          checkpointed=cfg.activation_checkpointing)


def _check_inputs(mode: str, numbers: dict) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    negative = [name for name, value in numbers.items() if value < 0]
    if negative:
        raise ValueError(f"negative sizes: {', '.join(negative)}")


def predict_memory(*, params: int, d_model: int, d_ff: int, layers: int, heads: int, vocab: int, ctx: int,
                   batch: int, param_bytes: int = 4, activation_bytes: int = 4, mode: str = "train",
                   attention: str = "naive", optimizer_temporary: bool = True, checkpointed: bool = False) -> dict:
    """Predicted bytes per item for one step of a Transformer LM (keys end in _bytes; MiB where asked)."""
    _check_inputs(mode, dict(params=params, d_model=d_model, d_ff=d_ff, layers=layers, heads=heads,
                             vocab=vocab, ctx=ctx, batch=batch))
    trains = mode != "forward"
    residual_per_layer = batch * ctx * d_model * activation_bytes
    scores_per_layer = batch * heads * ctx * ctx * activation_bytes
    saved = saved_activations(batch=batch, ctx=ctx, d_model=d_model, d_ff=d_ff, layers=layers, heads=heads,
                              vocab=vocab, autocast=activation_bytes < 4, attention=attention,
                              linear_params=params - vocab * d_model - (2 * layers + 1) * d_model,
                              checkpointed=checkpointed) if trains else {}
    predicted = {
        "mode": mode,
        "parameters_bytes": params * param_bytes,
        "gradients_bytes": params * param_bytes if trains else 0,
        "optimizer_state_bytes": ADAMW_STATES_PER_PARAMETER * params * ADAMW_STATE_BYTES if mode == "train" else 0,
        "optimizer_temporary_bytes": params * ADAMW_STATE_BYTES if mode == "train" and optimizer_temporary else 0,
        "residual_stream_per_layer_bytes": residual_per_layer,
        "residual_stream_per_layer_mib": residual_per_layer / MIB,
        "residual_stream_all_layers_bytes": residual_per_layer * layers,
        "attention_scores_per_layer_bytes": scores_per_layer,
        "attention_scores_all_layers_bytes": scores_per_layer * layers,
        "ffn_hidden_per_layer_bytes": batch * ctx * d_ff * activation_bytes,
        "logits_bytes": batch * ctx * vocab * activation_bytes,
        **{f"saved_{term}_bytes": value for term, value in saved.items()},
        "saved_activations_bytes": sum(saved.values()),
        "large_parameter_tensors": _large_parameter_tensors(d_model, d_ff, layers, vocab, param_bytes),
    }
    return predicted | predicted_peak(predicted, 2 * batch * ctx * vocab * 4)


def saved_activations(*, batch: int, ctx: int, d_model: int, d_ff: int, layers: int, heads: int, vocab: int,
                      autocast: bool, attention: str, linear_params: int, checkpointed: bool = False) -> dict[str, int]:
    """Bytes autograd holds at the end of the forward, by term (the module docstring counts the tensors)."""
    residual, hidden, rows = batch * ctx * d_model, batch * ctx * d_ff, batch * ctx
    scores = batch * heads * ctx * ctx
    naive = attention == "naive"
    if autocast:
        per_layer_residual = 30 * residual  # fp32 stream + 2-byte casts, in bytes
        per_layer_hidden, per_layer_scores = 8 * hidden, (6 * scores if naive else 4 * batch * heads * ctx)
        head = 10 * residual + 4 * rows * vocab  # the final norm's tensors and cast; the fp32 log-softmax
    else:
        per_layer_residual = 40 * residual
        per_layer_hidden, per_layer_scores = 16 * hidden, (4 * scores if naive else 4 * batch * heads * ctx)
        head = 12 * residual + 4 * rows * vocab
    large_blocks = (LARGE_BLOCKS_PER_LAYER[autocast, naive] * layers) if residual * 2 >= MIB else 0
    kept = 1 if checkpointed else layers  # layers whose tensors are alive at once
    inputs = layers * 4 * residual if checkpointed else 0  # each checkpointed layer's fp32 input
    return {"layer_residual": inputs + kept * per_layer_residual, "layer_ffn": kept * per_layer_hidden,
            "layer_attention": kept * per_layer_scores, "weight_copies": 2 * linear_params if autocast else 0,
            "head_and_loss": head, "allocator_slack": large_blocks * SLACK_PER_LARGE_BLOCK}


def _large_parameter_tensors(d_model: int, d_ff: int, layers: int, vocab: int, param_bytes: int) -> int:
    """Weight matrices of a MiB or more (the RMSNorm vectors are smaller): each parameter-shaped tensor (weight,
    gradient, m, v, AdamW's temporary) is one large block carrying the allocator's slack."""
    large = [(4 * layers, d_model * d_model), (3 * layers, d_model * d_ff), (2, vocab * d_model)]
    return sum(count for count, elements in large if elements * param_bytes >= MIB)


def predicted_peak(predicted: dict, forward_transient: int) -> dict:
    """Which moment of the step peaks, and the items held there: backward's start (saved activations on top of
    the weights and state) or the end of backward / the optimizer step (gradients, state, AdamW's temporary).
    A forward without autograd holds its weights and the logits with their log-softmax at most."""
    params, state = predicted["parameters_bytes"], predicted["optimizer_state_bytes"]
    if predicted["mode"] == "forward":
        moments = {"forward": {"activations_at_peak_bytes": forward_transient}}
    else:
        moments = {"backward start": {"activations_at_peak_bytes": predicted["saved_activations_bytes"]},
                   "optimizer step" if state else "backward end": {
                       "gradients_at_peak_bytes": predicted["gradients_bytes"],
                       "optimizer_temporary_at_peak_bytes": predicted["optimizer_temporary_bytes"]}}
    per_copy = predicted["large_parameter_tensors"] * SLACK_PER_LARGE_BLOCK
    for moment in moments.values():  # the weights and the state, and the gradients and temporary where held
        copies = 1 + (2 if state else 0) + sum(1 for key in ("gradients_at_peak_bytes",
                                                             "optimizer_temporary_at_peak_bytes") if moment.get(key))
        moment["parameter_slack_at_peak_bytes"] = copies * per_copy
    phase, held = max(moments.items(), key=lambda item: sum(item[1].values()))
    items = {key: held.get(key, 0) for _, key in PEAK_ITEMS if key.endswith("_at_peak_bytes")}
    return {**items, "peak_phase": phase, "peak_bytes": params + state + sum(items.values())}


# (row item, key in predict_memory's result, key in the measured-by-category dict)
COMPARED_ITEMS = (
    ("parameters", "parameters_bytes", "parameters"),
    ("gradients", "gradients_bytes", "gradients"),
    ("optimizer_state", "optimizer_state_bytes", "optimizer_state"),
    ("activations", "saved_activations_bytes", "activations"),
    ("attention_scores", "attention_scores_all_layers_bytes", "attention_scores"),
    ("residual_stream_per_layer", "residual_stream_per_layer_bytes", None),  # a unit to read the others by
    ("peak", "peak_bytes", "peak"),  # the step's peak: the session adds the measured one to the categories
)


def _ratio(measured: int | None, predicted: int) -> float | None:
    if measured is None or predicted == 0:
        return None
    return measured / predicted


def compare_predicted(predicted: dict, measured_by_category: dict[str, int]) -> list[dict]:
    """Rows {item, predicted_bytes, measured_bytes, ratio (measured/predicted), explanation}.

    The explanation is empty when the ratio is within 10 % of 1; otherwise it says why a gap is expected.
    """
    rows = []
    for item, predicted_key, measured_key in COMPARED_ITEMS:
        predicted_bytes = int(predicted.get(predicted_key, 0))
        measured = measured_by_category.get(measured_key) if measured_key else None
        ratio = _ratio(measured, predicted_bytes)
        close = ratio is not None and FAR_FROM_ONE[0] <= ratio <= FAR_FROM_ONE[1]
        both_zero = predicted_bytes == 0 and not measured
        rows.append({
            "item": item,
            "predicted_bytes": predicted_bytes,
            "measured_bytes": None if measured is None else int(measured),
            "ratio": None if ratio is None else round(ratio, 4),
            "explanation": "" if close or both_zero else EXPLANATIONS[item],
        })
    return rows
