#!/usr/bin/env bash
# Regenerates the tables of benchmarks/studies/seed_tables.md: runs the named groups of studies, then writes every table of
# each study directory as Markdown (OUT/GROUP.md), the command line and its wall time (OUT/commands.txt) and the
# study's output (OUT/GROUP.log). Run it on the GPU machine from the project root.
#
#   bash benchmarks/studies/seed_tables.sh OUT_DIR GROUP...
#   groups: attention (or attention-fp32 and attention-bf16, attention-bf16-sdpa, attention-bf16-uncompiled) passes
#           precision warmup compile (or compile-medium) profiled memory
#           the larger models: profiled-big, profiled-big-bf16, profiled-big-compiled (xl and 2.7B, inference
#           forward and train step, under nsys), passes-compiled, passes-compiled-bf16, compile-large, compile-xl,
#           compile-2.7B (each with both sides' peak memory), oom (2.7B fp32 at ctx 512 and 1024, run with --force)
#
# Each group is bounded by SEED_GROUP_TIMEOUT seconds (default 290): a study cut short keeps its finished cells,
# and their tables are still written. GROUP@SECONDS gives one group its own bound, GROUP:MODELS its own models
# (e.g. passes-compiled:xl,2.7B@300, where the group takes --model or --models).
#
# Several GPUs: one chain of groups per GPU, the chains side by side (each GPU runs its groups one after another):
#   bash benchmarks/studies/seed_tables.sh OUT_DIR --gpu 0 profiled-big --gpu 1 passes-compiled-bf16 oom ...
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
        profiled-big*) pivot=(--pivot model:mode --value "profiled fwd ms")
                       args=(sweep --model xl,2.7B --ctx 512 --mode forward,train --warmup 3 --steps 5
                             --profiler nsys "${pivot[@]}")
                       case $1 in
                           profiled-big-bf16) args+=(--dtype bf16) ;;
                           profiled-big-compiled) args+=(--dtype bf16 --compile) ;;
                           profiled-big) ;;
                           *) return 1 ;;
                       esac ;;
        passes-compiled) args=(study passes --models small,medium,large,xl,2.7B --compile) ;;
        passes-compiled-bf16) args=(study passes --models small,medium,large,xl,2.7B --compile --dtype bf16) ;;
        compile-large) args=(study compile --models large --ctxs 512) ;;
        compile-xl) args=(study compile --models xl --ctxs 256) ;;
        compile-2.7B) args=(study compile --models 2.7B --ctxs 256) ;;  # fp32 at ctx 512: 64 GiB (71 reserved) eager
        oom) args=(sweep --model 2.7B --ctx 512,1024 --dtype fp32 --warmup 1 --steps 3 --force) ;;
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

with_models() {  # replaces the value of the group's --model or --models
    local i
    for i in "${!args[@]}"; do
        case ${args[$i]} in --model|--models) args[i + 1]=$1; return 0 ;; esac
    done
    echo "group $group takes no models" >&2
    return 1
}

parse_spec() {  # GROUP[:MODELS][@SECONDS] → args (the command), bound, and name (the spec without its bound)
    local spec=$1 models=
    name=${spec%@*} bound=$limit
    if [ "$spec" != "$name" ]; then bound=${spec##*@}; fi
    case $bound in ''|*[!0-9]*) echo "not a time bound in seconds: $spec" >&2; return 1 ;; esac
    group=${name%%:*}
    if [ "$name" != "$group" ]; then models=${name#*:}; fi
    command_of "$group" || { echo "unknown group: $group" >&2; return 1; }
    if [ -n "$models" ]; then with_models "$models" || return 1; fi
}

if [ "${1:-}" = --gpu ]; then  # one chain per GPU, side by side; each chain is this script on its GPU's groups
    gpus=() chains=()
    while [ $# -gt 0 ]; do  # every chain checked before any starts
        [ "$1" = --gpu ] && [ $# -ge 3 ] && [ "$3" != --gpu ] ||
            { echo "usage: OUT --gpu ID GROUP... [--gpu ID GROUP...]" >&2; exit 2; }
        gpu=$2 specs=()
        shift 2
        while [ $# -gt 0 ] && [ "$1" != --gpu ]; do parse_spec "$1" || exit 2; specs+=("$1"); shift; done
        gpus+=("$gpu") chains+=("${specs[*]}")
    done
    pids=()
    for i in "${!gpus[@]}"; do
        # shellcheck disable=SC2086  # a chain's specs are words without spaces
        CUDA_VISIBLE_DEVICES=${gpus[$i]} SEED_RUNS="$runs/gpu${gpus[$i]}" bash "$0" "$out/gpu${gpus[$i]}" ${chains[$i]} &
        pids+=($!)
    done
    worst=0
    for pid in "${pids[@]}"; do wait "$pid"; rc=$?; [ $rc -gt $worst ] && worst=$rc; done
    exit $worst  # 124: a study was cut by its time bound (its finished cells' tables are written)
fi

for spec in "$@"; do parse_spec "$spec" || exit 2; done  # a mistyped spec stops everything before anything runs
worst=0
for spec in "$@"; do
    parse_spec "$spec"
    file=${name//[:,]/_}  # passes-compiled:xl,2.7B → passes-compiled_xl_2.7B
    earlier=" $(ls "$runs/$file" 2>/dev/null | tr '\n' ' ') "  # an earlier call's studies are not this one's
    start=$(date +%s)
    timeout "$bound" python3 -m sysprof.profiler_core "${args[@]}" --runs-dir "$runs/$file" >"$out/$file.log" 2>&1
    rc=$?
    [ $rc -gt $worst ] && worst=$rc
    printf 'sysprof' >>"$out/commands.txt"
    printf ' %q' "${args[@]}" >>"$out/commands.txt"
    echo "  # rc=$rc, $(($(date +%s) - start)) s" >>"$out/commands.txt"
    for dir in "$runs/$file"/*/; do
        case $earlier in *" $(basename "$dir") "*) continue ;; esac
        if [ -f "$dir/study.json" ] || [ -f "$dir/sweep.json" ]; then write_tables "$dir" >>"$out/$file.md"; fi
    done
done
exit $worst
