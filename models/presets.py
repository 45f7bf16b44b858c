"""CS336 model presets and the exact arithmetic about them (no torch: the UI shows these)."""
from __future__ import annotations

from dataclasses import dataclass, replace

DEFAULT_VOCAB = 10_000


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a Transformer LM: everything that decides parameter count and FLOPs."""

    name: str
    d_model: int
    d_ff: int
    layers: int
    heads: int
    vocab: int = DEFAULT_VOCAB

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    def renamed(self, name: str) -> ModelSpec:
        return replace(self, name=name)


PRESETS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        # tiny is not a CS336 size: it exists so a laptop without a GPU can run the tool in seconds.
        ModelSpec("tiny", d_model=128, d_ff=512, layers=2, heads=4),
        ModelSpec("small", d_model=768, d_ff=3072, layers=12, heads=12),
        ModelSpec("medium", d_model=1024, d_ff=4096, layers=24, heads=16),
        ModelSpec("large", d_model=1280, d_ff=5120, layers=36, heads=20),
        ModelSpec("xl", d_model=1600, d_ff=6400, layers=48, heads=25),
        ModelSpec("2.7B", d_model=2560, d_ff=10240, layers=32, heads=32),
    )
}


def count_params(spec: ModelSpec) -> int:
    """Exact parameter count: embedding, per-layer attention + SwiGLU + two RMSNorms, final norm, LM head."""
    per_layer = 4 * spec.d_model**2 + 3 * spec.d_model * spec.d_ff + 2 * spec.d_model
    embeddings = 2 * spec.vocab * spec.d_model  # input embedding and the untied LM head
    return spec.layers * per_layer + spec.d_model + embeddings


def forward_flops(spec: ModelSpec, batch: int, ctx: int) -> int:
    """Forward FLOPs per step: B·[2T·(L(4d² + 3d·d_ff) + d·V) + 4·L·T²·d].

    Matmuls count 2 FLOPs per multiply-add; the T² term is QKᵀ plus the attention-weighted sum of V.
    """
    d, L = spec.d_model, spec.layers
    dense = 2 * ctx * (L * (4 * d * d + 3 * d * spec.d_ff) + d * spec.vocab)
    attention = 4 * L * ctx * ctx * d
    return batch * (dense + attention)


def step_flops(spec: ModelSpec, batch: int, ctx: int, mode: str) -> int:
    """FLOPs of one step in a mode: backward costs twice the forward, so training is 3×."""
    multiplier = 1 if mode == "forward" else 3
    return multiplier * forward_flops(spec, batch, ctx)


def human_count(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)
