"""Back-of-the-envelope memory from plain numbers, and its comparison with a measured snapshot.

Formulas (B batch, T context, d d_model, H heads, L layers, V vocab, P parameter count):
  parameters        P · param_bytes
  gradients         P · param_bytes                    (forward_backward, train)
  optimizer state   2 · P · 4                          (train; AdamW m and v, fp32 even under autocast)
  residual stream   B · T · d · act_bytes per layer    (one layer's input/output, the unit of activations)
  attention scores  B · H · T² · act_bytes per layer   (one T×T score matrix per head)
  logits            B · T · V · act_bytes
"""

from __future__ import annotations

from models.presets import count_params
from profiler_core.config import DTYPE_BYTES, PARAM_BYTES, RunConfig

MIB = 1024 * 1024
MODES = ("forward", "forward_backward", "train")
ADAMW_STATES_PER_PARAMETER = 2
ADAMW_STATE_BYTES = 4  # torch keeps exp_avg / exp_avg_sq in the parameter dtype; fp32 master weights here

# Why measured and predicted may differ; shown when the ratio is far from 1.
EXPLANATIONS = {
    "parameters": "autocast keeps fp32 master weights and adds bf16 copies made per op (cast cache); "
                  "allocator rounds each block up to 512 B and may hand out an unsplit remainder (< 1 MiB).",
    "gradients": "gradients exist only from backward until zero_grad(set_to_none): at a peak early in backward "
                 "most are not allocated yet; compare with the per-category maximum instead.",
    "optimizer_state": "AdamW allocates m and v lazily on the first step: 0 before it; the snapshot splits "
                       "pre-recording blocks by count, so an optimizer without 2 states per parameter is misread.",
    "activations": "saved activations are several tensors per layer (norm inputs and statistics, Q/K/V, RoPE "
                   "intermediates, FFN hidden d_ff-wide tensors, logits and log-softmax), not only the "
                   "residual stream; the prediction is a lower bound of one residual-stream tensor per layer.",
    "residual_stream_per_layer": "one layer's input (B·T·d·bytes), the unit activations are counted in: not a "
                                 "category of its own, so not measured",
    "attention_scores": "a naive attention keeps several T×T tensors per layer (scores, scaled, masked, softmax) "
                        "and their gradients in backward; fused attention (SDPA/flash) keeps none.",
}
FAR_FROM_ONE = (0.9, 1.1)


def predict_run_memory(cfg: RunConfig) -> dict:
    """The prediction for a run's config: the one the Configure screen shows and memory/analysis.json stores."""
    spec = cfg.spec()
    return predict_memory(params=count_params(spec), d_model=spec.d_model, d_ff=spec.d_ff, layers=spec.layers,
                          heads=spec.heads, vocab=spec.vocab, ctx=cfg.ctx, batch=cfg.batch, param_bytes=PARAM_BYTES,
                          activation_bytes=DTYPE_BYTES[cfg.dtype], mode=cfg.mode)


def _check_inputs(mode: str, numbers: dict) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    negative = [name for name, value in numbers.items() if value < 0]
    if negative:
        raise ValueError(f"negative sizes: {', '.join(negative)}")


def predict_memory(*, params: int, d_model: int, d_ff: int, layers: int, heads: int, vocab: int, ctx: int,
                   batch: int, param_bytes: int = 4, activation_bytes: int = 4, mode: str = "train") -> dict:
    """Predicted bytes per item for one step of a Transformer LM (keys end in _bytes; MiB where asked)."""
    _check_inputs(mode, dict(params=params, d_model=d_model, d_ff=d_ff, layers=layers, heads=heads,
                             vocab=vocab, ctx=ctx, batch=batch))
    trains = mode != "forward"
    residual_per_layer = batch * ctx * d_model * activation_bytes
    scores_per_layer = batch * heads * ctx * ctx * activation_bytes
    return {
        "mode": mode,
        "parameters_bytes": params * param_bytes,
        "gradients_bytes": params * param_bytes if trains else 0,
        "optimizer_state_bytes": ADAMW_STATES_PER_PARAMETER * params * ADAMW_STATE_BYTES if mode == "train" else 0,
        "residual_stream_per_layer_bytes": residual_per_layer,
        "residual_stream_per_layer_mib": residual_per_layer / MIB,
        "residual_stream_all_layers_bytes": residual_per_layer * layers,
        "attention_scores_per_layer_bytes": scores_per_layer,
        "attention_scores_all_layers_bytes": scores_per_layer * layers,
        "ffn_hidden_per_layer_bytes": batch * ctx * d_ff * activation_bytes,
        "logits_bytes": batch * ctx * vocab * activation_bytes,
    }


# (row item, key in predict_memory's result, key in the measured-by-category dict)
COMPARED_ITEMS = (
    ("parameters", "parameters_bytes", "parameters"),
    ("gradients", "gradients_bytes", "gradients"),
    ("optimizer_state", "optimizer_state_bytes", "optimizer_state"),
    ("activations", "residual_stream_all_layers_bytes", "activations"),
    ("attention_scores", "attention_scores_all_layers_bytes", "attention_scores"),
    ("residual_stream_per_layer", "residual_stream_per_layer_bytes", None),  # a unit to read the others by
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
