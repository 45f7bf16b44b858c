"""What sysprof.trace adds to a real training loop: a nanoGPT-style model (tests/data/models/nanogpt_style) fed by a
real DataLoader, timed with the tracker's four phases and its loss record (--mode api), or by the hooks of
`sysprof trace` on the unchanged loop (--mode hooks: put on before its blocks, taken off after), against the same
loop without a single tracker call.

Each fresh process runs ROUNDS rounds; a round times BLOCK steps of each loop, their order alternating round to
round, the GPU synchronised only at a block's ends. A process gives the median over its rounds of traced/plain;
across processes the ratio's 95% t interval on the logarithms decides: pass when it lies under +1%.

    python3 -m benchmarks.trace.overhead --device cuda --mode hooks --processes 5 --out DIR
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT / "tests" / "data" / "models" / "nanogpt_style"
SIZES = {"cuda": {"n_layer": 12, "n_head": 12, "n_embd": 768, "ctx": 512, "batch": 8, "vocab": 50304},
         "cpu": {"n_layer": 2, "n_head": 4, "n_embd": 128, "ctx": 64, "batch": 4, "vocab": 2048}}
LIMIT = 0.01


def tokens(vocab: int, ctx: int):
    import torch
    from torch.utils.data import Dataset

    class Tokens(Dataset):
        def __len__(self):
            return 1_000_000

        def __getitem__(self, index):
            return torch.randint(0, vocab, (ctx + 1,))
    return Tokens()


def build(device: str):
    import torch
    from torch.utils.data import DataLoader

    sys.path.insert(0, str(MODEL_DIR))
    from gpt import build as build_gpt

    size = SIZES[device]
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    model = build_gpt(size["vocab"], size["ctx"], size["n_layer"], size["n_head"], size["n_embd"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=device == "cuda")
    loader = iter(DataLoader(tokens(size["vocab"], size["ctx"]), batch_size=size["batch"], num_workers=2,
                             pin_memory=device == "cuda", prefetch_factor=4))
    return model, optimizer, loader, size


def plain_step(model, optimizer, loader, device):
    import torch.nn.functional as F

    batch = next(loader).to(device, non_blocking=True)
    logits = model(batch[:, :-1]).logits
    loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def traced_step(tracker, model, optimizer, loader, device):
    import torch.nn.functional as F

    with tracker.step() as step:
        with tracker.phase("data"):
            batch = next(loader).to(device, non_blocking=True)
        with tracker.phase("forward"):
            logits = model(batch[:, :-1]).logits
            loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        with tracker.phase("backward"):
            loss.backward()
        with tracker.phase("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        step.record(loss=loss)


def block_ms(step, steps: int, device: str) -> float:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / steps


def one_process(args) -> None:
    from sysprof import trace

    model, optimizer, loader, size = build(args.device)
    tracker = trace.start(name="overhead", runs_dir=args.runs_dir, tokens_per_step=size["batch"] * size["ctx"])
    plain = lambda: plain_step(model, optimizer, loader, args.device)  # noqa: E731
    traced = lambda: traced_step(tracker, model, optimizer, loader, args.device)  # noqa: E731
    timed = {"api": lambda: block_ms(traced, args.block, args.device),
             "hooks": lambda: hooked_block_ms(tracker, plain, args.block, args.device)}[args.mode]
    block_ms(plain, args.block, args.device)
    timed()  # both warmed up: compile-free, but allocator and autotuning
    ratios = []
    for index in range(args.rounds):
        if index % 2 == 0:
            plain_ms, traced_ms = block_ms(plain, args.block, args.device), timed()
        else:
            traced_ms, plain_ms = timed(), block_ms(plain, args.block, args.device)
        ratios.append(traced_ms / plain_ms)
        times = {id(plain): plain_ms, id(traced): traced_ms}
    print(json.dumps({"device": args.device, "mode": args.mode, "ratio": statistics.median(ratios), "rounds": ratios,
                      "plain_ms": times[id(plain)], "traced_ms": times[id(traced)]}))


def hooked_block_ms(tracker, step, steps: int, device: str) -> float:
    """The unchanged loop's block with `sysprof trace`'s hooks on (put on and taken off outside the timing)."""
    from sysprof.trace.hooks import install, remove

    auto = install(tracker)
    try:
        return block_ms(step, steps, device)
    finally:
        remove(auto)


def verdict(ratios: list[float]) -> tuple[float, float, float, str]:
    from scipy import stats

    logs = [math.log(r) for r in ratios]
    mean, half = statistics.fmean(logs), 0.0
    if len(logs) > 1:
        half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    low, high = math.exp(mean - half), math.exp(mean + half)
    word = "pass" if high < 1 + LIMIT else "FAIL" if low > 1 + LIMIT else "inconclusive"
    return math.exp(mean), low, high, word


def drive(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for index in range(args.processes):
        argv = ["--one", "--device", args.device, "--mode", args.mode, "--rounds", str(args.rounds), "--block",
                str(args.block), "--runs-dir", str(out / "runs")]
        done = subprocess.run([sys.executable, "-m", "benchmarks.trace.overhead", *argv], capture_output=True,
                              text=True, cwd=ROOT, timeout=1800)
        if done.returncode != 0:
            sys.exit(f"process {index} failed: {done.stderr[-2000:]}")
        lines.append(json.loads(done.stdout.strip().splitlines()[-1]))
    (out / f"overhead-{args.device}-{args.mode}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ratio, low, high, word = verdict([line["ratio"] for line in lines])
    print(f"| {args.device} | {args.mode} | {len(lines)} × {args.rounds} rounds × {args.block} steps | "
          f"{statistics.median(line['plain_ms'] for line in lines):.2f} | "
          f"{statistics.median(line['traced_ms'] for line in lines):.2f} | {100 * (ratio - 1):+.2f}% "
          f"[{100 * (low - 1):+.2f}%, {100 * (high - 1):+.2f}%] | {word} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=sorted(SIZES))
    parser.add_argument("--mode", default="api", choices=("api", "hooks"))
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--block", type=int, default=30)
    parser.add_argument("--out", default="benchmarks/trace/results/latest")
    parser.add_argument("--runs-dir")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    one_process(args) if args.one else drive(args)


if __name__ == "__main__":
    main()
