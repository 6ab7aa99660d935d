#!/usr/bin/env python3
"""The model zoo (models/zoo) trained by `lantern train` on two backends from
the same data, loss curves compared: scripts/gpu-check.sh runs it for the
host against cuda. Each case's inputs (in_K.npy, case.txt) become a dataset
of four batches (the saved batch and three copies with noise on the float
inputs), its first output's targets random class labels (a [batch, classes]
output, softmax cross-entropy) or random values (mse); four Adam steps at
lr 1e-3, no shuffling, TF32 off. A case whose inputs take no batch along
axis 0 (the GRU's [T, N, D]) is left out. Needs numpy and onnx.

Some of these nets are chaotic at batch 2 under Adam: on the host alone,
weights moved by 1e-7 of themselves put ShuffleNet's curve 3e-2 away from
itself. So each case is also trained on --a from such a perturbed copy, and
--b passes where its gap is within --tol or within ten times that one: a
difference the model's own rounding sensitivity does not explain fails.

  python3 tests/cuda/zoo_curves.py --lantern BUILD/lantern [--a cpu] [--b cuda]
      [--tol 1e-3] [--keep DIR] [CASE...]

Prints one row per case (steps, worst relative difference of the losses,
and the perturbed copy's) and exits 1 when a case fails to train on either
side or differs by more than that allows."""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "zoo")


def read_case(d):
    ins, outs = [], []
    with open(os.path.join(d, "case.txt")) as f:
        for line in f:
            p = line.split()
            if p and p[0] == "input":
                ins.append((p[1], p[2]))
            elif p and p[0] == "output":
                outs.append((p[1], p[2]))
    return ins, outs


def make_data(d, ins, outs, path, rng):
    """the dataset file for case folder d; (loss, batch, output) or None"""
    arrs, batch = {}, None
    for name, f in ins:
        a = np.load(os.path.join(d, f))
        if a.ndim == 0 or (batch is not None and a.shape[0] != batch):
            return None
        batch = a.shape[0]
        copies = [a] + [(a + 0.1 * rng.standard_normal(a.shape)).astype(a.dtype) if a.dtype.kind == "f" else a
                        for _ in range(3)]
        arrs[name] = np.concatenate(copies, 0)
    if batch is None or not outs:
        return None
    o = np.load(os.path.join(d, outs[0][1]))
    if o.dtype.kind != "f" or o.ndim < 1 or o.shape[0] != batch:
        return None
    if o.ndim == 2:
        loss = "softmax-cross-entropy"
        arrs["y"] = rng.integers(0, o.shape[1], 4 * batch).astype(np.int64)
    else:
        loss = "mse"
        arrs["y"] = rng.standard_normal((4 * batch,) + o.shape[1:]).astype(np.float32)
    np.savez(path, **arrs)
    return loss, batch, outs[0][0]


def perturbed(model, path, rng):
    """model's file with every float initializer of 2+ values times 1 + 1e-7 noise"""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(model)
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and a.size > 1:
            t.CopyFrom(numpy_helper.from_array((a * (1 + 1e-7 * rng.standard_normal(a.shape))).astype(np.float32),
                                               t.name))
    onnx.save(m, path)


def gap(a, b):
    return max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))


def curve(lantern, model, data, loss, batch, out, device, work, tag):
    log = os.path.join(work, tag + ".csv")
    cmd = [lantern, "train", model, "--data", "npz=" + data, "--loss", loss, "--output", out, "--batch", str(batch),
           "--epochs", "1", "--shuffle", "off", "--optimizer", "adam", "--lr", "1e-3", "--device", device,
           "--log", log, "-o", os.path.join(work, tag + ".onnx")]
    p = subprocess.run(cmd, env=dict(os.environ, LANTERN_TF32="0"), capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    with open(log) as f:
        return [float(r["train_loss"]) for r in csv.DictReader(f) if r["train_loss"]], None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lantern", required=True)
    ap.add_argument("--a", default="cpu")
    ap.add_argument("--b", default="cuda")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--keep", help="keep the datasets, logs and trained models here")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    rng = np.random.default_rng(5)
    work = a.keep or tempfile.mkdtemp(prefix="lt_zoo_curves_")
    os.makedirs(work, exist_ok=True)
    cases = a.cases or sorted(c for c in os.listdir(ZOO) if os.path.isfile(os.path.join(ZOO, c, "case.txt")))
    bad = ran = 0
    print("%-28s %5s %12s %12s  (%s against %s; perturbed: %s from weights x (1 + 1e-7 noise))" %
          ("case", "steps", "worst rel", "perturbed", a.b, a.a, a.a))
    for c in cases:
        d = os.path.join(ZOO, c)
        ins, outs = read_case(d)
        data = os.path.join(work, c + ".npz")
        plan = make_data(d, ins, outs, data, rng)
        if not plan:
            print("%-28s left out (its inputs take no batch along axis 0)" % c)
            continue
        loss, batch, out = plan
        model = os.path.join(d, "model.onnx")
        ca, ea = curve(a.lantern, model, data, loss, batch, out, a.a, work, c + "." + a.a)
        cb, eb = curve(a.lantern, model, data, loss, batch, out, a.b, work, c + "." + a.b)
        pmodel = os.path.join(work, c + ".perturbed.onnx")
        perturbed(model, pmodel, rng)
        cp, ep = curve(a.lantern, pmodel, data, loss, batch, out, a.a, work, c + ".perturbed")
        ran += 1
        if ea or eb or ep or not ca or len(ca) != len(cb) or len(ca) != len(cp):
            bad += 1
            print("%-28s FAILED: %s" % (c, ea or eb or ep or "curves of %d, %d and %d steps" %
                                        (len(ca or []), len(cb or []), len(cp or []))))
            continue
        worst, own = gap(ca, cb), gap(ca, cp)
        allowed = max(a.tol, 10 * own)
        bad += worst > allowed
        print("%-28s %5d %12.2e %12.2e%s" % (c, len(ca), worst, own,
                                             "  FAILED (over %.2g)" % allowed if worst > allowed else ""))
    print("%d of %d cases within %g or ten times their own rounding sensitivity" % (ran - bad, ran, a.tol))
    return 1 if bad or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
