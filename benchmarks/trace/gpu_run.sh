#!/usr/bin/env bash
# The tracker's GPU figures in one go (run from the project root, on a GPU node, results under $OUT):
# the GPU test, the overhead on a real loop (GPU, then the node's CPU), and a traced loop with a second job
# starting on its GPU partway through.
set -uo pipefail
out=${OUT:-benchmarks/trace/results/latest}
mkdir -p "$out"
nvidia-smi --query-gpu=name,power.limit,clocks.sm --format=csv > "$out/gpu.csv"
python3 benchmarks/trace/costs.py > "$out/costs.md" 2>&1
python3 -m pytest -q -p no:cacheprovider -m gpu tests/trace/test_trace_gpu.py 2>&1 | tail -15 > "$out/gpu_test.txt"
python3 -m benchmarks.trace.overhead --device cuda --processes 5 --rounds 6 --block 30 --out "$out/overhead" \
    > "$out/overhead_cuda.md" 2>&1
python3 -m benchmarks.trace.overhead --device cpu --processes 5 --rounds 6 --block 10 --out "$out/overhead" \
    > "$out/overhead_cpu.md" 2>&1
python3 tests/data/trace/train.py "$out/neighbour_runs" 4 0.5 --device cuda --width 4096 --repeat 64 \
    --steps 1500 > "$out/neighbour_train.txt" 2>&1 &
train=$!
sleep 8 && python3 benchmarks/trace/neighbour.py 600 > "$out/neighbour.txt" 2>&1 &
wait $train
pkill -f benchmarks/trace/neighbour.py
python3 - "$out" <<'PY'
import json, sys, glob
for path in sorted(glob.glob(f"{sys.argv[1]}/neighbour_runs/*/summary.json")):
    summary = json.load(open(path))
    print(json.dumps({"phases_ms": {k: round(v["median_ms"], 3) for k, v in summary["phases"].items()},
                      "findings": summary["findings"]}, indent=1))
PY
