"""A CS336-style Transformer LM with its own optimizer: RoPE, RMSNorm, SwiGLU, causal attention written out.

model.py: the layers, `TransformerLM` and the factory `build`; optim.py: `AdamW`, a per-parameter loop in plain
Python. Neither imports the other, so each loads as a file (`rope_lm/model.py:build`) or as a module
(`rope_lm.model:build` with this folder's parent on PYTHONPATH).
"""
