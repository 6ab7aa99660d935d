#!/usr/bin/python3
"""Training-step benchmark, lantern against PyTorch (a benchmark, not a
test): for each model of bench/make_bench_models.py, in one run and under
the same thread count, runs bench_train (lantern), then the same step in
PyTorch -- same model and weights, same batches in the same order, same
optimizer and learning rate -- with Debian's torch (the python running this
script) and, with --torch2 PY, a second torch (e.g. 2.x from PyPI in a venv),
and prints one table row per model:

  lantern ms   median of the timed steps (forward, loss, backward, optimizer
               update; after warm-up), per batch (per tree for the TreeLSTM)
  torch ms     the same for each torch, and the ratio lantern / the faster torch
               (min rt: the same ratio of the fastest steps, steadier on a busy machine)
  minflt/step  lantern's minor page faults per timed step (0: no new memory
               taken from the system in a step)
  max RSS      of the lantern process and of each torch process (every model
               runs in a process of its own)
  loss0        the first step's loss on both sides (same weights and batch:
               the shipped models' trained weights are read from their .onnx
               into the torch modules; SqueezeNet's dropout masks differ, so
               its losses differ)

  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive /usr/bin/python3 bench/torch_bench.py \\
      [--lantern build-bench/bench/bench_train] [--models build/bench_models] \\
      [--torch2 /tmp/venv-bench/bin/python] [--warmup 40] [--iters 40] [--rounds 1] [--spin] [NAME...]

Warm-up: 40 steps on both sides by default, so that lantern's timed steps
come after its thread governor's first two probes (train/thread_gov.c:
3 warm-up runs, a probe of 12 runs (3 counted at each thread count, each
after an uncounted one), 12 settled runs, a second probe: steps 3 to 38),
as they would in a training run of any length; later probes, one
every 100 steps, are rare enough to leave the median alone.

--rounds R runs lantern and each torch R times per model, alternating, and
keeps each side's lower median: steadier figures on a busy machine.

--spin instead times lantern alone with 1 and with 2 threads while a
spinning process keeps one core busy, and prints the ratio (2 threads / 1),
beside that of a second 1-thread series to the first (the noise floor).

Threads: OMP_NUM_THREADS (default 2 when unset) for lantern and
torch.set_num_threads for torch; OMP_WAIT_POLICY is passed through as set
(the table's header states both). bench/run_train_bench.sh runs the whole
thing (models, build, table)."""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))


