#!/usr/bin/python3
"""Former entry point of the training-step comparison, kept for its
command line: bench/torch_bench.py on the four shipped models (mlp, cnn,
rnn_loop, lstm), writing build/bench_models first when it is missing.

  /usr/bin/python3 bench/torch_train.py [--lantern BENCH_TRAIN] [--warmup W] [--iters N] [NAME...]

bench/run_train_bench.sh runs every model (SqueezeNet, ResNet-18, the
transformer and the TreeLSTM too)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "build", "bench_models")

if not os.path.exists(os.path.join(MODELS, "bench.txt")):
    subprocess.run([sys.executable, os.path.join(HERE, "make_bench_models.py"), "--out", MODELS], check=True)
args = sys.argv[1:]
if not [x for x in args if not x.startswith("-") and x in ("mlp", "cnn", "rnn_loop", "lstm")]:
    args += ["mlp", "cnn", "rnn_loop", "lstm"]
os.execv(sys.executable, [sys.executable, os.path.join(HERE, "torch_bench.py"), "--models", MODELS] + args)
