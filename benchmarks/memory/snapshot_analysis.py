"""Time analyze_snapshot end to end (load included) on a snapshot with >= 100k trace entries.

The large snapshot is *derived from real data*: the H200 fixture's trace (11,226 events of two CS336-small
train steps, ../shared/fixtures/h200_small_fp32/memory_snapshot.pickle.xz) is replayed back to back
`--copies` times. Each copy keeps every event's action, size and stack (the same frame objects, so the
pickle memoizes them as torch's own dump does) but gets its addresses moved to a disjoint range and its
times shifted past the previous copy, so the replay sees `copies` x 2 consecutive train steps. Segments
(the pre-recording baseline) and the Optimizer.* annotations are kept / shifted alike.

    taskset -c 0,1 .venv/bin/python -m benchmarks.memory.snapshot_analysis
"""

from __future__ import annotations

import argparse
import lzma
import pickle
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sysprof.profiler_core.memory import analyze_snapshot, load_snapshot  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "h200_small_fp32" / "memory_snapshot.pickle.xz"
ADDRESS_STRIDE = 1 << 48  # far above any real device address, so copies never collide


def replicate(snapshot: dict, copies: int) -> dict:
    trace = snapshot["device_traces"][0]
    span_us = trace[-1]["time_us"] - trace[0]["time_us"] + 1000
    big = {key: value for key, value in snapshot.items() if key not in ("device_traces", "external_annotations")}
    events, notes = [], []
    for k in range(copies):
        for event in trace:
            shifted = dict(event)  # shallow: the frames list stays shared, as in a real dump
            shifted["addr"] = event["addr"] + k * ADDRESS_STRIDE
            shifted["time_us"] = event["time_us"] + k * span_us
            events.append(shifted)
        for note in snapshot.get("external_annotations", []):
            notes.append({**note, "time_us": note["time_us"] + k * span_us})
    big["device_traces"] = [events]
    big["external_annotations"] = notes
    return big


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=9, help="copies of the real trace (9 -> 101,034 events)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not FIXTURE.is_file():
        sys.exit(f"fixture not found: {FIXTURE}")
    big = replicate(load_snapshot(FIXTURE), args.copies)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory_snapshot.pickle"
        path.write_bytes(pickle.dumps(big, protocol=pickle.HIGHEST_PROTOCOL))
        print(f"snapshot: {len(big['device_traces'][0]):,} trace entries, {path.stat().st_size / 1e6:.1f} MB pickle "
              f"({args.copies} copies of the real H200 trace)")
        timings = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = analyze_snapshot(path)
            timings.append(time.perf_counter() - start)
        print(f"analyze_snapshot (load included): best {min(timings):.3f} s, all "
              + ", ".join(f"{t:.3f}" for t in timings) + " s")
        print(f"n_events {result['n_events']:,}, peak {result['peak_allocated_bytes']:,} B, "
              f"timeline points {len(result['timeline']['t'])}")
        xz_path = path.with_suffix(".pickle.xz")
        xz_path.write_bytes(lzma.compress(path.read_bytes(), preset=1))
        start = time.perf_counter()
        analyze_snapshot(xz_path)
        print(f"same, xz-compressed file: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
