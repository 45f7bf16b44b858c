#!/usr/bin/env bash
# `sysprof advise` on the CS336-style user model (RoPE, its own Python AdamW; fp32, ctx 256, batch 4), as a new
# user would run it, with any further options (--budget, --gpus, --goal); what it printed and its study (profiles
# left out) go to the folder given first. FACTORY and OPTIMIZER point at another user model (the nanoGPT-style one
# with torch.nn.Linear layers: FACTORY=tests/data/models/nanogpt_style/gpt.py:build
# OPTIMIZER=tests/data/models/nanogpt_style/gpt.py:PlainSGD). From the project root on a GPU node:
#   bash benchmarks/studies/advise_user_model.sh OUT_DIR SECONDS --budget 5 --gpus idle
set -uo pipefail
out=$1 limit=$2
shift 2
factory=${FACTORY:-benchmarks/user_models/rope_lm/model.py:build}
optimizer=${OPTIMIZER:-benchmarks/user_models/rope_lm/optim.py:AdamW}
name=$(echo "${FACTORY:+$(basename "${factory%%:*}" .py)} $*" | tr -c 'a-z0-9\n' '_' | tr -s '_')
runs="runs/user_model_${name}"
mkdir -p "$out" "$runs"
timeout -k 15 "$limit" python3 -m sysprof.profiler_core advise --model small \
  --model-factory "$factory" --optimizer "$optimizer" \
  --ctx 256 --batch 4 --dtype fp32 --runs-dir "$runs" "$@" > "$out/advise_${name}.txt" 2>&1
echo "exit $? after ${SECONDS} s" >> "$out/advise_${name}.txt"
study=$(ls -td "$runs"/*advise* | head -1)
tar -C "$(dirname "$study")" --exclude='*.nsys-rep' --exclude='*.sqlite' --exclude='*.qdstrm' --exclude='*.pickle*' \
  -czf "$out/study_${name}.tgz" "$(basename "$study")"
