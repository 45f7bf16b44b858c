#!/usr/bin/env bash
# The MFU figure: 2.7B, ctx 512, batch 4, bf16, SDPA, compiled, train; fused against foreach AdamW,
# interleaved, each a fresh `sysprof run` (5 warm-up + 20 measured steps). One JSON line per run:
# optimizer impl, step median and spread, optimizer phase median, MFU as the tool shows it.
set -u
for round in 1 2 3; do
  for impl in fused foreach; do
    if [ "$impl" = foreach ] && [ "$round" = 3 ]; then continue; fi
    python3 -m profiler_core run --model 2.7B --ctx 512 --batch 4 --dtype bf16 --attention sdpa --compile \
      --optimizer-impl "$impl" --warmup 5 --steps 20 --json --runs-dir "${RUNS:-runs}" 2>/dev/null |
      python3 -c "import json,sys; s=json.load(sys.stdin); p=s['phases']; print(json.dumps({'round': $round,
        'impl': '$impl', 'status': s['status'], 'step_median_ms': p['step']['median_ms'],
        'step_min_ms': p['step']['min_ms'], 'step_max_ms': p['step']['max_ms'], 'step_cv': p['step']['cv'],
        'optimizer_median_ms': p['optimizer']['median_ms'], 'mfu': s['mfu'], 'tflops': s['tflops'],
        'compile_s': s['compile_s'], 'device': s['env']['device_name']}))"
  done
done
