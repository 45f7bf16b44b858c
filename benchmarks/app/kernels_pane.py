"""Sort + filter a 20k-row kernel table the way the Kernels screen does (target ≤ 100 ms).

    .venv/bin/python -m benchmarks.app.kernels_pane [--rows 20000] [--repeat 20]

The table is the real H200 phase kernel table (tests/data/runs/small-h200-analyses, 64 rows from nsys)
replicated to 20k rows; each replica's names get a suffix so the filter has distinct strings to scan.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sysprof.tui.model.kernel_data import KernelView, apply_view, load_kernel_data  # noqa: E402

KERNELS = ROOT / "tests" / "data" / "runs" / "small-h200-analyses" / "kernels"
VIEWS = (KernelView(name_filter="elementwise", phase="backward", sort_by="total_ns"),
         KernelView(name_filter="GEMM", sort_by="avg_ns", descending=False),
         KernelView(sort_by="name"))


def replicated_table(rows: int):
    import pandas as pd

    real = load_kernel_data(KERNELS).table
    copies = -(-rows // len(real))
    frames = [real.assign(name=real["name"] + f" #{i}") for i in range(copies)]
    return pd.concat(frames, ignore_index=True).head(rows)


def time_view(table, view: KernelView, repeat: int) -> list[float]:
    apply_view(table, view)  # warm-up: pandas caches string internals on first use
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        apply_view(table, view)
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    table = replicated_table(args.rows)
    print(f"{len(table):,} kernel rows (real table ×{-(-args.rows // 64)})")
    for view in VIEWS:
        samples = time_view(table, view, args.repeat)
        print(f"filter {view.name_filter!r:14} phase {view.phase:9} sort {view.sort_by:8}: median "
              f"{statistics.median(samples):6.1f} ms, max {max(samples):6.1f} ms (target ≤ 100 ms)")


if __name__ == "__main__":
    main()
