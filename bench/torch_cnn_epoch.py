#!/usr/bin/python3
"""Reference for the 1-epoch CNN accuracy (not a test): the shipped CNN's
architecture trained in PyTorch from PyTorch's default initialization with
the recipe lantern's figure uses (SGD, momentum 0.9, lr 0.05, batch 64, one
epoch of Fashion-MNIST), once per seed; prints the test accuracy of each.

  OMP_NUM_THREADS=2 /usr/bin/python3 bench/torch_cnn_epoch.py [SEED...]

Compare with
  build/lantern train models/cnn.onnx --data fashion-mnist --optimizer momentum \\
      --momentum 0.9 --lr 0.05 --batch 64 --epochs 1 --init random --seed S -o /tmp/c.onnx
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import make_models as mm  # noqa: E402


def main():
    seeds = [int(s) for s in sys.argv[1:]] or [1, 2, 3]
    xtr, ytr, xte, yte = mm.fashion()
    for seed in seeds:
        torch.manual_seed(seed)
        np.random.seed(seed)
        model = mm.CNN()
        mm.train(model, xtr, ytr, (1, 28, 28), batch=64)
        print("seed %d: test accuracy %.4f" % (seed, mm.accuracy(model, xte, yte, (1, 28, 28))), flush=True)


if __name__ == "__main__":
    main()
