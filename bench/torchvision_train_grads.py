#!/usr/bin/python3
"""Training-mode gradients of torchvision networks: lantern against PyTorch
float64 (the reproduction of issue 8, part 1).

For each network and batch size: the module with default initialisation
is exported by the TorchScript exporter (eval mode, TrainingMode.PRESERVE,
no constant folding, opset 15), every BatchNormalization switched to
training_mode=1; N(0,1) images 3xSxS and random labels; PyTorch computes
the batch-mean softmax cross-entropy's gradients in float64 in train() mode.
`lantern grad` runs the model in float32 and again with --f64, and every
parameter is compared by name, max-norm relative error with a floor of 1%
of the largest gradient (a BatchNormalization bias before a 1x1
convolution and another BatchNormalization has a true gradient of zero).
PyTorch's own float32 gradients are compared the same way. Also counted:
ReLU inputs whose sign differs between lantern's float32
forward and PyTorch's float64 forward (a sign that float32 cannot resolve
changes the branch the gradient takes; no float32 program avoids that).

usage: bench/torchvision_train_grads.py LANTERN [--size 64] [--nets resnet18,...] [--batches 2,4,8,16,32]"""
import argparse, copy, os, re, subprocess, sys, tempfile
import numpy as np
import torch, torchvision, onnx


def sanitize(n):
    return re.sub(r"[^A-Za-z0-9._-]", "_", n)


def export(model, path, size):
    m = copy.deepcopy(model).eval()
    torch.onnx.export(m, torch.randn(2, 3, size, size), path, do_constant_folding=False, opset_version=15,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    mo = onnx.load(path)
    for n in mo.graph.node:
        if n.op_type == "BatchNormalization":
            for a in n.attribute:
                if a.name == "training_mode":
                    a.i = 1
    onnx.save(mo, path)
    return mo


def relu_flips(lantern, d, mo, model, x):
    relus = [n for n in mo.graph.node if n.op_type == "Relu"]
    m2 = copy.deepcopy(mo)
    for n in relus:
        m2.graph.output.append(onnx.helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT, None))
    onnx.save(m2, d + "/relus.onnx")
    subprocess.run([lantern, "run", d + "/relus.onnx", "--input", "x=" + d + "/x.npy", "--output-dir", d + "/acts"],
                   check=True, stdout=subprocess.DEVNULL)
    pre = []
    hooks = [mod.register_forward_pre_hook(lambda mod, inp: pre.append(inp[0].detach().clone()))
             for mod in model.modules() if isinstance(mod, torch.nn.ReLU)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    flips, nearest = 0, np.inf
    for i, n in enumerate(relus[:len(pre)]):
        a = np.load(d + "/acts/" + sanitize(n.input[0]) + ".npy")
        r = pre[i].numpy()
        bad = (a > 0) != (r > 0)
        flips += int(bad.sum())
        if bad.any():
            nearest = min(nearest, float(np.abs(r[bad]).max()))
    return flips, nearest


def compare(gdir, ref):
    scale = max(np.abs(g).max() for g in ref.values())
    worst, wname, off = 0.0, "", 0
    for k, r in ref.items():
        a = np.load(os.path.join(gdir, sanitize(k) + ".npy")).astype(np.float64)
        e = np.abs(a - r).max() / max(np.abs(r).max(), 1e-2 * scale)
        off += e > 1e-3
        if e > worst:
            worst, wname = e, k
    return off, worst, wname


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lantern")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--nets", default="resnet18,densenet121,shufflenet_v2_x0_5")
    ap.add_argument("--batches", default="2,4,8,16,32")
    a = ap.parse_args()
    for net in a.nets.split(","):
        torch.manual_seed(0)
        model = getattr(torchvision.models, net)(num_classes=10)
        # the export runs Dropout as the identity (and drops StochasticDepth):
        # so does the reference, else its random masks would be the difference
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
                mod.p = 0.0
        with tempfile.TemporaryDirectory() as d:
            mo = export(model, d + "/m.onnx", a.size)
            ref64 = copy.deepcopy(model).double().train()
            for b in map(int, a.batches.split(",")):
                g = torch.Generator().manual_seed(b)
                x = torch.randn(b, 3, a.size, a.size, generator=g).double()
                y = torch.randint(0, 10, (b,), generator=g)
                np.save(d + "/x.npy", x.float().numpy())
                np.save(d + "/y.npy", y.numpy())
                ref64.zero_grad()
                torch.nn.functional.cross_entropy(ref64(x), y).backward()
                ref = {k: p.grad.numpy().copy() for k, p in ref64.named_parameters()}
                ref32 = copy.deepcopy(model).train()
                torch.nn.functional.cross_entropy(ref32(x.float()), y).backward()
                os.makedirs(d + "/torch32", exist_ok=True)
                for k, p in ref32.named_parameters():
                    np.save(d + "/torch32/" + sanitize(k) + ".npy", p.grad.numpy())
                off, worst, wname = compare(d + "/torch32", ref)
                row = ["PyTorch float32: %d of %d off, worst %.2g" % (off, len(ref), worst)]
                for prec, extra in (("float32", []), ("float64", ["--f64"])):
                    gd = d + "/g" + prec
                    subprocess.run([a.lantern, "grad", d + "/m.onnx", "--input", "x=" + d + "/x.npy", "--loss",
                                    "softmax-cross-entropy", "--labels", d + "/y.npy", "--output-dir", gd] + extra,
                                   check=True, stdout=subprocess.DEVNULL)
                    off, worst, wname = compare(gd, ref)
                    row.append("lantern %s: %d of %d off, worst %.2g (%s)" % (prec, off, len(ref), worst, wname))
                flips, nearest = relu_flips(a.lantern, d, mo, copy.deepcopy(model).double().train(), x)
                print("%s batch %d | %s | ReLU signs float32 cannot resolve: %d (largest |z| among them %.2g)"
                      % (net, b, " | ".join(row), flips, nearest if flips else 0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
