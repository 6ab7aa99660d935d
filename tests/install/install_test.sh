#!/bin/sh
# The installed package as a user meets it: `cmake --install` of the built
# tree into a temporary prefix (nothing is rebuilt), then examples/train_step.c
# compiled against that prefix only -- with pkg-config (shared, and static),
# and with find_package(lantern) from a CMake project of its own -- and run.
# Each build's exported model must be byte-identical to the one the installed
# `lantern train` writes from the same data, order and options. Also: the
# README's copy of the example is the file itself, every lt_ name in the
# README's C API section is in lantern.h, and a project that add_subdirectory's
# the source tree configures (LT_INSTALL_TEST_FULL=1 builds and runs it too).
#
#   install_test.sh BUILD_DIR SOURCE_DIR CC PKG_CONFIG CMAKE [EXTRA_CFLAGS]
set -eu
build=$1 src=$2 cc=$3 pkgconfig=$4 cmake=$5 extra=${6:-}
tmp=$(mktemp -d /tmp/lt_install_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
example=$src/examples/train_step.c
model=$src/models/mlp.onnx

die() {
    echo "install_test: $*" >&2
    exit 1
}

# ---- what the README says ----
awk '/^<!-- examples\/train_step.c -->$/ {f = 1; next} f == 1 && /^```c$/ {f = 2; next}
     f == 2 && /^```$/ {exit} f == 2 {print}' "$src/README.md" >"$tmp/readme_example.c"
cmp -s "$tmp/readme_example.c" "$example" ||
    die "README.md's example (after <!-- examples/train_step.c -->) differs from examples/train_step.c"
awk '/^## The C API/ {f = 1; next} /^## / {f = 0} f' "$src/README.md" | grep -o 'lt_[a-z0-9_]*' | sort -u >"$tmp/names"
[ -s "$tmp/names" ] || die "README.md has no '## The C API' section naming lt_ functions"
while read -r name; do
    grep -q "$name" "$src/include/lantern.h" || die "README.md's C API section names $name, which lantern.h lacks"
done <"$tmp/names"

# ---- install ----
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || {
    cat "$tmp/install.log" >&2
    die "cmake --install $build failed"
}
pc=$(find "$prefix" -name lantern.pc)
[ -n "$pc" ] || die "no lantern.pc under the prefix"
[ -x "$prefix/bin/lantern" ] || die "no bin/lantern under the prefix"
[ -f "$prefix/include/lantern.h" ] || die "no include/lantern.h under the prefix"
export PKG_CONFIG_PATH="${pc%/*}"
libdir=$("$pkgconfig" --variable=libdir lantern)
for f in liblantern.a liblantern.so liblantern.so.0 cmake/lantern/lanternConfig.cmake; do
    [ -e "$libdir/$f" ] || die "no $f in $libdir"
done
readelf -d "$libdir/liblantern.so" | grep -q 'SONAME.*\[liblantern\.so\.0\]' || die "liblantern.so's soname is not liblantern.so.0"

# ---- the example, three ways ----
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
"$cc" $extra -std=c11 -Wall -Wextra -Werror "$example" $("$pkgconfig" --cflags --libs lantern) \
    -Wl,-rpath,"$libdir" -o "$tmp/pc_shared" || die "the example does not build with pkg-config --cflags --libs lantern"
# shellcheck disable=SC2086
"$cc" $extra -std=c11 -Wall -Wextra -Werror "$example" $("$pkgconfig" --cflags lantern) -Wl,--as-needed \
    -Wl,-Bstatic -llantern -Wl,-Bdynamic $("$pkgconfig" --static --libs lantern) -o "$tmp/pc_static" ||
    die "the example does not build with pkg-config --static (liblantern.a)"
readelf -d "$tmp/pc_shared" | grep -q 'NEEDED.*liblantern\.so\.0' || die "the pkg-config build does not use liblantern.so.0"
if readelf -d "$tmp/pc_static" | grep -q 'NEEDED.*liblantern'; then
    die "the static build still needs liblantern.so"
fi
"$cmake" -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" -DLANTERN_EXAMPLE="$example" \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/consumer.log" 2>&1 &&
    "$cmake" --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 || {
    cat "$tmp/consumer.log" >&2
    die "the example does not build with find_package(lantern)"
}

mkdir "$tmp/data"
"$tmp/pc_shared" "$model" "$tmp/pc_shared.onnx" "$tmp/data" >"$tmp/run.log" || {
    cat "$tmp/run.log" >&2
    die "the example (pkg-config, shared) failed"
}
cat "$tmp/run.log"
for b in pc_static consumer/train_step consumer/train_step_static; do
    out=$tmp/$(echo "$b" | tr / _).onnx
    "$tmp/$b" "$model" "$out" >"$tmp/run.log" || {
        cat "$tmp/run.log" >&2
        die "the example ($b) failed"
    }
    cmp "$tmp/pc_shared.onnx" "$out" || die "the example ($b) exported another model than the pkg-config build"
done
if "$tmp/pc_shared" "$tmp/missing.onnx" "$tmp/x.onnx" >/dev/null 2>"$tmp/err.txt"; then
    die "the example accepted a model that does not exist"
fi
grep -q "missing.onnx" "$tmp/err.txt" || die "the example's error does not name the file: $(cat "$tmp/err.txt")"

# ---- the same training through lantern train ----
(cd "$tmp/data" && "$cmake" -E tar cf ../data.npz --format=zip x.npy y.npy)
"$prefix/bin/lantern" train "$model" --data npz="$tmp/data.npz" --shuffle off --seed 42 --optimizer momentum \
    --momentum 0.9 --lr 0.05 --batch 32 --epochs 2 -o "$tmp/cli.onnx" >"$tmp/train.log" || {
    cat "$tmp/train.log" >&2
    die "lantern train failed"
}
if cmp -s "$model" "$tmp/cli.onnx"; then
    die "training changed nothing in the model"
fi
cmp "$tmp/cli.onnx" "$tmp/pc_shared.onnx" || die "the step API's export differs from lantern train's"
echo "install_test: the example's export equals lantern train's ($(wc -c <"$tmp/cli.onnx") bytes)"

# ---- add_subdirectory ----
"$cmake" -S "$src/tests/install/subdir" -B "$tmp/subdir" -DLANTERN_SOURCE_DIR="$src" -DCMAKE_C_COMPILER="$cc" \
    >"$tmp/subdir.log" 2>&1 || {
    cat "$tmp/subdir.log" >&2
    die "a project that add_subdirectory's lantern does not configure"
}
if [ "${LT_INSTALL_TEST_FULL:-0}" = 1 ]; then
    "$cmake" --build "$tmp/subdir" -j"${LT_JOBS:-2}" --target train_step >"$tmp/subdir.log" 2>&1 || {
        tail -30 "$tmp/subdir.log" >&2
        die "a project that add_subdirectory's lantern does not build"
    }
    "$tmp/subdir/train_step" "$model" "$tmp/subdir.onnx" >/dev/null || die "the add_subdirectory build failed to run"
    cmp "$tmp/cli.onnx" "$tmp/subdir.onnx" || die "the add_subdirectory build exported another model"
    echo "install_test: add_subdirectory build ok"
fi
echo "install_test: ok"
