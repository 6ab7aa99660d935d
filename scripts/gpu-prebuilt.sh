#!/bin/bash
# scripts/gpu-prebuilt.sh: run scripts/gpu-check.sh on a GPU machine that
# cannot build lantern (no protobuf-c, OpenBLAS, cmocka or image libraries
# there), from a CUDA build made on a machine that can.
#
#   bash scripts/gpu-prebuilt.sh pack [PACK]   (here) builds build-gpu with
#       CUDA for ARCH (default 90: H100/H200) and writes PACK (default
#       .gpu/pack.tar.xz): the stripped binaries gpu-check runs, the CTest
#       files, and every shared library they need that is not the C or C++
#       runtime or CUDA's (those come from the GPU machine)
#   bash scripts/gpu-prebuilt.sh run OUTDIR [PACK]   (there, in a copy of
#       the same checkout) unpacks PACK, puts the checkout where the build's
#       paths point, finds CUDA, cuBLAS and cuDNN in python3's nvidia
#       packages or /usr/local/cuda, and runs gpu-check.sh OUTDIR on the build
#   bash scripts/gpu-prebuilt.sh exec PACK COMMAND...   (there) the same
#       set-up, then COMMAND in the checkout (build-gpu/lantern, its tests)
#   A Fashion-MNIST for the suites that train on it travels as
#       .gpu/fashion-mnist (the first 10,000 training images and the test
#       set, made by 'pack' where the Debian package is installed; carry it)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
# every suite in tests/cuda and those tests/cuda/on_cuda.txt names, besides
# the programs gpu-check.sh runs
TARGETS="lantern $(cd tests/cuda && ls test_*.c | sed 's/\.c$//' | tr '\n' ' ')test_backend_open test_cli_device bench_train
 $(grep -v '^#' tests/cuda/on_cuda.txt | tr '\n' ' ')"
case "${1:-}" in
pack)
    PACK=${2:-.gpu/pack.tar.xz}
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" >/dev/null
    # shellcheck disable=SC2086
    cmake --build build-gpu -j"$(nproc)" --target $TARGETS >/dev/null
    STAGE=$(mktemp -d)
    mkdir -p "$STAGE/build/tests" "$STAGE/build/bench" "$STAGE/lib" "$(dirname "$PACK")"
    cp build-gpu/lantern build-gpu/CTestTestfile.cmake "$STAGE/build/"
    cp build-gpu/tests/CTestTestfile.cmake "$STAGE/build/tests/"
    for t in $TARGETS; do
        [ -x "build-gpu/tests/$t" ] && cp "build-gpu/tests/$t" "$STAGE/build/tests/"
    done
    cp build-gpu/bench/bench_train "$STAGE/build/bench/"
    strip "$STAGE/build/lantern" "$STAGE"/build/tests/test_* "$STAGE/build/bench/bench_train"
    # libraries beside the C/C++ runtime and CUDA's
    for b in build-gpu/lantern build-gpu/tests/test_cuda_kernels; do ldd "$b"; done |
        awk '$3 ~ /^\// {print $3}' | sort -u |
        grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)[.-]|/lib(cuda|cudart|cudnn|cublas|nv)' |
        while read -r l; do cp -L "$l" "$STAGE/lib/"; done
    # one stream with a dictionary wider than the whole pack: the binaries
    # share most of their code (lantern linked into each)
    tar -C "$STAGE" -cf - . | xz -T1 --lzma2=preset=2,dict=256MiB >"$PACK"
    rm -rf "$STAGE"
    FM=/usr/share/datasets/fashion-mnist
    if [ -d "$FM" ] && [ ! -e .gpu/fashion-mnist/train-labels-idx1-ubyte.gz ]; then
        mkdir -p .gpu/fashion-mnist
        cp "$FM"/t10k-* .gpu/fashion-mnist/
        python3 - "$FM" .gpu/fashion-mnist <<'PY'
import gzip, struct, sys
src, dst = sys.argv[1:]
for kind, head in (("images-idx3", 16), ("labels-idx1", 8)):
    with gzip.open(f"{src}/train-{kind}-ubyte.gz") as f:
        data = f.read()
    n = 10000
    per = (len(data) - head) // struct.unpack(">I", data[4:8])[0]
    out = data[:4] + struct.pack(">I", n) + data[8:head] + data[head:head + n * per]
    with gzip.open(f"{dst}/train-{kind}-ubyte.gz", "wb") as f:
        f.write(out)
PY
    fi
    echo "$PACK: $(du -h "$PACK" | cut -f1); on the GPU machine: bash scripts/gpu-prebuilt.sh run OUTDIR $PACK"
    echo "(carry $PACK and .gpu/fashion-mnist)"
    ;;
run | exec)
    if [ "$1" = run ]; then
        OUTDIR=${2:?usage: scripts/gpu-prebuilt.sh run OUTDIR [PACK]}
        PACK=${3:-.gpu/pack.tar.xz}
    else
        PACK=${2:?usage: scripts/gpu-prebuilt.sh exec PACK COMMAND...}
        shift 2
        [ $# -gt 0 ] || { echo "usage: scripts/gpu-prebuilt.sh exec PACK COMMAND..." >&2; exit 2; }
    fi
    DEST=/tmp/lantern-prebuilt
    rm -rf "$DEST" && mkdir -p "$DEST"
    if ! python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$DEST" \
        2>/dev/null || [ ! -x "$DEST/build/lantern" ] || [ ! -f "$DEST/build/CTestTestfile.cmake" ]; then
        echo "gpu-prebuilt: $PACK: not a pack made by 'gpu-prebuilt.sh pack' (missing, truncated or corrupt)" >&2
        exit 2
    fi
    # the build's tests name the source and build folders it was made in
    WANT=$(sed -n 's/^# Source directory: \(.*\)$/\1/p' "$DEST/build/CTestTestfile.cmake")
    if [ -n "$WANT" ] && [ "$WANT" != "$SRC" ]; then
        mkdir -p "$(dirname "$WANT")"
        rm -rf "$WANT"
        ln -sfn "$SRC" "$WANT"
    fi
    ROOT=${WANT:-$SRC}
    rm -rf "$SRC/build-gpu" && ln -sfn "$DEST/build" "$SRC/build-gpu"
    NV=$(python3 -c 'import nvidia, os; print(":".join(os.path.join(p, d, "lib") for p in nvidia.__path__
        for d in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, d, "lib"))))' 2>/dev/null || true)
    export LD_LIBRARY_PATH="$DEST/lib${NV:+:$NV}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if ldd "$DEST/build/lantern" | grep "not found"; then
        echo "gpu-prebuilt: libraries missing (above)" >&2
        exit 1
    fi
    # a GPU machine has no Debian datasets: a Fashion-MNIST packed beside
    # the build (.gpu/fashion-mnist, see 'pack') goes where lantern looks
    FM=/usr/share/datasets/fashion-mnist
    if [ ! -e "$FM" ] && [ -d "$SRC/.gpu/fashion-mnist" ]; then
        mkdir -p "$(dirname "$FM")" && ln -s "$SRC/.gpu/fashion-mnist" "$FM"
    fi
    cd "$ROOT"
    if [ -n "${OUTDIR:-}" ]; then
        SKIP_BUILD=1 BUILD="$ROOT/build-gpu" sh scripts/gpu-check.sh "$OUTDIR"
    else
        "$@"
    fi
    ;;
*)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
