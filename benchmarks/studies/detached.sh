#!/usr/bin/env bash
# Run one long command (a 20-minute advise) across several 10-minute calls without cutting it: the first
# call starts it in its own process session (the machine keeps such a process while it stays up), each
# call then watches it for up to SECONDS and copies its log and status to OUT; the next call must follow while
# the machine is still up. Run from the project root, after `source .gpu/env.sh && source
# benchmarks/source_root.sh` (the detached process keeps that environment, NVLink multicast off included).
#   bash benchmarks/studies/detached.sh start DIR -- timeout -k 15 1500 python3 -m sysprof.profiler_core advise ...
#   bash benchmarks/studies/detached.sh watch DIR SECONDS "$OUT"
# DIR (under the gitignored runs/) holds log.txt, pid and, once it ends, rc.
set -u
mode=$1 dir=$2
case "$mode" in
  start)
    [ "${3:-}" = "--" ] || { echo "usage: detached.sh start DIR -- COMMAND..." >&2; exit 2; }
    shift 3
    mkdir -p "$dir"
    rm -f "$dir/rc"
    # the status goes to rc.tmp, then by rename to rc: a watcher never reads a half-written one
    setsid nohup bash -c 'out=$1; shift; "$@"; echo $? > "$out/rc.tmp"; mv "$out/rc.tmp" "$out/rc"' \
      detached "$dir" "$@" > "$dir/log.txt" 2>&1 < /dev/null &
    echo $! > "$dir/pid"
    echo "started pid $(cat "$dir/pid"): $*"
    ;;
  watch)
    seconds=$3 out=$4
    end=$((SECONDS + seconds))
    while [ ! -e "$dir/rc" ] && [ $SECONDS -lt "$end" ]; do sleep 5; done
    mkdir -p "$out"
    cp "$dir/log.txt" "$out/"
    if [ -e "$dir/rc" ]; then echo "ended, rc $(cat "$dir/rc")"; else echo "still running after ${seconds}s"; fi
    tail -n 40 "$dir/log.txt"
    ;;
  *) echo "usage: detached.sh start DIR -- COMMAND... | watch DIR SECONDS OUT" >&2; exit 2 ;;
esac
