"""Time phase attribution on a ~1M-kernel nsys export derived from the real H200 fixture.

The fixture (../shared/fixtures/h200_small_fp32/report.sqlite.xz) holds 5 measured
training steps: 10,160 kernels, their CUDA API calls and the main thread's NVTX
ranges.  This script copies it and appends COPIES-1 replicas of exactly those
rows, each shifted in time by a whole capture span and given fresh correlation
ids (and renumbered `step N` ranges), so the result looks like a long capture of
the same run.  No values are invented: every row is a real row, moved in time.

    python -m benchmarks.kernels.attribution [--copies 100] [--keep PATH]

Prints the build time, the kernel count, and the wall time of attribute_kernels
and analyze_sqlite (run it under `taskset -c 0,1` to mimic a 2-core box).
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # runnable as a plain script from anywhere

from sysprof.profiler_core.kernels import analyze_sqlite, attribute_kernels  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "h200_small_fp32" / "report.sqlite.xz"
SHIFTED_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")
STEPS_PER_COPY = 5


def build_replicated_export(target: Path, copies: int) -> None:
    with lzma.open(FIXTURE) as compressed, open(target, "wb") as out:
        shutil.copyfileobj(compressed, out)
    with sqlite3.connect(target) as conn:
        span = _capture_span(conn)
        correlation_stride = _max_correlation_id(conn) + 1
        for table in SHIFTED_TABLES:
            _append_copies(conn, table, copies, span, correlation_stride)


def _capture_span(conn: sqlite3.Connection) -> int:
    parts = [f'SELECT MIN(start) AS s, MAX("end") AS e FROM {t}' for t in SHIFTED_TABLES]
    first, last = conn.execute(f"SELECT MIN(s), MAX(e) FROM ({' UNION ALL '.join(parts)})").fetchone()
    return last - first + 1_000_000  # a 1 ms gap between copies


def _max_correlation_id(conn: sqlite3.Connection) -> int:
    tables = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")
    return max(conn.execute(f"SELECT MAX(correlationId) FROM {t}").fetchone()[0] for t in tables)


def _append_copies(conn: sqlite3.Connection, table: str, copies: int, span: int, stride: int) -> None:
    columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
    shifted = {
        "start": f"start + c.i * {span}",
        "end": f'"end" + c.i * {span}',
        "correlationId": f"correlationId + c.i * {stride}",
        # `step N` ranges keep counting up across copies, so steps stay distinct.
        "text": (f"CASE WHEN text LIKE 'step %' THEN 'step ' || (CAST(substr(text, 6) AS INTEGER) "
                 f"+ c.i * {STEPS_PER_COPY}) ELSE text END"),
    }
    select = ", ".join(shifted.get(name, f'"{name}"') for name in columns)
    conn.execute(
        f"INSERT INTO {table} SELECT {select} FROM {table}, "
        f"(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {copies - 1}) "
        f"SELECT i FROM n) AS c"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=100, help="replicas of the 5 measured steps (default 100)")
    parser.add_argument("--keep", type=Path, help="write the replicated sqlite here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        target = args.keep or Path(scratch) / "replicated.sqlite"
        started = time.perf_counter()
        build_replicated_export(target, args.copies)
        print(f"built {target} in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        attribution = attribute_kernels(target)
        attribute_s = time.perf_counter() - started
        kernels = attribution.kernels
        backward = int((kernels["phase"] == "backward").sum())
        print(f"attribute_kernels: {len(kernels):,} kernels in {attribute_s:.2f} s "
              f"(backward {backward:,} = {backward / args.copies:.0f} per copy of 5 steps)")
        started = time.perf_counter()
        result = analyze_sqlite(target)
        print(f"analyze_sqlite (attribution + all summaries): {time.perf_counter() - started:.2f} s, "
              f"{len(result['steps'])} steps, total GPU {result['totals']['gpu_ns'] / 1e9:.2f} s")


if __name__ == "__main__":
    main()
