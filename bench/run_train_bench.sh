#!/usr/bin/env bash
# The training-step benchmark in one command (a benchmark, not a test):
# builds bench_train (RelWithDebInfo, warnings as errors) in $BUILD (default
# build-bench), writes the benchmark models and data into build/bench_models
# when they are missing or older than their generator (Debian's python3:
# torch 1.13, torchvision, onnx), then times every model in lantern and in
# PyTorch in the same run and prints the table (bench/torch_bench.py).
#
#   bash bench/run_train_bench.sh [--torch2 PY] [--warmup W] [--iters N] [NAME...]
#
# Threads: OMP_NUM_THREADS (default 2) on both sides, OMP_WAIT_POLICY
# (default passive). A second torch: --torch2 PY, or /tmp/venv-bench/bin/python
# when it exists (python3 -m venv /tmp/venv-bench && /tmp/venv-bench/bin/pip
# install torch torchvision onnx); the ratio is against the faster torch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
MODELS=build/bench_models
# a CPU benchmark: without the CUDA backend, whose libraries (cuBLAS, cuDNN)
# would add some 150 MB to lantern's max RSS without running anything
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_WERROR=ON -DLANTERN_CUDA=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target bench_train >/dev/null
if [ ! -f "$MODELS/bench.txt" ] || [ bench/make_bench_models.py -nt "$MODELS/bench.txt" ] ||
   [ models/treelstm.onnx -nt "$MODELS/bench.txt" ] || [ models/make_trees.py -nt "$MODELS/bench.txt" ]; then
    /usr/bin/python3 bench/make_bench_models.py --out "$MODELS" 2>&1 | grep -v -i warning || true
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
extra=()
case " $* " in
*" --torch2 "*) ;;
*) if [ -x /tmp/venv-bench/bin/python ]; then extra=(--torch2 /tmp/venv-bench/bin/python); fi ;;
esac
exec /usr/bin/python3 bench/torch_bench.py --lantern "$BUILD/bench/bench_train" --models "$MODELS" "${extra[@]}" "$@"
