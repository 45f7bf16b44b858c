"""Module categories from class names and paths: the built-in model, the nanoGPT-style example and common
Hugging Face spellings, plus the range names that carry them."""
from __future__ import annotations

import pytest

from sysprof.models.phases import is_tool_range, module_range, parse_module_range
from sysprof.profiler_core.base.module_types import CATEGORIES, category_of, module_category, module_depth


@pytest.mark.parametrize("path, type_name, category", [
    ("layers.0.attn", "CausalSelfAttention", "attention"),
    ("blocks.0.attn", "MultiheadAttention", "attention"),
    ("transformer.h.0.attn.c_attn", "Conv1D", "attention"),
    ("layers.0.ffn", "SwiGLU", "mlp"),
    ("blocks.0.mlp", "Sequential", "mlp"),
    ("model.layers.0.mlp", "LlamaMLP", "mlp"),
    ("layers.0.feed_forward", "FeedForward", "mlp"),
    ("layers.0.ln1", "RMSNorm", "norm"),
    ("blocks.0.ln_1", "LayerNorm", "norm"),
    ("ln_final", "RMSNorm", "norm"),
    # The class decides before the attribute name: this is a norm, whatever its name says.
    ("model.layers.0.post_attention_layernorm", "LlamaRMSNorm", "norm"),
    ("token_embeddings", "Embedding", "embedding"),
    ("wte", "Embedding", "embedding"),
    ("transformer.wpe", "Embedding", "embedding"),
    ("lm_head", "Linear", "head"),
    ("head", "Linear", "head"),
    ("output", "Linear", "head"),
    ("layers.0.attn.output_proj", "Linear", "other"),  # "output" is the head only at the top
    ("layers.0.attn.rope", "RotaryEmbedding", "other"),  # RoPE counts for the attention that calls it
    ("model.rotary_emb", "LlamaRotaryEmbedding", "other"),
    ("layers.0", "TransformerBlock", "other"),
    ("blocks.0.mlp.0", "Linear", "other"),
])
def test_own_category(path, type_name, category):
    assert category_of(path, type_name) == category


@pytest.mark.parametrize("path, category", [
    ("layers.0.attn.q_proj", "attention"),  # a Linear inside attention
    ("layers.0.attn.rope", "attention"),
    ("layers.0.ffn.w1", "mlp"),
    ("blocks.0.mlp.0", "mlp"),
    ("lm_head", "head"),
    ("layers.0", "other"),
    ("", "other"),
])
def test_deepest_categorized_module_on_the_path_wins(path, category):
    types = {"layers.0": "TransformerBlock", "layers.0.attn": "CausalSelfAttention", "layers.0.attn.q_proj": "Linear",
             "layers.0.attn.rope": "RotaryEmbedding", "layers.0.ffn": "SwiGLU", "layers.0.ffn.w1": "Linear",
             "blocks.0.mlp": "Sequential", "blocks.0.mlp.0": "Linear", "lm_head": "Linear"}
    assert module_category(path, types) == category
    assert module_category(path, types) in CATEGORIES


def test_depth_counts_path_parts():
    assert [module_depth(p) for p in ("", "wte", "transformer.h.0.attn")] == [0, 1, 4]


def test_module_range_names_round_trip_and_are_tool_ranges():
    name = module_range("transformer.h.0.attn", "CausalSelfAttention")
    assert name == "module:transformer.h.0.attn:CausalSelfAttention"
    assert parse_module_range(name) == ("transformer.h.0.attn", "CausalSelfAttention")
    assert parse_module_range("softmax") is None and parse_module_range("module:") is None
    assert is_tool_range(name) and is_tool_range("forward") and is_tool_range("step 3")
    assert is_tool_range("computing softmax") and not is_tool_range("softmax")
