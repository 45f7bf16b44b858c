"""A training loop with no line of sysprof in it, for `sysprof trace -- python plain_train.py …`: a real DataLoader,
AdamW, optional gradient accumulation, an evaluation pass every N steps. argv: WORKERS SLEEP_MS_PER_ITEM
[--steps N] [--accumulate K] [--eval-every N] [--no-optimizer] [--raise-at N] [--kill-at N] [--device cuda
--width W --repeat R] [--compile]. --kill-at N ends the process with SIGTERM in the step after N, as a job scheduler would. On a GPU, --width and --repeat (each batch's rows repeated R times) size the step the GPU runs."""
import argparse
import os
import signal
import time

import torch
from torch import nn
from costly import Costly
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workers", type=int)
    parser.add_argument("sleep_ms", type=float)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--eval-every", type=int)
    parser.add_argument("--no-optimizer", action="store_true")
    parser.add_argument("--raise-at", type=int)
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    width = args.width
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = iter(DataLoader(Costly(args.sleep_ms), batch_size=16, num_workers=args.workers,
                             prefetch_factor=4 if args.workers else None, pin_memory=device.type == "cuda"))
    forward = torch.compile(model) if args.compile else model
    for index in range(args.steps):
        for _ in range(args.accumulate):
            x, y = (tensor.to(device, non_blocking=True).repeat(args.repeat, 1) for tensor in next(loader))
            loss = nn.functional.mse_loss(forward(x), y) / args.accumulate
            loss.backward()
        if not args.no_optimizer:
            opt.step()
            opt.zero_grad()
        if args.kill_at == index:  # a pause, so the next step's start writes the steps so far (every 0.25 s at most)
            time.sleep(0.3)
        if args.kill_at is not None and index == args.kill_at + 1:
            os.kill(os.getpid(), signal.SIGTERM)
        if args.raise_at == index:
            raise RuntimeError(f"the loss went wrong at step {index}")
        if args.eval_every and index % args.eval_every == args.eval_every - 1:
            with torch.no_grad():
                for _ in range(20):
                    model(torch.randn(512, 256, device=device))
    print("trained", args.steps, "steps")
    if args.compile:
        from torch._dynamo.utils import counters

        print("graph breaks", sum(counters["graph_break"].values()))


if __name__ == "__main__":
    main()
