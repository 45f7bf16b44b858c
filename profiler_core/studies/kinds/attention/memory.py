"""The attention study's memory tensor by tensor: each tensor the naive attention makes (Q, K, V, the QKᵀ scores,
the causal mask, the softmax output, the output), predicted from the shapes, and what each implementation keeps
for backward predicted next to what the study measured.

What is kept, per implementation (new memory only; the inputs are leaves, kept by reference):
- eager, fp32: the causal mask (T × T bool, for masked_fill's backward) and the softmax output (B × T × T,
  softmax's backward reads its output). Under bf16 autocast also the bf16 copies the matmuls cast and keep: Q and
  K for QKᵀ, the softmax output (which autocast runs in fp32) and V for PV.
- SDPA (fused kernels): the log-sum-exp, B × T fp32, besides its output; under autocast also bf16 Q, K, V.
- compiled and your own: no prediction (the compiler, or your code, chooses what it keeps).
For fp32, eager and SDPA matched the H200 study's measurement to the byte in all 40 cells (tests/studies).
"""
from __future__ import annotations

from sysprof.profiler_core.base import events

MIB = 2**20
FP32, BF16 = 4, 2
TITLE = ("attention memory by tensor (MiB, predicted from the shapes; saved: what backward keeps, predicted for "
         "eager and SDPA, beside the study's measurement)")


def tensor_sizes(impl: str, batch: int, seq: int, d: int, dtype: str) -> dict[str, float | None]:
    """MiB of each tensor the naive attention makes (matmul results bf16 under autocast, the softmax fp32). The
    T × T ones only for eager: SDPA's fused kernels never make them, and what a compiled or your own one makes is
    its own."""
    act = BF16 if dtype == "bf16" else FP32
    square = impl == "eager"
    return {"Q, K, V MiB": 3 * batch * seq * d * FP32 / MIB,
            "QKᵀ scores MiB": batch * seq * seq * act / MIB if square else None,
            "causal mask MiB": seq * seq / MIB if square else None,
            "softmax output MiB": batch * seq * seq * FP32 / MIB if square else None,
            "output MiB": batch * seq * d * act / MIB}


def predicted_saved(impl: str, batch: int, seq: int, d: int, dtype: str) -> float | None:
    """MiB an implementation keeps for backward beyond its inputs and output; None where it is not predicted."""
    autocast = dtype == "bf16"
    if impl == "eager":
        kept = seq * seq + batch * seq * seq * FP32  # the mask, the softmax output
        if autocast:  # bf16 copies kept by the matmuls: Q and K (QKᵀ), the softmax output and V (PV)
            kept += 2 * batch * seq * d * BF16 + batch * seq * seq * BF16 + batch * seq * d * BF16
        return kept / MIB
    if impl == "sdpa":
        return (batch * seq * FP32 + (3 * batch * seq * d * BF16 if autocast else 0)) / MIB
    return None


def tensor_table(rows: list[dict], batch: int) -> list[dict]:
    """One row per cell: each tensor's size, then predicted and measured saved-for-backward and their ratio."""
    table = []
    for row in rows:
        cell = {key: row[key] for key in ("impl", "dtype", "d", "seq", "status")}
        predicted = predicted_saved(row["impl"], batch, row["seq"], row["d"], row["dtype"])
        measured = row.get("saved for backward MiB") if row["status"] == events.OK else None
        sizes = tensor_sizes(row["impl"], batch, row["seq"], row["d"], row["dtype"])
        if "weights MiB" in row:  # a layer: its input is x, its Q, K, V its own projections'
            sizes["Q, K, V MiB"] = None
        table.append(cell | sizes | {
            "predicted saved MiB": predicted, "measured saved MiB": measured,
            "measured ÷ predicted": round(measured / predicted, 3) if measured is not None and predicted else None})
    return table
