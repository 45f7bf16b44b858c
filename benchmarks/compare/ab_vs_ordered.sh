# A change that touches only the optimizer (foreach → fused AdamW), judged two ways on one GPU, PAIRS times:
# `sysprof ab` (A and B interleaved in fresh processes) and two groups run one after the other, then compared.
# Prints each pair's verdicts per phase. From the repository root on the GPU machine:
#   bash benchmarks/compare/ab_vs_ordered.sh OUT_DIR [PAIRS] [REPEATS] [both|ab|ordered]
# (the last: run only one of the two ways, to bring one count up to the other's).
set -u
out=$1 pairs=${2:-1} repeats=${3:-4} ways=${4:-both}
source .gpu/env.sh && source benchmarks/source_root.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
shared="--model small --dtype bf16 --ctx 256 --batch 4 --warmup 5 --steps 30"
runs=/tmp/ab-vs-ordered && mkdir -p "$out" "$runs"
run_dir() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['run_dir'])" "$1"; }
verdicts() { python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], 'interleaved', d['interleaved'], ' · '.join(f\"{r['phase']} {r['verdict_text']}\" for r in d['phases']))
" "$1" "$2"; }
for pair in $(seq 1 "$pairs"); do
  if [ "$ways" != ordered ]; then
  python3 -m sysprof.profiler_core ab $shared --a "--optimizer-impl foreach" --b "--optimizer-impl fused" \
      --repeats "$repeats" --runs-dir "$runs" --json > "$out/ab-$pair.json" 2> "$out/ab-$pair.err"
  verdicts "$out/ab-$pair.json" "ab $pair:"
  fi
  [ "$ways" = ab ] && continue
  python3 -m sysprof.profiler_core run $shared --optimizer-impl foreach --repeats "$repeats" --runs-dir "$runs" \
      --json > "$out/a-$pair.json" 2>/dev/null
  python3 -m sysprof.profiler_core run $shared --optimizer-impl fused --repeats "$repeats" --runs-dir "$runs" \
      --json > "$out/b-$pair.json" 2>/dev/null
  python3 -m sysprof.profiler_core compare "$(run_dir "$out/a-$pair.json")" "$(run_dir "$out/b-$pair.json")" \
      --force --json > "$out/ordered-$pair.json"
  verdicts "$out/ordered-$pair.json" "ordered $pair:"
done