def manifest(models_dir):
    out = []
    with open(os.path.join(models_dir, "bench.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, batch, optim, lr = line.split()[:4]
                out.append((name, int(batch), optim, float(lr)))
    return out


# ---- the torch side: one model per process ----

def onnx_weights(name, model, path):
    """The shipped models' trained weights from their .onnx into the torch
    module (ONNX LSTM gates i,o,f,c become torch's i,f,g,o; the Loop RNN's
    W, U, b become nn.RNN's weights, its bias all in bias_ih)."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    g = onnx.load(path).graph
    init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        for at in n.attribute:
            if at.g is not None:
                init.update({i.name: numpy_helper.to_array(i) for i in at.g.initializer})
    sd = {}
    if name in ("mlp", "cnn"):
        sd = {k: init[k] for k in model.state_dict()}
    elif name == "lstm":
        lstm = [n for n in g.node if n.op_type == "LSTM"][0]
        W, R, B = (init[lstm.input[k]][0] for k in (1, 2, 3))
        order = lambda a: np.concatenate([a[0], a[2], a[3], a[1]])  # noqa: E731  i,o,f,c -> i,f,c,o
        blocks = lambda a: np.split(a, 4)  # noqa: E731
        H = R.shape[1]
        sd = {"rnn.weight_ih_l0": order(blocks(W)), "rnn.weight_hh_l0": order(blocks(R)),
              "rnn.bias_ih_l0": order(blocks(B[:4 * H])), "rnn.bias_hh_l0": order(blocks(B[4 * H:])),
              "fc.weight": init["fc.weight"], "fc.bias": init["fc.bias"]}
    elif name == "rnn_loop":
        sd = {"rnn.weight_ih_l0": init["W"].T, "rnn.weight_hh_l0": init["U"].T, "rnn.bias_ih_l0": init["b"],
              "rnn.bias_hh_l0": np.zeros_like(init["b"]), "fc.weight": init["Wfc"], "fc.bias": init["bfc"]}
    model.load_state_dict({k: torch.from_numpy(np.array(v, copy=True)) for k, v in sd.items()})


def worker(a):
    import numpy as np
    import torch
    import make_bench_models as mbm
    entry = [e for e in manifest(a.models) if e[0] == a.worker][0]
    name, batch, optim, lr = entry
    model = mbm.build(name)
    pt = os.path.join(a.models, name + ".pt")
    if os.path.exists(pt):
        model.load_state_dict(torch.load(pt))
    elif name in ("mlp", "cnn", "lstm", "rnn_loop"):
        onnx_weights(name, model, os.path.join(a.models, name + ".onnx"))
    model.train()
    torch.set_num_threads(a.threads)  # after the imports: make_models sets its own
    data = dict(np.load(os.path.join(a.models, name + ".npz")))  # NpzFile reads a member at every access
    units = []
    if "y_splits" in data:
        s = data["y_splits"]
        for i in range(len(s) - 1):
            units.append(((torch.from_numpy(data["words"][s[i]:s[i + 1]]),
                           torch.from_numpy(data["children"][s[i]:s[i + 1]])),
                          torch.from_numpy(data["y"][s[i]:s[i + 1]])))
    else:  # x, or the model's inputs by name in the npz's order (bench_train feeds them by name)
        names = ["x"] if "x" in data else [k for k in data if k != "y"]
        y = data["y"]
        for b in range(len(y) // batch):
            units.append((tuple(torch.from_numpy(data[k][b * batch:(b + 1) * batch].copy()) for k in names),
                          torch.from_numpy(y[b * batch:(b + 1) * batch].copy())))
    params = model.parameters()
    if optim == "momentum":
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    elif optim == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    elif optim == "adam":
        opt = torch.optim.Adam(params, lr=lr)
    elif optim == "adamw":
        opt = torch.optim.AdamW(params, lr=lr)
    elif optim == "adagrad":
        opt = torch.optim.Adagrad(params, lr=lr)
    else:
        sys.exit("unknown optimizer " + optim)
    times, loss0 = [], None
    if "y_splits" in data:  # as bench_train: the warm-up sees every tree once
        a.warmup = max(a.warmup, len(units))
    for it in range(a.warmup + a.iters):
        inputs, labels = units[it % len(units)]
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(*inputs), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if it == 0:
            loss0 = loss.item()
        if it >= a.warmup:
            times.append((t1 - t0) * 1e3)
    print("torch %s version %s threads %d median_ms %.3f min_ms %.3f loss0 %.6f maxrss_kb %d" %
          (name, torch.__version__, torch.get_num_threads(), statistics.median(times), min(times), loss0,
           resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


# ---- the driver ----

def spin_check(a, entries):
    """lantern with 1 and with 2 threads while one core is kept busy by a
    spinning process (issue 9: 2 threads never slower than 1 by more than
    10 %); the runs of a model alternate, three times, medians taken. A
    second series on 1 thread runs in the same rotation as a control: its
    ratio to the first (1' / 1) is what the machine's noise alone does to
    two series of the same setting."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        print("lantern %s, 1 against 2 threads (OMP_WAIT_POLICY=%s) with a spinning process on one core; "
              "median of %d steps after %d warm-up steps, best of 3 alternating runs; 1' = a second "
              "1-thread series (the noise between two series of one setting)" %
              (a.lantern, os.environ.get("OMP_WAIT_POLICY", "(unset)"), a.iters, a.warmup))
        print("%-11s %10s %10s %8s %9s" % ("model", "1 thr ms", "2 thr ms", "2 / 1", "1' / 1"))
        for name, _, _, _ in entries:
            best = {"1": None, "2": None, "1'": None}
            for _ in range(3):
                for series in ("1", "2", "1'"):
                    t = int(series[0])
                    r = run([a.lantern, "--warmup", str(a.warmup), "--iters", str(a.iters), a.models, name],
                            dict(os.environ, OMP_NUM_THREADS=str(t)), "bench_train %s (%d threads)" % (name, t))
                    if r:
                        ms = float(r["median_ms"])
                        best[series] = ms if best[series] is None else min(best[series], ms)
            if all(best.values()):
                print("%-11s %10.2f %10.2f %8.2f %9.2f" %
                      (name, best["1"], best["2"], best["2"] / best["1"], best["1'"] / best["1"]))
            else:
                print("%-11s %10s %10s %8s %9s" % (name, "fail", "fail", "-", "-"))
            sys.stdout.flush()
    finally:
        spinner.kill()
        spinner.wait()


def fields(line):
    f = line.split()
    return {f[i]: f[i + 1] for i in range(2, len(f) - 1, 2)}


def run(cmd, env, tag):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.stderr.write("%s failed (exit %d): %s\n%s" % (tag, r.returncode, " ".join(cmd), r.stderr[-2000:]))
        return None
    for line in r.stdout.splitlines():
        if line.startswith(("train ", "torch ")):
            return fields(line)
    sys.stderr.write("%s printed no result: %s\n" % (tag, " ".join(cmd)))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lantern", default=None, help="bench_train binary")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench_models"))
    ap.add_argument("--torch2", help="python of a second torch (e.g. a venv with PyPI torch 2.x)")
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=1,
                    help="run each side this many times, alternating, and keep the lower median (busy machines)")
    ap.add_argument("--spin", action="store_true",
                    help="lantern only: 1 against 2 threads while a spinning process keeps one core busy")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    threads = int(os.environ.get("OMP_NUM_THREADS") or 2)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if a.lantern is None:
        for cand in ("build-bench/bench/bench_train", "build/bench/bench_train"):
            if os.path.exists(os.path.join(ROOT, cand)):
                a.lantern = os.path.join(ROOT, cand)
                break
        else:
            sys.exit("no bench_train binary found: build it and give --lantern")
    entries = [e for e in manifest(a.models) if not a.names or e[0] in a.names]
    if a.spin:
        return spin_check(a, entries)
    pythons = [("torch-debian", sys.executable)] + ([("torch2", a.torch2)] if a.torch2 else [])
    common = ["--models", a.models, "--warmup", str(a.warmup), "--iters", str(a.iters), "--threads", str(threads)]
    print("lantern %s vs PyTorch; threads %d on both sides (OMP_NUM_THREADS=%s, torch.set_num_threads(%d)), "
          "OMP_WAIT_POLICY=%s; median of %d steps after %d warm-up steps (one tree a step: after one pass over the trees "
          "at least); best median of %d alternating round(s)" %
          (a.lantern, threads, env["OMP_NUM_THREADS"], threads, os.environ.get("OMP_WAIT_POLICY", "(unset)"),
           a.iters, a.warmup, a.rounds))
    rows = []
    def better(old, new):  # the round with the lower median (max RSS: the largest seen)
        if not old or not new:
            return old or new
        best = dict(new if float(new["median_ms"]) < float(old["median_ms"]) else old)
        best["min_ms"] = str(min(float(old["min_ms"]), float(new["min_ms"])))
        best["maxrss_kb"] = str(max(int(old["maxrss_kb"]), int(new["maxrss_kb"])))
        return best

    for name, batch, optim, lr in entries:
        lt, pts = None, [None] * len(pythons)
        for _ in range(a.rounds):
            lt = better(lt, run([a.lantern, "--warmup", str(a.warmup), "--iters", str(a.iters), a.models, name], env,
                                "bench_train " + name))
            for i, (tag, py) in enumerate(pythons):
                pts[i] = better(pts[i], run([py, os.path.abspath(__file__), "--worker", name] + common, env,
                                            tag + " " + name))
        rows.append((name, batch, optim, lt, pts))
        sys.stderr.write("done %s\n" % name)
    versions = [next((p[i]["version"] for _, _, _, _, p in rows if p[i]), "?") for i in range(len(pythons))]
    head = "%-11s %5s %-8s %9s" % ("model", "batch", "optim", "lantern")
    for v in versions:
        head += " %11s" % ("torch " + ".".join(v.split(".")[:2]))
    head += " %7s %7s %8s %9s" % ("ratio", "min rt", "minflt/s", "lt RSS MB")
    for v in versions:
        head += " %9s" % ("RSS " + ".".join(v.split(".")[:2]))
    head += " %10s %10s" % ("lt loss0", "pt loss0")
    print("times in ms per step (the TreeLSTM: per tree); ratio = lantern / the faster torch (medians), "
          "min rt = the same for the fastest steps; minflt/s = lantern's minor page faults per step")
    print(head)
    for name, batch, optim, lt, pts in rows:
        ms = [float(p["median_ms"]) if p else None for p in pts]
        best = min([m for m in ms if m is not None], default=None)
        line = "%-11s %5s %-8s %9s" % (name, batch, optim, "%.2f" % float(lt["median_ms"]) if lt else "fail")
        for m in ms:
            line += " %11s" % ("%.2f" % m if m is not None else "fail")
        line += " %7s" % ("%.2f" % (float(lt["median_ms"]) / best) if lt and best else "-")
        lows = [float(p["min_ms"]) for p in pts if p]
        line += " %7s" % ("%.2f" % (float(lt["min_ms"]) / min(lows)) if lt and lows else "-")
        line += " %8s %9s" % (lt["minflt_per_step"] if lt else "-", "%.0f" % (int(lt["maxrss_kb"]) / 1024) if lt else "-")
        for p in pts:
            line += " %9s" % ("%.0f" % (int(p["maxrss_kb"]) / 1024) if p else "-")
        pl = next((p["loss0"] for p in pts if p), None)
        line += " %10s %10s" % ("%.6f" % float(lt["loss0"]) if lt else "-", "%.6f" % float(pl) if pl else "-")
        print(line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
