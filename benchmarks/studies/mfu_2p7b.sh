#!/usr/bin/env bash
# The MFU figure: 2.7B, ctx 512, batch 4, bf16, SDPA, compiled, train; each a fresh `sysprof run`
# (5 warm-up + 20 measured steps), the settings interleaved round by round. One JSON line per run: optimizer impl,
# compile mode, step median and spread, optimizer phase median, MFU as the tool shows it, whether CUDA graphs ran.
#   IMPLS="fused foreach" MODES="default" ROUNDS=3 bash benchmarks/studies/mfu_2p7b.sh      (the defaults)
#   IMPLS=fused MODES="default reduce-overhead max-autotune-no-cudagraphs" ROUNDS=1 bash benchmarks/studies/mfu_2p7b.sh
set -u
for round in $(seq 1 "${ROUNDS:-3}"); do
  for impl in ${IMPLS:-fused foreach}; do
    for mode in ${MODES:-default}; do
      python3 -m sysprof.profiler_core run --model 2.7B --ctx 512 --batch 4 --dtype bf16 --attention sdpa --compile \
        --compile-mode "$mode" --optimizer-impl "$impl" --warmup 5 --steps 20 --json --runs-dir "${RUNS:-runs}" \
        2>/dev/null |
        python3 -c "import json,sys; s=json.load(sys.stdin); p=s.get('phases') or {}; st=p.get('step') or {}
print(json.dumps({'round': $round, 'impl': '$impl', 'mode': '$mode', 'status': s['status'],
  'step_median_ms': st.get('median_ms'), 'step_min_ms': st.get('min_ms'), 'step_max_ms': st.get('max_ms'),
  'step_cv': st.get('cv'), 'optimizer_median_ms': (p.get('optimizer') or {}).get('median_ms'), 'mfu': s.get('mfu'),
  'tflops': s.get('tflops'), 'compile_s': s.get('compile_s'), 'cuda_graphs': (s.get('compile') or {}).get('cuda_graphs'),
  'error': (s.get('error') or {}).get('message'), 'device': s['env'].get('device_name')}))"
    done
  done
done
