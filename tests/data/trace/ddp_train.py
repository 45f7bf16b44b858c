"""A data-parallel training loop with no line of sysprof in it, for `sysprof trace --nproc 2 -- ddp_train.py …`:
DistributedDataParallel over gloo (CPU) or NCCL (--device cuda, a GPU per rank), a real DataLoader, AdamW.
argv: [--steps N] [--slow-loader-rank R --slow-ms MS] [--raise-on-rank R --raise-at N] [--width W] [--repeat R]
[--device cuda [--one-gpu]]. --one-gpu puts every rank on GPU 0 over gloo (NCCL takes one GPU per rank). The
slow rank's loader waits MS per item (a slow disk or decode on one node's share of the data);
the raising rank fails at step N, while the others wait for it in the gradient all-reduce."""
import argparse
import os

import torch
import torch.distributed as dist
from costly import Costly
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--slow-loader-rank", type=int)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--raise-on-rank", type=int)
    parser.add_argument("--raise-at", type=int)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--one-gpu", action="store_true")
    args = parser.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cuda = args.device == "cuda"
    local = 0 if args.one_gpu else local
    if cuda:
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if cuda and not args.one_gpu else "gloo")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    model = nn.Sequential(nn.Linear(256, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                          nn.Linear(args.width, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local] if cuda else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    sleep_ms = args.slow_ms if rank == args.slow_loader_rank else 0.0
    loader = iter(DataLoader(Costly(sleep_ms), batch_size=8, num_workers=0))
    for index in range(args.steps):
        if rank == args.raise_on_rank and index == args.raise_at:
            raise RuntimeError(f"rank {rank} lost its shard at step {index}")
        x, y = (tensor.to(device).repeat(args.repeat, 1) for tensor in next(loader))
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    dist.destroy_process_group()
    print(f"rank {rank} trained {args.steps} steps\n", end="", flush=True)  # one write: two ranks share the output


if __name__ == "__main__":
    main()
