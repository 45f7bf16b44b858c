"""A user's own training loop with an NVTX bug, profiled under nsys to make tests/data/nsys/unpopped_fwd: `fwd` is
pushed every step and never popped, so each step's `fwd` nests inside the last one's (bwd and opt are balanced).
Not part of sysprof: the kind of script `sysprof analyze` is given."""
import torch
from torch import nn

model = nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(6)]).cuda()
optimizer = torch.optim.AdamW(model.parameters())
x = torch.randn(256, 2048, device="cuda")
for step in range(8):
    torch.cuda.nvtx.range_push("fwd")  # the bug: no range_pop for it
    loss = model(x).square().mean()
    torch.cuda.nvtx.range_push("bwd")
    loss.backward()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("opt")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
