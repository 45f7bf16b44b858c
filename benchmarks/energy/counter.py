"""How fine NVML's energy counter is, and what reading it costs: while the GPU runs matmuls back to back, read
nvmlDeviceGetTotalEnergyConsumption in a loop for a few seconds; print the median time between changes of its value,
the median joules per change, the microseconds per read, and the mean power it implies beside NVML's power reading.
The runner reads it before and after each step (runner/energy.py): a step shorter than one update reads coarse.

  python3 -m benchmarks.energy.counter [--seconds 3]
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

import pynvml
import torch


def _busy(stop: threading.Event) -> None:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while not stop.is_set():
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    stop = threading.Event()
    worker = threading.Thread(target=_busy, args=(stop,))
    worker.start()
    time.sleep(1.0)  # clocks and power up
    reads, changes = 0, []
    started = last_t = time.perf_counter()
    last = first = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    while time.perf_counter() - started < args.seconds:
        value = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        reads += 1
        if value != last:
            now = time.perf_counter()
            changes.append((now - last_t, (value - last) / 1000))
            last, last_t = value, now
    elapsed = time.perf_counter() - started
    power = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
    stop.set()
    worker.join()
    gaps = [gap for gap, _ in changes[1:]]
    print(f"{torch.cuda.get_device_name()}: {reads} reads in {elapsed:.1f} s, {elapsed / reads * 1e6:.1f} µs a read; "
          f"{len(changes)} changes, median {statistics.median(gaps) * 1e3:.1f} ms apart "
          f"(min {min(gaps) * 1e3:.1f}, max {max(gaps) * 1e3:.1f}), median "
          f"{statistics.median(j for _, j in changes[1:]):.2f} J a change; counter mean "
          f"{(last - first) / 1000 / (last_t - started):.0f} W, NVML power reading {power:.0f} W")


if __name__ == "__main__":
    main()
