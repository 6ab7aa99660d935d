#!/usr/bin/env python3
"""GPU training-step benchmark, lantern's cuda backend against PyTorch on the
same GPU in the same run (a benchmark, not a test): for each model of
bench/make_bench_models.py that the GPU comparison covers (cnn, squeezenet,
resnet50, lstm, rnn_loop, treelstm; those present in MODELS/bench.txt), runs
bench_train with LANTERN_BACKEND=cuda (one whole lt_trainer_step per batch,
timed on the host around a step that ends by reading the loss, so every
kernel of the step has finished), then the same step in PyTorch on cuda --
same model and weights, same batches (seeded non-zero data, see
make_bench_models.py), same optimizer and learning rate -- timed with CUDA
events around each step (the stop event waited for before the next step;
the batch's host-to-device copy inside the step on both sides),
and prints one row per model:

  lantern ms   median of lantern's timed steps after the warm-up
  torch ms     median of torch's (CUDA events), after the same warm-up
  ratio        lantern / torch (below 1: lantern is faster), and the
               issue's target for that model
  loss0        the first step's loss on both sides

Both sides run with TF32 off (full float32) unless --tf32; torch with
cudnn.benchmark on (its fastest convolutions), lantern with its default
--cudnn-benchmark on (cudnnFind*AlgorithmEx per shape).

  python3 bench/torch_gpu_bench.py --lantern BUILD/bench/bench_train --models DIR \\
      [--warmup 10] [--iters 30] [--tf32] [--budget SECONDS] [NAME...]

--budget stops starting new models once that many seconds have gone (the
rows so far are printed)."""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))

GPU_MODELS = ("cnn", "squeezenet", "resnet50", "lstm", "rnn_loop", "treelstm")
# the targets: lantern / torch at most 1.0 (same speed allowed), or below 1 (faster)
TARGET = {"squeezenet": "<= 1.0", "resnet50": "<= 1.0", "lstm": "< 1.0", "rnn_loop": "< 1.0",
          "treelstm": "< 1.0", "cnn": "-"}


def manifest(models_dir):
    out = []
    with open(os.path.join(models_dir, "bench.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, batch, optim, lr = line.split()[:4]
                out.append((name, int(batch), optim, float(lr)))
    return out


def lantern_side(a, name):
    env = dict(os.environ, LANTERN_BACKEND="cuda", LANTERN_TF32="1" if a.tf32 else "0")
    cmd = [a.lantern, "--warmup", str(a.warmup), "--iters", str(a.iters), a.models, name]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "train" and f[1] == name:
            kv = dict(zip(f[2::2], f[3::2]))
            where = "; per step %s nodes on the GPU, %s on the host, %s uploads, %s downloads" % tuple(
                kv.get(k, "?") for k in ("device_nodes", "host_nodes", "uploads", "downloads"))
            return float(kv["median_ms"]), float(kv["loss0"]), None, where
    return None, None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1], ""



def torch_side(a, entry):
    import numpy as np
    import torch
    import make_bench_models as mbm
    import torch_bench as tb
    name, batch, optim, lr = entry
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = mbm.build(name)
    pt = os.path.join(a.models, name + ".pt")
    if os.path.exists(pt):
        model.load_state_dict(torch.load(pt))
    elif name in ("cnn", "lstm", "rnn_loop"):
        tb.onnx_weights(name, model, os.path.join(a.models, name + ".onnx"))
    model = model.to(dev).train()
    data = dict(np.load(os.path.join(a.models, name + ".npz")))
    units = []
    if "y_splits" in data:
        s = data["y_splits"]
        for i in range(len(s) - 1):
            # the tree's shape stays on the host, where the per-node loop reads it
            units.append(((torch.from_numpy(data["words"][s[i]:s[i + 1]]),
                           torch.from_numpy(data["children"][s[i]:s[i + 1]])),
                          torch.from_numpy(data["y"][s[i]:s[i + 1]])))
    else:
        x, y = data["x"], data["y"]
        for b in range(len(x) // batch):
            units.append(((torch.from_numpy(x[b * batch:(b + 1) * batch].copy()),),
                          torch.from_numpy(y[b * batch:(b + 1) * batch].copy())))
    tree = "y_splits" in data
    params = model.parameters()
    if optim == "momentum":
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    elif optim == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    elif optim == "adam":
        opt = torch.optim.Adam(params, lr=lr)
    elif optim == "adagrad":
        opt = torch.optim.Adagrad(params, lr=lr)
    else:
        raise SystemExit("unknown optimizer " + optim)
    warmup = max(a.warmup, len(units)) if "y_splits" in data else a.warmup  # as bench_train
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, loss0 = [], None
    torch.cuda.synchronize()
    for it in range(warmup + a.iters):
        inputs, labels = units[it % len(units)]
        start.record()
        # the batch goes up inside the step, as lantern's does
        inputs = (inputs[0].to(dev), inputs[1]) if tree else tuple(t.to(dev) for t in inputs)
        loss = torch.nn.functional.cross_entropy(model(*inputs), labels.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        stop.record()
        stop.synchronize()
        if it == 0:
            loss0 = loss.item()
        if it >= warmup:
            times.append(start.elapsed_time(stop))
    return statistics.median(times), loss0, torch.__version__, torch.cuda.get_device_name(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lantern", default=os.path.join(ROOT, "build-gpu", "bench", "bench_train"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build-gpu", "bench_models"))
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--budget", type=float, default=0)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    t0 = time.time()
    entries = [e for e in manifest(a.models) if e[0] in (a.names or GPU_MODELS)]
    rows = []
    header = None
    for e in entries:
        if a.budget and time.time() - t0 > a.budget:
            print("(budget of %.0f s spent: %s and after not run)" % (a.budget, e[0]), flush=True)
            break
        lms, lloss, why, where = lantern_side(a, e[0])
        try:
            tms, tloss, tver, gpu = torch_side(a, e)
            header = header or "GPU %s, torch %s, TF32 %s, warm-up %d, %d timed steps (medians, ms per step%s)" % (
                gpu, tver, "on" if a.tf32 else "off", a.warmup, a.iters, "; per tree for treelstm")
        except Exception as ex:  # noqa: BLE001 (a row says what failed; the rest still run)
            tms, tloss = None, None
            why = (why + "; " if why else "") + "torch: %s" % ex
        rows.append((e[0], lms, tms, lloss, tloss, why))
        ratio = "%.2f" % (lms / tms) if lms and tms else "-"
        print("%-11s lantern %s ms, torch %s ms, ratio %s%s%s" % (
            e[0], "%.3f" % lms if lms else "-", "%.3f" % tms if tms else "-", ratio, where,
            " (%s)" % why if why else ""), flush=True)
    print()
    print(header or "no torch row ran")
    print("%-11s %11s %11s %7s %8s %10s %10s" % ("model", "lantern ms", "torch ms", "ratio", "target", "loss0 lt",
                                                 "loss0 torch"))
    for name, lms, tms, ll, tl, why in rows:
        print("%-11s %11s %11s %7s %8s %10s %10s%s" % (
            name, "%.3f" % lms if lms else "-", "%.3f" % tms if tms else "-",
            "%.2f" % (lms / tms) if lms and tms else "-", TARGET.get(name, "-"),
            "%.4f" % ll if ll is not None else "-", "%.4f" % tl if tl is not None else "-",
            "  (%s)" % why if why else ""))


if __name__ == "__main__":
    main()
