"""What each thing the tracker does in a step costs on this GPU (µs per call, mean of many): the sizes behind the
tracker's design (events pooled, memory peaks read on sampled steps, the loss through a pinned pool)."""
import argparse
import time

import torch


def per_call_us(call, count: int = 5000) -> float:
    for _ in range(100):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    torch.cuda.init()
    x = torch.randn(1024, device="cuda")
    loss = x.sum()
    pinned = torch.empty((), pin_memory=True)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(64)]
    costs = {
        "Event(enable_timing=True)": lambda: torch.cuda.Event(enable_timing=True),
        "event.record()": lambda: events[0].record(),
        "event.query()": lambda: events[0].query(),
        "reset_peak_memory_stats()": torch.cuda.reset_peak_memory_stats,
        "max_memory_allocated()": torch.cuda.max_memory_allocated,
        "nvtx range_push+pop": lambda: (torch.cuda.nvtx.range_push("x"), torch.cuda.nvtx.range_pop()),
        "torch.empty((), pin_memory=True)": lambda: torch.empty((), pin_memory=True),
        "pinned.copy_(loss, non_blocking)": lambda: pinned.copy_(loss.detach(), non_blocking=True),
        "time.perf_counter()": time.perf_counter,
    }
    for name, call in costs.items():
        print(f"| {name} | {per_call_us(call):.2f} |")


if __name__ == "__main__":
    main()
