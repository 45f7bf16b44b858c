"""The CS336 reference Transformer LM: presets and arithmetic here, the torch module in models.transformer."""
from sysprof.models.presets import PRESETS, ModelSpec, count_params, forward_flops, step_flops

__all__ = ["PRESETS", "ModelSpec", "count_params", "forward_flops", "step_flops"]
