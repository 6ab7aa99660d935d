#!/bin/sh
# scripts/gpu-check.sh OUTDIR: everything about the CUDA backend that needs a
# GPU, in one run (meant to finish in under 8 minutes on an H100/H200):
#   1. the machine: nvidia-smi, nvcc and cuDNN found (OUTDIR/env.txt)
#   2. a CUDA build for this GPU's arch only, in build-gpu (OUTDIR/build.log)
#   3. the CUDA suites: every kernel against the CPU (test_cuda_kernels), the
#      CNN's loss curve on cuda against the CPU's (test_cuda_train), and
#      test_backend_open (OUTDIR/cuda-tests.log)
#   4. the training-step benchmark (bench_train) on cuda and on the CPU for
#      the bench models, when bench/make_bench_models.py can write them with
#      this machine's python3 (OUTDIR/bench-cuda.txt, bench-cpu.txt)
# and a summary in OUTDIR/summary.txt. Each step has a time limit and the
# script goes on after a failure; its exit status is that of step 3.
# BUILD=dir changes the build folder; CUDNN_ROOT=dir points at a cuDNN 9
# outside the toolkit (else a Python environment's nvidia/cudnn is tried).
set -u
OUT=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-gpu}
JOBS=$(nproc 2>/dev/null || echo 4)
START=$(date +%s)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(($(date +%s) - START)); }

# ---- 1. the machine ----
{
    date -u
    nvidia-smi 2>&1 || echo "nvidia-smi: not found"
    PATH=$PATH:/usr/local/cuda/bin nvcc --version 2>&1 || echo "nvcc: not found"
} >"$OUT/env.txt"
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
ARCH=${CAP:-90}
CUDNN_ARG=""
if [ -n "${CUDNN_ROOT:-}" ]; then
    CUDNN_ARG="-DLANTERN_CUDNN_ROOT=$CUDNN_ROOT"
elif [ ! -e /usr/local/cuda/include/cudnn.h ]; then
    PYCUDNN=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.dirname(c.__file__) if c.__file__ else list(c.__path__)[0])' 2>/dev/null)
    if [ -n "$PYCUDNN" ]; then
        CUDNN_ARG="-DLANTERN_CUDNN_ROOT=$PYCUDNN"
        export LD_LIBRARY_PATH="$PYCUDNN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi
note "gpu-check: arch sm_$ARCH, cuDNN ${CUDNN_ARG:-from the CUDA toolkit}, build $BUILD, $JOBS jobs"

# ---- 2. the build ----
if timeout 300 cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" $CUDNN_ARG >"$OUT/build.log" 2>&1 &&
    timeout 300 cmake --build "$BUILD" -j"$JOBS" --target lantern test_cuda_kernels test_cuda_train test_cuda_plan \
        test_backend_open bench_train >>"$OUT/build.log" 2>&1; then
    note "build: ok ($(elapsed) s)"
else
    note "build: FAILED (see build.log, $(elapsed) s)"
    tail -30 "$OUT/build.log" >>"$SUMMARY"
    exit 1
fi

# ---- 3. the CUDA suites ----
(cd "$BUILD" && timeout 300 ctest -L cuda --output-on-failure -V) \
    >"$OUT/cuda-tests.log" 2>&1
TESTS=$?
(cd "$BUILD" && timeout 60 ctest -R '^test_backend_open$' --output-on-failure) >>"$OUT/cuda-tests.log" 2>&1 ||
    TESTS=1
grep -E "tests passed|tests failed|Passed|Failed|Skipped|\*\*\*" "$OUT/cuda-tests.log" | tail -12 >>"$SUMMARY"
grep -E "step +[0-9]+: cpu " "$OUT/cuda-tests.log" >"$OUT/cnn-loss-curve.txt" 2>/dev/null
note "cuda suites: exit $TESTS ($(elapsed) s); the CNN's loss curves side by side in cnn-loss-curve.txt"

# ---- 4. the benchmark ----
MODELS=$BUILD/bench_models
if [ ! -e "$MODELS/bench.txt" ]; then
    mkdir -p "$MODELS"
    (cd "$SRC" && timeout 180 python3 bench/make_bench_models.py --out "$MODELS") >"$OUT/bench-models.log" 2>&1 ||
        note "bench models: make_bench_models.py failed (see bench-models.log)"
fi
if [ -e "$MODELS/bench.txt" ]; then
    for be in cuda cpu; do
        LEFT=$((460 - $(elapsed)))
        if [ "$LEFT" -lt 30 ]; then
            note "bench $be: skipped, the 8-minute budget is spent"
            continue
        fi
        LANTERN_BACKEND=$be OMP_NUM_THREADS=$JOBS OMP_WAIT_POLICY=passive timeout "$LEFT" \
            "$BUILD/bench/bench_train" --warmup 3 --iters 10 "$MODELS" >"$OUT/bench-$be.txt" 2>&1 ||
            note "bench $be: exit $? (see bench-$be.txt)"
        note "bench $be: ($(elapsed) s)"
        cat "$OUT/bench-$be.txt" >>"$SUMMARY"
    done
fi
note "gpu-check: done in $(elapsed) s"
exit $TESTS
