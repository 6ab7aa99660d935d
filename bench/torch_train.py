#!/usr/bin/python3
"""PyTorch counterpart of bench_train (a benchmark, not a test): median wall
time of one whole training step (forward, cross-entropy, backward, SGD with
momentum 0.9) for the networks of models/make_models.py on the same
Fashion-MNIST batches: MLP (batch 128), CNN (64), RowRNN with torch.nn.RNN
standing in for the Loop RNN (128), RowRNN with torch.nn.LSTM (128).

  /usr/bin/python3 bench/torch_train.py [--lantern BENCH_TRAIN] [--warmup W] [--iters N] [NAME...]

Threads: torch.set_num_threads(OMP_NUM_THREADS). With --lantern, runs that
bench_train binary first (same environment, same warm-up and iterations) and
prints lantern ms, PyTorch ms and their ratio per model."""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "models")
sys.path.insert(0, MODELS_DIR)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import make_models as mm  # noqa: E402  (sets its own seeds and 2 threads on import)

NBATCH = 8  # distinct batches cycled through, as bench_train does

CASES = [
    ("mlp", 128, (784,), lambda: mm.MLP()),
    ("cnn", 64, (1, 28, 28), lambda: mm.CNN()),
    ("rnn_loop", 128, (28, 28), lambda: mm.RowRNN(torch.nn.RNN)),
    ("lstm", 128, (28, 28), lambda: mm.RowRNN(torch.nn.LSTM)),
]


def batches(x, y, batch, shape):
    """The same consecutive training samples bench_train loads."""
    n = len(x)
    out = []
    for b in range(NBATCH):
        start = (b * batch) % (n - batch)
        xb = torch.from_numpy(np.ascontiguousarray(x[start:start + batch])).reshape((batch,) + shape)
        out.append((xb, torch.from_numpy(y[start:start + batch].copy())))
    return out


def bench(name, batch, shape, make, x, y, warmup, iters):
    torch.manual_seed(0)
    model = make()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = batches(x, y, batch, shape)
    times = []
    for it in range(warmup + iters):
        xb, yb = data[it % NBATCH]
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if it >= warmup:
            times.append((t1 - t0) * 1e3)
    return statistics.median(times), min(times)


def run_lantern(binary, warmup, iters, names):
    cmd = [binary, MODELS_DIR, str(warmup), str(iters)] + names
    res = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    if res.returncode != 0:
        sys.exit("bench_train failed: " + " ".join(cmd))
    ms = {}
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "train":
            ms[f[1]] = (float(f[5]), float(f[7]))
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lantern", help="path of the bench_train binary to run first")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if threads > 0:
        torch.set_num_threads(threads)
    names = a.names or [c[0] for c in CASES]
    lt = run_lantern(a.lantern, a.warmup, a.iters, names) if a.lantern else {}
    xtr, ytr, _, _ = mm.fashion()
    print("threads: torch %d, OMP_NUM_THREADS=%s OMP_WAIT_POLICY=%s; warm-up %d, median of %d steps"
          % (torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"), os.environ.get("OMP_WAIT_POLICY"),
             a.warmup, a.iters))
    print("%-9s %5s %12s %12s %8s   %10s %10s %9s" % ("model", "batch", "lantern ms", "pytorch ms", "ratio",
                                                   "lt min", "pt min", "min ratio"))
    for name, batch, shape, make in CASES:
        if name not in names:
            continue
        x = xtr.reshape((-1,) + shape) if name == "mlp" else xtr
        med, low = bench(name, batch, shape, make, x, ytr, a.warmup, a.iters)
        if name in lt:
            print("%-9s %5d %12.2f %12.2f %8.2f   %10.2f %10.2f %9.2f" % (name, batch, lt[name][0], med, lt[name][0] / med,
                                                                    lt[name][1], low, lt[name][1] / low))
        else:
            print("%-9s %5d %12s %12.2f %8s   %10s %10.2f %9s" % (name, batch, "-", med, "-", "-", low, "-"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
