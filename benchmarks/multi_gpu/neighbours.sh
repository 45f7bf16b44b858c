# Another job on one rank's GPU, as users meet it: a bf16 matmul loop on GPU 1 while `sysprof run --nproc 2` runs,
# and the same run without it. Prints each run's findings and other-process warnings.
# On a 2-GPU machine, from the repository root:  bash benchmarks/multi_gpu/neighbours.sh OUT_DIR [MODELS] [LAUNCHES]
# The 4-GPU case (the neighbour on GPU 2, every rank under nsys):
#   NPROC=4 NEIGHBOUR_GPU=2 NEIGHBOUR_S=400 RUN_OPTIONS="--profiler nsys" bash benchmarks/multi_gpu/neighbours.sh OUT_DIR xl 1
set -u
out=${1:?usage: neighbours.sh OUT_DIR [MODELS] [LAUNCHES]} models=${2:-"xl small"} launches=${3:-1}
nproc=${NPROC:-2} gpu=${NEIGHBOUR_GPU:-1} conditions=${CONDITIONS:-"neighbour plain"}
conditions=${conditions//,/ }  # "neighbour,plain" as stragglers.py writes them
read -ra options <<< "${RUN_OPTIONS:-}"
seconds=${NEIGHBOUR_S:-120}  # long enough to cover the run's passes (an nsys run's profiled pass too)
if [ "$gpu" -ge "$nproc" ]; then echo "NEIGHBOUR_GPU=$gpu is no rank's GPU with NPROC=$nproc" >&2; exit 2; fi
source .gpu/env.sh && source benchmarks/source_root.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
neighbour() {  # $1 seconds of back-to-back 8192² bf16 matmuls on GPU $gpu
    python3 -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda:$gpu', dtype=torch.bfloat16)
t = time.time()
while time.time() - t < $1: a @ a
torch.cuda.synchronize()" &
}
for launch in $(seq 1 "$launches"); do
  for model in $models; do
    for cond in $conditions; do
      if [ "$cond" = neighbour ]; then neighbour "$seconds"; pid=$!; sleep 8; fi
      python3 -m sysprof.profiler_core run --model "$model" --ctx 512 --batch 4 --dtype bf16 --attention sdpa \
          --optimizer-impl fused --nproc "$nproc" --warmup 3 --steps 20 --runs-dir /tmp/neighbour-runs "${options[@]}" --json \
          > "$out/$model-$cond-$launch.json" 2> "$out/$model-$cond-$launch.err"
      if [ "$cond" = neighbour ]; then kill "$pid"; wait "$pid" 2>/dev/null; fi
      python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(sys.argv[2], s['status'], 'step', round(s['phases']['step']['median_ms'], 1))
for f in s.get('ranks', {}).get('findings', []): print('  finding:', f)
for r in s.get('ranks', {}).get('rows', []):
    print('  rank', r['rank'], {k: v if v is None else round(v, 1) for k, v in (r.get('median_ms') or {}).items()},
          'exposed comm', r.get('exposed_comm_ms'), 'SM', r.get('sm_clock_mhz'), 'W', r.get('power_w'))
for w in s.get('warnings', []):
    if w.get('code') == 'gpu_shared': print('  warning:', w['message'][:110])
" "$out/$model-$cond-$launch.json" "$model $cond $launch"
    done
  done
done
