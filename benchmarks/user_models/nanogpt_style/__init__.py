"""A nanoGPT-style GPT with its own optimizer choice.

model.py: `GPT` (learned positions, LayerNorm, GELU MLP, F.scaled_dot_product_attention, tied head) and the factory
`build`; optim.py: `DecayGroupsAdamW`, torch's AdamW with nanoGPT's weight-decay groups. Neither imports the other,
so each loads as a file (`nanogpt_style/model.py:build`) or as a module (with this folder's parent on PYTHONPATH).
"""
