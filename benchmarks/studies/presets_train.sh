#!/usr/bin/env bash
# The figures users compare with the CS336 seed tables: every preset, batch 4, ctx 256, train, fp32 and bf16.
# One fresh runner per row (sysprof run), 5 warm-up + 10 measured steps. Prints one JSON summary per line.
set -u
for dtype in fp32 bf16; do
  for model in small medium large xl 2.7B; do
    python3 -m sysprof.profiler_core run --model "$model" --ctx 256 --batch 4 --mode train --dtype "$dtype" \
      --warmup 5 --steps 10 --json || true
  done
done
