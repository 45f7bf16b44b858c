# A real nsys capture of a user's loop whose `fwd` range is never popped (tests/data/nsys/unpopped_fwd).
# On the GPU machine, from the repository root:  bash benchmarks/kernels/unpopped_capture.sh OUT_DIR
set -eu
out=$1
source .gpu/env.sh
mkdir -p "$out" && root=$PWD && cd "$out"
CUDA_VISIBLE_DEVICES=0 "$SYSPROF_NSYS" profile -o unpopped_fwd --trace cuda,nvtx --force-overwrite true \
    python3 "$root/tests/data/user_scripts/unpopped_fwd.py"
"$SYSPROF_NSYS" stats --report nvtx_sum,nvtx_kern_sum,cuda_gpu_kern_sum --format csv -o unpopped_fwd unpopped_fwd.nsys-rep
"$SYSPROF_NSYS" export --type sqlite -o unpopped_fwd.sqlite unpopped_fwd.nsys-rep
xz -9 unpopped_fwd.sqlite && rm -f unpopped_fwd.nsys-rep
