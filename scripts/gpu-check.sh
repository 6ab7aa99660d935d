#!/bin/sh
# scripts/gpu-check.sh OUTDIR: everything about the CUDA backend that needs a
# GPU, in one run (meant to finish in under 8 minutes on an H100/H200):
#   1. the machine: nvidia-smi, nvcc and cuDNN found (OUTDIR/env.txt)
#   2. a CUDA build for this GPU's arch only, in build-gpu (OUTDIR/build.log)
#   3. the CUDA suites: every kernel against the CPU (test_cuda_kernels), the
#      optimizer kernels against the host's (test_cuda_optim), the CNN's loss
#      curve on cuda against the CPU's (test_cuda_train, also in
#      OUTDIR/cnn-loss-curve.txt), gradients through If, Loop and Scan against
#      finite differences (test_cuda_control), and test_backend_open and test_cli_device
#      (OUTDIR/cuda-tests.log); where nvidia-smi lists a GPU they run with
#      LANTERN_CUDA_REQUIRED=1, so a suite whose backend cannot open (driver,
#      CUDA runtime or cuDNN trouble) fails instead of being skipped
#   3b. the CPU suites tests/cuda/on_cuda.txt names (the model zoo against
#      PyTorch's values, trainer steps, control flow), again with
#      LANTERN_BACKEND=cuda (OUTDIR/on-cuda.log); a failure counts as step 3's
#   3c. the model zoo's exports trained four Adam steps on the host and on
#      cuda from the same data, loss curves compared, allowing for each net's
#      own sensitivity to rounding (tests/cuda/zoo_curves.py,
#      OUTDIR/zoo-curves.txt); a failure counts as step 3's
#   4. the GPU benchmark: the CNN, SqueezeNet 1.1 and ResNet-50 on 3x32x32
#      (batch 64), the LSTM, the Loop-RNN and the TreeLSTM, one training step
#      on lantern's cuda backend and in this machine's PyTorch on the same GPU
#      (bench/torch_gpu_bench.py: CUDA events, medians after warm-up), with
#      the ratios (OUTDIR/bench-gpu.txt); the models come from
#      bench/make_bench_models.py run with this machine's python3
# and a summary in OUTDIR/summary.txt. Each step has a time limit and the
# script goes on after a failure; its exit status is that of steps 3 to 3c.
# BUDGET=s (default 470) caps the seconds before the benchmark stops. BUILD=dir changes the build folder; CUDNN_ROOT=dir points at a cuDNN 9
# outside the toolkit; else, where the toolkit has no cuDNN, the nvidia/cudnn
# package of python3's environment (PyTorch's) is used, for the build (CMake
# hint) and at run time (LD_LIBRARY_PATH). PYTHON=... picks that python.
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
# A GPU that nvidia-smi lists must run the suites: without this a broken
# driver or cuDNN would skip every one (exit 77) and the check would pass.
# An explicit LANTERN_CUDA_REQUIRED is kept.
if [ -n "${LANTERN_CUDA_REQUIRED:-}" ]; then
    REQUIRED="LANTERN_CUDA_REQUIRED=$LANTERN_CUDA_REQUIRED (as given)"
elif nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    export LANTERN_CUDA_REQUIRED=1
    REQUIRED="LANTERN_CUDA_REQUIRED=1 (nvidia-smi lists a GPU): a suite that cannot open the cuda backend fails"
else
    REQUIRED="LANTERN_CUDA_REQUIRED unset (nvidia-smi lists no GPU): the suites skip without a device"
fi
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
ARCH=${CAP:-90}
PY=${PYTHON:-python3}
CUDNN_ARG=""
if [ -z "${CUDNN_ROOT:-}" ] &&
    ! { [ -e /usr/local/cuda/include/cudnn.h ] && ls /usr/local/cuda/lib64/libcudnn.so* >/dev/null 2>&1; }; then
    # a namespace package: its folder is in __path__ (__file__ is None)
    CUDNN_ROOT=$("$PY" -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null)
fi
if [ -n "${CUDNN_ROOT:-}" ]; then
    CUDNN_ARG="-DLANTERN_CUDNN_ROOT=$CUDNN_ROOT"
    export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "cuDNN: $CUDNN_ROOT ($(ls "$CUDNN_ROOT"/lib 2>/dev/null | tr '\n' ' '))" >>"$OUT/env.txt"
fi
note "gpu-check: arch sm_$ARCH, cuDNN ${CUDNN_ARG:-from the CUDA toolkit}, build $BUILD, $JOBS jobs"
note "gpu-check: $REQUIRED"

# ---- 2. the build ----
# SKIP_BUILD=1: $BUILD already holds these targets, built elsewhere for this
# GPU's arch (a machine without the Debian packages the build needs)
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$BUILD/lantern" ]; then
    note "build: prebuilt in $BUILD"
