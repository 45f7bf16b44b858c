"""A training loop as users write their own (not sysprof's runner): range names `fwd`, `bwd`, `opt` inside
`train step N`, and unbalanced ranges: `session` pushed before the capture and never popped, `epoch` started
before the capture and ended after it, `profiling` pushed inside the capture and never popped. Run under nsys on a
GPU:

    nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi \
        --capture-range-end=stop -o foreign python3 make_report.py

The fixture in this folder is that report exported (`nsys export --type sqlite`, xz-compressed) and its
`nsys stats --report cuda_gpu_kern_sum,nvtx_sum,nvtx_kern_sum --format csv` files."""
import time

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.AdamW(model.parameters())
batch = torch.randn(256, 1024, device="cuda")
nvtx = torch.cuda.nvtx


def train_step(index: int) -> None:
    nvtx.range_push(f"train step {index}")
    nvtx.range_push("fwd")
    loss = model(batch).square().mean()
    nvtx.range_pop()
    nvtx.range_push("bwd")
    loss.backward()
    nvtx.range_pop()
    nvtx.range_push("opt")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    nvtx.range_pop()
    nvtx.range_pop()


nvtx.range_push("session")  # never popped
epoch = nvtx.range_start("epoch")  # ended only after the capture
for index in range(3):
    train_step(index)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
nvtx.range_push("profiling")  # pushed inside the capture, never popped
for index in range(5):
    train_step(index)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
time.sleep(1.0)
nvtx.range_end(epoch)
