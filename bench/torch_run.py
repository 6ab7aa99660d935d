#!/usr/bin/python3
"""Inference time per batch in PyTorch for the shipped models, to set beside
bench_run's figures (same batch, same thread count). Usage:
  OMP_NUM_THREADS=2 /usr/bin/python3 bench/torch_run.py
It rebuilds the modules from models/make_models.py and loads the weights from
the .onnx files, so both sides run the same network."""
import os, sys, time
import numpy as np
import torch
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import make_models as mm

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


def weights(path):
    return [torch.from_numpy(numpy_helper.to_array(t).copy()) for t in onnx.load(path).graph.initializer]


def timeit(fn, reps):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], ts[0]


def main():
    cases = [("mlp", mm.MLP(), (784,), 128, 50), ("cnn", mm.CNN(), (1, 28, 28), 64, 20)]
    for name, model, shape, batch, reps in cases:
        params = list(model.parameters())
        ws = weights(os.path.join(HERE, name + ".onnx"))
        # the exporter keeps parameters in module order; shapes are checked
        for p, w in zip(params, ws):
            assert tuple(p.shape) == tuple(w.shape), (name, p.shape, w.shape)
            p.data.copy_(w)
        model.eval()
        x = torch.rand((batch,) + shape)
        with torch.no_grad():
            med, mn = timeit(lambda: model(x), reps)
        print("torch %s batch %d: median %.3f ms, min %.3f ms over %d runs" % (name, batch, med * 1e3, mn * 1e3, reps))


if __name__ == "__main__":
    main()
