#!/usr/bin/env bash
# The one configure line that demo.sh and test.sh share: with the same flags
# in the same build folder, the objects one builds are the other's too, so
# running the tests after the demo compiles only what the demo did not need.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLANTERN_WERROR=ON "$@"
