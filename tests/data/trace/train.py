"""A small training loop with a real DataLoader, traced with sysprof.trace, for the tests (and a template for your
own). argv: RUNS_DIR WORKERS SLEEP_MS_PER_ITEM [--device cuda --width W --repeat R] [--raise-at N] [--eval-every N]
[--misuse]. On a GPU, --width and --repeat (each batch's rows repeated R times) size the step the GPU runs."""
import argparse

import torch
from torch import nn
from costly import Costly
from torch.utils.data import DataLoader

from sysprof import trace


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs_dir")
    parser.add_argument("workers", type=int)
    parser.add_argument("sleep_ms", type=float)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--raise-at", type=int)
    parser.add_argument("--eval-every", type=int)
    parser.add_argument("--misuse", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    width, device = args.width, torch.device(args.device)
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = iter(DataLoader(Costly(args.sleep_ms), batch_size=16, num_workers=args.workers,
                             prefetch_factor=4 if args.workers else None, pin_memory=device.type == "cuda"))
    tracker = trace.start(name=f"train-w{args.workers}", runs_dir=args.runs_dir, tokens_per_step=16, warmup=3)
    if args.misuse:
        with tracker.phase("data"):  # outside a step: said once, not timed
            pass
        trace.start(name="again", runs_dir=args.runs_dir)  # a second start: the same tracker
    for index in range(args.steps):
        with tracker.step() as step:
            with tracker.phase("data"):
                x, y = (tensor.to(device, non_blocking=True).repeat(args.repeat, 1) for tensor in next(loader))
            with tracker.phase("forward"):
                loss = nn.functional.mse_loss(model(x), y)
                if args.misuse:
                    with tracker.phase("inner"):  # inside another phase: said once, not timed
                        pass
            with tracker.phase("backward"):
                loss.backward()
            with tracker.phase("optimizer"):
                opt.step()
                opt.zero_grad()
            step.record(loss=loss)
            if args.raise_at == index:
                raise RuntimeError(f"the loss went wrong at step {index}")
            if args.eval_every and index % args.eval_every == args.eval_every - 1:
                with torch.no_grad():  # an evaluation pass every N steps, as a training script does
                    for _ in range(20):
                        model(torch.randn(512, 256, device=device))
    print(tracker.run_dir)


if __name__ == "__main__":
    main()