elif timeout 300 cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" $CUDNN_ARG >"$OUT/build.log" 2>&1 &&
    timeout 300 cmake --build "$BUILD" -j"$JOBS" --target lantern \
        $(cd "$SRC/tests/cuda" && ls test_*.c | sed 's/\.c$//') test_backend_open test_cli_device bench_train \
        $(grep -v '^#' "$SRC/tests/cuda/on_cuda.txt") \
        >>"$OUT/build.log" 2>&1; then
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
(cd "$BUILD" && timeout 120 ctest -R '^(test_backend_open|test_cli_device)$' --output-on-failure) \
    >>"$OUT/cuda-tests.log" 2>&1 || TESTS=1
grep -E "tests passed|tests failed|Passed|Failed|Skipped|\*\*\*" "$OUT/cuda-tests.log" | tail -12 >>"$SUMMARY"
grep -E "step +[0-9]+: cpu " "$OUT/cuda-tests.log" >"$OUT/cnn-loss-curve.txt" 2>/dev/null
SKIPPED=$(grep -c '\*\*\*Skipped' "$OUT/cuda-tests.log")
note "cuda suites: exit $TESTS ($(elapsed) s), $SKIPPED skipped, $REQUIRED; the CNN's loss curves side by side in cnn-loss-curve.txt"

# ---- 3b. CPU suites again on cuda (tests/cuda/on_cuda.txt) ----
: >"$OUT/on-cuda.log"
FAILED_ON=""
for t in $(grep -v '^#' "$SRC/tests/cuda/on_cuda.txt"); do
    echo "==== $t (LANTERN_BACKEND=cuda)" >>"$OUT/on-cuda.log"
    if ! (cd "$BUILD/tests" && LANTERN_BACKEND=cuda LANTERN_TF32=0 timeout 120 "./$t") >>"$OUT/on-cuda.log" 2>&1; then
        FAILED_ON="$FAILED_ON $t"
        TESTS=1
    fi
done
if [ -n "$FAILED_ON" ]; then
    note "cpu suites on cuda: FAILED:$FAILED_ON ($(elapsed) s; on-cuda.log)"
else
    note "cpu suites on cuda: all $(grep -vc '^#' "$SRC/tests/cuda/on_cuda.txt") pass ($(elapsed) s; on-cuda.log)"
fi

# ---- 3c. the model zoo trained on the host and on cuda, curves compared ----
if timeout 300 "$PY" "$SRC/tests/cuda/zoo_curves.py" --lantern "$BUILD/lantern" >"$OUT/zoo-curves.txt" 2>&1; then
    note "zoo curves: $(tail -1 "$OUT/zoo-curves.txt") ($(elapsed) s; zoo-curves.txt)"
else
    note "zoo curves: FAILED: $(grep -c FAILED "$OUT/zoo-curves.txt") case(s); $(tail -1 "$OUT/zoo-curves.txt") ($(elapsed) s; zoo-curves.txt)"
    TESTS=1
fi

# ---- 4. the GPU benchmark: lantern's cuda backend against PyTorch ----
MODELS=$BUILD/bench_models
GPU_MODELS="cnn squeezenet resnet50 lstm rnn_loop treelstm"
mkdir -p "$MODELS"
(cd "$SRC" && timeout 200 "$PY" bench/make_bench_models.py --out "$MODELS" $GPU_MODELS) >"$OUT/bench-models.log" 2>&1 ||
    note "bench models: make_bench_models.py failed (see bench-models.log)"
if [ -e "$MODELS/bench.txt" ]; then
    LEFT=$((${BUDGET:-470} - $(elapsed)))
    if [ "$LEFT" -lt 40 ]; then
        note "bench: skipped, the 8-minute budget is spent"
    else
        # the rows so far are printed when the budget runs out
        OMP_NUM_THREADS=$JOBS OMP_WAIT_POLICY=passive timeout "$LEFT" "$PY" "$SRC/bench/torch_gpu_bench.py" \
            --lantern "$BUILD/bench/bench_train" --models "$MODELS" --warmup 5 --iters 20 \
            --budget $((LEFT - 40)) $GPU_MODELS >"$OUT/bench-gpu.txt" 2>&1 ||
            note "bench: exit $? (see bench-gpu.txt)"
        note "bench ($(elapsed) s):"
        cat "$OUT/bench-gpu.txt" >>"$SUMMARY"
        # where each model's step goes on the GPU: kernel time per op kind,
        # and the calls left to the host (LANTERN_PROFILE), while time is left
        for m in $GPU_MODELS; do
            [ $((${BUDGET:-470} - $(elapsed))) -lt 25 ] && break
            LANTERN_PROFILE=1 LANTERN_BACKEND=cuda LANTERN_TF32=0 \
                OMP_NUM_THREADS=$JOBS timeout 20 "$BUILD/bench/bench_train" --warmup 2 --iters 3 "$MODELS" "$m" \
                >"$OUT/profile-$m.txt" 2>&1
        done
        note "profiles: profile-MODEL.txt ($(elapsed) s)"
    fi
fi
note "gpu-check: done in $(elapsed) s"
exit $TESTS
