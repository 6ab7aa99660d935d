#!/usr/bin/env bash
# Sets up and builds, then: import the shipped CNN, train it from scratch
# (--init random: fresh seeded weights, not the file's) for one epoch on
# Fashion-MNIST, export the trained weights into a copy of the ONNX file, and
# classify test images with the exported model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/configure.sh >/dev/null
cmake --build build -j"$(nproc)" --target lantern >/dev/null # only what the demo runs
./build/lantern import models/cnn.onnx
./build/lantern train models/cnn.onnx --data fashion-mnist --init random --optimizer momentum --momentum 0.9 \
    --lr 0.05 --batch 64 --epochs 1 --plot build/cnn_training.svg -o build/cnn_trained.onnx
./build/lantern predict build/cnn_trained.onnx --data fashion-mnist --count 12
