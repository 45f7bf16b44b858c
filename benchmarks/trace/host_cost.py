"""The tracker's own cost on the host's clock, with no model at all: steps of four empty phases and a loss record,
written as a real run directory. What a CPU loop pays per step for being traced.

    python3 -m benchmarks.trace.host_cost [--steps N] [--runs-dir DIR]
"""
import argparse
import tempfile
import time

from sysprof import trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--runs-dir", default=tempfile.mkdtemp())
    args = parser.parse_args()
    tracker = trace.start(name="host-cost", runs_dir=args.runs_dir, warmup=0, device="cpu")
    start = time.perf_counter()
    for _ in range(args.steps):
        with tracker.step() as step:
            for name in ("data", "forward", "backward", "optimizer"):
                with tracker.phase(name):
                    pass
            step.record(loss=1.0)
    looped = time.perf_counter() - start
    tracker.finish()
    print(f"{looped / args.steps * 1e6:.1f} µs a step ({args.steps} steps: four phases, the loss, written)")


if __name__ == "__main__":
    main()
