#!/usr/bin/env bash
# Regenerates the tables of benchmarks/studies/seed_tables.md: runs the named groups of studies, then writes every table of
# each study directory as Markdown (OUT/GROUP.md), the command line and its wall time (OUT/commands.txt) and the
# study's output (OUT/GROUP.log). Run it on the GPU machine from the project root.
#
#   bash benchmarks/studies/seed_tables.sh OUT_DIR GROUP...
#   groups: attention (or attention-fp32 and attention-bf16, attention-bf16-sdpa, attention-bf16-uncompiled) passes
#           precision warmup compile (or compile-medium) profiled memory
#
# Each group is bounded by SEED_GROUP_TIMEOUT seconds (default 290): a study cut short keeps its finished cells,
# and their tables are still written.
set -u
out=$1
shift
runs=${SEED_RUNS:-/tmp/seed_runs}
limit=${SEED_GROUP_TIMEOUT:-290}
mkdir -p "$out" "$runs"

sysprof() { python3 -m sysprof.profiler_core "$@"; }

command_of() {  # sets `args`, the group's sysprof arguments, and `pivot`, the pivot its tables add
    pivot=()
    case $1 in
        attention) args=(study attention --dtype fp32,bf16) ;;
        attention-fp32) args=(study attention --dtype fp32) ;;  # the two halves of `attention`, for two GPUs
        attention-bf16) args=(study attention --dtype bf16) ;;
        attention-bf16-sdpa) args=(study attention --dtype bf16 --impl sdpa) ;;
        attention-bf16-uncompiled) args=(study attention --dtype bf16 --impl eager,sdpa) ;;  # one GPU model per speedup
        passes) args=(study passes --models small,medium,large,xl,2.7B) ;;
        precision) args=(study precision --models small,medium,large) ;;
        warmup) args=(study warmup --models small,medium --ctxs 128,512 --warmups 0,1,5
                      --modes forward,forward_backward) ;;
        compile) args=(study compile --models small,medium --ctxs 256,512) ;;
        compile-medium) args=(study compile --models medium --ctxs 256,512) ;;  # compile's slow half, alone
        profiled) pivot=(--pivot model:ctx --value "profiled fwd ms")
                  args=(sweep --model small,medium,large --ctx 128,256,512 --profiler nsys "${pivot[@]}") ;;
        memory) args=(sweep --model small --ctx 256,512 --mode forward,forward_backward --dtype fp32,bf16
                      --memory --nvtx-modules 3) ;;
        *) return 1 ;;
    esac
}

write_tables() {  # every table of one study directory, as Markdown
    sysprof export "$1" --list | cut -f1 | while IFS= read -r title; do
        printf '### %s\n\n' "$title"
        sysprof export "$1" --table "$title"
        echo
    done
    if [ ${#pivot[@]} -gt 0 ]; then
        printf '### %s by %s\n\n' "${pivot[3]}" "${pivot[1]}"  # e.g. "profiled fwd ms by model:ctx"
        sysprof export "$1" "${pivot[@]}"
        echo
    fi
}

for group in "$@"; do
    command_of "$group" || { echo "unknown group: $group" >&2; exit 2; }
    start=$(date +%s)
    timeout "$limit" python3 -m sysprof.profiler_core "${args[@]}" --runs-dir "$runs/$group" >"$out/$group.log" 2>&1
    rc=$?
    echo "sysprof ${args[*]}  # rc=$rc, $(($(date +%s) - start)) s" >>"$out/commands.txt"
    for dir in "$runs/$group"/*/; do
        if [ -f "$dir/study.json" ] || [ -f "$dir/sweep.json" ]; then write_tables "$dir" >>"$out/$group.md"; fi
    done
done
