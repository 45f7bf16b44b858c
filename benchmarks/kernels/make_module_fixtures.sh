#!/usr/bin/env bash
# Real profiler output of --nvtx-modules, for the CPU tests (tests/*/test_*_module_fixture.py). Needs a CUDA GPU
# and Nsight Systems; run from the project root after `source .gpu/env.sh` (which exports SYSPROF_NSYS):
#
#   OUT=/path/to/folder bash benchmarks/kernels/make_module_fixtures.sh [--check]
#
# Two runs of the nanoGPT-style example (tests/data/models) with the tiny preset's dims (d_model 128, 2 layers,
# 4 heads, ctx 128, batch 4), 2 warm-up + 3 measured steps, module ranges down to depth 3: one with nsys and the
# memory pass, one with torch.profiler. Writes $OUT/module_ranges/: copy that folder to tests/data/module_ranges/.
# Large files are xz-compressed; only paths are edited (shorten_fixture_paths.py). --check runs the fixture tests against the new folder.
set -euo pipefail
out="${OUT:?set OUT to the folder to write into}/module_ranges"
runs=$(mktemp -d)
mkdir -p "$out"
common=(--model tiny --ctx 128 --batch 4 --warmup 2 --steps 3 --nvtx-modules 3 --runs-dir "$runs"
        --model-factory tests/data/models/nanogpt_style/gpt.py:build)

run_dir_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_dir"])' "$1" || echo "no-run"; }
# A pass that failed leaves files out: say which, keep going, so its logs still come back.
pack() {  # xz -9 with Python's lzma: no xz binary needed
  [[ -f "$1" ]] || { echo "missing: $1"; return 0; }
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(open(sys.argv[1], "rb"), lzma.open(sys.argv[2], "wb", preset=9))' "$1" "$2"
}
keep() { if [[ -f "$1" ]]; then cp "$1" "$2"; else echo "missing: $1"; fi; }

python3 -m sysprof.profiler_core run "${common[@]}" --profiler nsys --memory --json > "$out/run_nsys.json" \
  2> "$out/run_nsys.stderr.txt" || echo "nsys run exited $? (its JSON says why)"
python3 -m sysprof.profiler_core run "${common[@]}" --profiler torch --json > "$out/run_torch.json" \
  2> "$out/run_torch.stderr.txt" || echo "torch run exited $? (its JSON says why)"

nsys_run=$(run_dir_of "$out/run_nsys.json")
torch_run=$(run_dir_of "$out/run_torch.json")
pack "$nsys_run/profiled/profile.sqlite" "$out/profile.sqlite.xz"
pack "$nsys_run/memory/memory_snapshot.pickle" "$out/memory_snapshot.pickle.xz"
pack "$torch_run/profiled/torch_trace.json" "$out/torch_trace.json.xz"
keep "$nsys_run/memory/modules.json" "$out/modules.json"  # the same model and depth in every pass
keep "$nsys_run/kernels/analysis.json" "$out/nsys_kernels_analysis.json"
keep "$nsys_run/memory/analysis.json" "$out/memory_analysis.json"
keep "$torch_run/kernels/analysis.json" "$out/torch_kernels_analysis.json"
keep "$nsys_run/manifest.json" "$out/manifest.json"
for pass in profiled memory; do keep "$nsys_run/$pass/stderr.log" "$out/nsys_run_${pass}_stderr.log"; done
keep "$torch_run/profiled/stderr.log" "$out/torch_run_profiled_stderr.log"
python3 -m sysprof.profiler_core analyze "$nsys_run" > "$out/analyze_nsys.txt" 2>&1 || true
python3 -m sysprof.profiler_core analyze "$torch_run" > "$out/analyze_torch.txt" 2>&1 || true
{
  echo "# Real --nvtx-modules output"
  echo
  echo "Made by benchmarks/kernels/make_module_fixtures.sh (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(date -u +%Y-%m-%d)) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1),"
  echo "$(python3 -c 'import torch; print("torch", torch.__version__)'), $("${SYSPROF_NSYS:-nsys}" --version 2>&1 | head -1)."
  echo "Only paths are edited: benchmarks/kernels/shorten_fixture_paths.py replaced the checkout's absolute path with"
  echo "\`<checkout>\` and the nsys export's copies of the machine's environment variables with a placeholder."
  echo "The nanoGPT-style example (tests/data/models) with the tiny preset's dims, ctx 128,"
  echo "batch 4, fp32 train, 2 warm-up + 3 measured steps, --nvtx-modules 3:"
  echo
  echo "| file | what |"
  echo "|---|---|"
  echo "| profile.sqlite.xz | the profiled pass's nsys export (--profiler nsys) |"
  echo "| memory_snapshot.pickle.xz | the memory pass's allocator snapshot, allocations tagged by module |"
  echo "| modules.json | the hooked modules (path, class, type, parameters) as the passes wrote them |"
  echo "| torch_trace.json.xz | a second run's torch.profiler trace (--profiler torch) |"
  echo "| manifest.json, run_*.json | the nsys run's manifest; both runs' sysprof run --json |"
  echo "| *_analysis.json, analyze_*.txt | what sysprof made of them at that commit (for reading, not for tests) |"
  echo "| *.log, *.stderr.txt | the passes' stderr |"
} > "$out/README.md"
python3 -m benchmarks.kernels.shorten_fixture_paths "$out" "$PWD"
ls -la "$out"

if [[ "${1:-}" == "--check" ]]; then
  rm -rf tests/data/module_ranges && cp -r "$out" tests/data/module_ranges
  python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernels_module_fixture.py \
    tests/memory/test_memory_module_fixture.py
fi
