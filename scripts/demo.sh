#!/usr/bin/env bash
# Sets up, builds, imports the shipped CNN and classifies Fashion-MNIST test images.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/lantern import models/cnn.onnx
./build/lantern predict models/cnn.onnx --data fashion-mnist --count 12
