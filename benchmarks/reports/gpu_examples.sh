#!/usr/bin/env bash
# The directories behind the example reports, made on the GPU machine in one call:
#   bash benchmarks/reports/gpu_examples.sh OUT_DIR
# a profiled run with its memory pass, the attention study (built-in eager and SDPA beside a user's attention
# function and a user's attention layer, bf16 autocast) and the precision study (forward and train step). Each
# directory is packed as OUT_DIR/NAME.tgz without the raw profiler files (.nsys-rep, .sqlite, snapshot pickles):
# `sysprof report` reads the analyses beside them. Each command is bounded so a slow one leaves the others' data.
set -u
out=$1
runs=${EXAMPLE_RUNS:-/tmp/example_runs}
mkdir -p "$out" "$runs"
sysprof() { python3 -m sysprof.profiler_core "$@"; }

step() {  # NAME SECONDS ARGS...: one command, its output in OUT/NAME.log, its directory packed
    local name=$1 limit=$2
    shift 2
    local start=$(date +%s)
    timeout "$limit" python3 -m sysprof.profiler_core "$@" --runs-dir "$runs/$name" >"$out/$name.log" 2>&1
    echo "sysprof $*  # rc=$?, $(($(date +%s) - start)) s" >>"$out/commands.txt"
    tar czf "$out/$name.tgz" --exclude='*.nsys-rep' --exclude='*.sqlite' --exclude='*.pickle' \
        --exclude='*.qdstrm' -C "$runs" "$name"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
step run 120 run --model small --ctx 256 --batch 4 --dtype bf16 --attention sdpa --profiler nsys --memory
step attention 170 study attention --dtype bf16 --d 32,128 --seq 512,2048,8192,16384 \
    --impl eager,sdpa,tests/data/attention/mine.py:attention,tests/data/attention/layer.py:CausalSelfAttention
step precision 230 study precision --models small,medium --modes forward,train --repeats 2
