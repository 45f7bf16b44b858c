import math

import pytest
import torch

from sysprof.models.presets import PRESETS, ModelSpec, count_params, forward_flops, step_flops
from sysprof.models.transformer import RMSNorm, RotaryEmbedding, TransformerLM

EXPECTED_PARAMS = {"small": 128_625_408, "medium": 423_183_360, "large": 969_411_840,
                   "xl": 1_998_235_200, "2.7B": 3_406_809_600}


@pytest.mark.parametrize("name", EXPECTED_PARAMS)
def test_preset_parameter_counts_are_exact_on_meta_device(name):
    with torch.device("meta"):  # no memory: the 2.7B model would need 13.6 GB of fp32 weights
        model = TransformerLM(PRESETS[name], context_length=256)
    assert sum(p.numel() for p in model.parameters()) == EXPECTED_PARAMS[name]
    assert count_params(PRESETS[name]) == EXPECTED_PARAMS[name]


def test_custom_dims_parameter_count_matches_module():
    spec = ModelSpec("custom", d_model=96, d_ff=200, layers=3, heads=6, vocab=500)
    with torch.device("meta"):
        model = TransformerLM(spec, context_length=32)
    assert sum(p.numel() for p in model.parameters()) == count_params(spec)


def test_forward_flops_formula_by_hand():
    spec = ModelSpec("t", d_model=4, d_ff=8, layers=2, heads=2, vocab=10)
    # B·[2T·(L(4d² + 3d·d_ff) + d·V) + 4·L·T²·d] with B=3, T=5: 3·[10·(2·(64+96) + 40) + 4·2·25·4]
    assert forward_flops(spec, batch=3, ctx=5) == 3 * (10 * (2 * 160 + 40) + 800)
    assert step_flops(spec, 3, 5, "train") == 3 * forward_flops(spec, 3, 5)
    assert step_flops(spec, 3, 5, "forward_backward") == 3 * forward_flops(spec, 3, 5)
    assert step_flops(spec, 3, 5, "forward") == forward_flops(spec, 3, 5)


def test_small_forward_flops_per_step():
    # CS336 small at batch 4, ctx 256: the dense part dominates; 2·N_nonembedding·tokens is the classic estimate.
    flops = forward_flops(PRESETS["small"], batch=4, ctx=256)
    assert flops == 4 * (2 * 256 * (12 * (4 * 768**2 + 3 * 768 * 3072) + 768 * 10_000) + 4 * 12 * 256**2 * 768)


def test_naive_and_sdpa_attention_agree():
    torch.manual_seed(0)
    spec = PRESETS["tiny"]
    naive = TransformerLM(spec, context_length=32, attention="naive")
    sdpa = TransformerLM(spec, context_length=32, attention="sdpa")
    sdpa.load_state_dict(naive.state_dict())
    tokens = torch.randint(spec.vocab, (2, 32))
    torch.testing.assert_close(naive(tokens), sdpa(tokens), atol=1e-5, rtol=1e-4)


def test_model_is_causal():
    torch.manual_seed(0)
    model = TransformerLM(PRESETS["tiny"], context_length=16)
    tokens = torch.randint(100, (1, 16))
    changed = tokens.clone()
    changed[0, -1] = (tokens[0, -1] + 1) % 100
    torch.testing.assert_close(model(tokens)[:, :-1], model(changed)[:, :-1])


def test_rmsnorm_computes_in_fp32_and_casts_back():
    norm = RMSNorm(8)
    x = torch.full((2, 8), 300.0, dtype=torch.float16)  # 300² overflows fp16's 65504
    out = norm(x)
    assert out.dtype == torch.float16
    assert torch.isfinite(out).all() and torch.allclose(out.float(), torch.ones(2, 8))


def test_rope_rotation_preserves_norm_and_position_zero():
    rope = RotaryEmbedding(d_head=8, max_seq_len=16)
    x = torch.randn(1, 2, 16, 8)
    rotated = rope(x)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[..., 0, :], x[..., 0, :])  # angle 0 at position 0
    assert not torch.allclose(rotated[..., 1, :], x[..., 1, :])


def test_linear_init_is_truncated_normal():
    torch.manual_seed(0)
    model = TransformerLM(ModelSpec("t", 256, 1024, 1, 4, 100), context_length=8)
    weight = model.layers[0].ffn.w1.weight
    std = math.sqrt(2 / (256 + 1024))
    assert weight.abs().max() <= 3 * std + 1e-6
    assert abs(weight.std().item() - std) / std < 0.15  # truncation at 3σ shrinks the std by ~1.3%
