#!/bin/sh
# onnx 1.23's backend node suite, run by `lantern check` against a checked-in
# list of expected failures (the CTest conformance_onnx123).
#
#   onnx123.sh LANTERN EXPECT_LIST WORKDIR
#
# The first run makes WORKDIR/venv, installs the pinned onnx from PyPI into it
# and writes the suite with onnx's own generator into WORKDIR/data/node; later
# runs reuse it (WORKDIR/data/.stamp names the onnx it came from). Without a
# network, a venv or pip, the test is skipped: exit 77. The C build never
# needs Python.
set -u
ONNX_PIN=1.23.2
[ $# -eq 3 ] || { echo "usage: $0 LANTERN EXPECT_LIST WORKDIR" >&2; exit 2; }
LANTERN=$1 EXPECT=$2 WORK=$3
DATA=$WORK/data
mkdir -p "$WORK" || exit 77

if [ "$(cat "$DATA/.stamp" 2>/dev/null)" != "onnx $ONNX_PIN" ]; then
    skip() { echo "conformance_onnx123 skipped: $*" >&2; exit 77; }
    if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c 'import sys' 2>/dev/null; then
        rm -rf "$WORK/venv"
        python3 -m venv "$WORK/venv" >/dev/null 2>&1 || skip "cannot make a Python venv (python3 -m venv)"
    fi
    if ! "$WORK/venv/bin/python" -c "import onnx, sys; sys.exit(onnx.__version__ != '$ONNX_PIN')" 2>/dev/null; then
        "$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 20 --retries 1 \
            "onnx==$ONNX_PIN" >"$WORK/pip.log" 2>&1 || skip "pip could not install onnx==$ONNX_PIN (see $WORK/pip.log)"
    fi
    # onnx's generator (backend-test-tools generate-data, i.e. cmd_tools) writes
    # only the model cases in 1.23; its own writer is given the node cases.
    rm -rf "$DATA.tmp"
    "$WORK/venv/bin/python" - "$DATA.tmp" >"$WORK/generate.log" 2>&1 <<'EOF' || { echo "generating the suite failed (see $WORK/generate.log)" >&2; exit 1; }
import argparse, sys
import onnx.backend.test.cmd_tools as tools
import onnx.backend.test.case.node as node
tools.model_test.collect_testcases = lambda: node.collect_testcases(None)
tools.generate_data(argparse.Namespace(output=sys.argv[1]))
EOF
    echo "onnx $ONNX_PIN" >"$DATA.tmp/.stamp"
    rm -rf "$DATA" && mv "$DATA.tmp" "$DATA" || exit 1
fi
exec "$LANTERN" check --expect "$EXPECT" "$DATA/node"
