#!/usr/bin/python3
"""Reference gradients for the shipped models, computed by PyTorch autograd:
each ONNX graph is evaluated op by op with torch operations (ONNX semantics
for the ops these models use), the loss is the batch-mean softmax
cross-entropy of the first output against the true labels of the 8 test
images in ref/, and the gradient of every float initializer is saved as
ref/grads/<model>/<initializer>.npy (same name sanitizing as lantern), the
loss as loss.npy. Run with Debian's /usr/bin/python3; the .npy files are
committed."""
import os, re
import numpy as np
import torch
import onnx
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_default_dtype(torch.float32)


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def rnn_like(op, a, X, W, R, B, h0, c0=None):
    """single-direction RNN/LSTM with default activations; X [T,B,I]"""
    T = X.shape[0]
    H = R.shape[-1]
    W, R = W[0], R[0]
    Wb, Rb = (B[0][: B.shape[1] // 2], B[0][B.shape[1] // 2:]) if B is not None else (0, 0)
    h = h0[0] if h0 is not None else torch.zeros(X.shape[1], H)
    c = c0[0] if c0 is not None else torch.zeros(X.shape[1], H)
    ys = []
    for t in range(T):
        z = X[t] @ W.T + h @ R.T + Wb + Rb
        if op == "RNN":
            h = torch.tanh(z)
        else:  # LSTM gates in ONNX order i, o, f, c
            i, o, f, g = z.split(H, dim=1)
            i, o, f, g = torch.sigmoid(i), torch.sigmoid(o), torch.sigmoid(f), torch.tanh(g)
            c = f * c + i * g
            h = o * torch.tanh(c)
        ys.append(h)
    Y = torch.stack(ys)[:, None]
    return [Y, h[None], c[None]]


def run_graph(g, env, opset):
    for n in g.node:
        a = attrs(n)
        x = [env[i] if i else None for i in n.input]
        op = n.op_type
        if op == "Constant":
            out = [torch.from_numpy(nh.to_array(a["value"]).copy())]
        elif op == "Gemm":
            A, B = x[0], x[1]
            A = A.T if a.get("transA", 0) else A
            B = B.T if a.get("transB", 0) else B
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
            out = [y]
        elif op == "Relu":
            out = [torch.relu(x[0])]
        elif op == "Tanh":
            out = [torch.tanh(x[0])]
        elif op in ("Add", "MatMul"):
            out = [x[0] + x[1] if op == "Add" else x[0] @ x[1]]
        elif op == "Identity":
            out = [x[0]]
        elif op == "Conv":
            pads = a.get("pads", [0, 0, 0, 0])
            assert pads[:2] == pads[2:]
            out = [torch.nn.functional.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", [1, 1]),
                                              pads[:2], a.get("dilations", [1, 1]), a.get("group", 1))]
        elif op == "MaxPool":
            pads = a.get("pads", [0, 0, 0, 0])
            out = [torch.nn.functional.max_pool2d(x[0], a["kernel_shape"], a.get("strides"), pads[:2],
                                                  ceil_mode=bool(a.get("ceil_mode", 0)))]
        elif op == "GlobalAveragePool":
            out = [x[0].mean(dim=(2, 3), keepdim=True)]
        elif op == "Flatten":
            ax = a.get("axis", 1)
            out = [x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)]
        elif op == "Concat":
            out = [torch.cat(x, a["axis"])]
        elif op == "Shape":
            out = [torch.tensor(list(x[0].shape), dtype=torch.int64)]
        elif op == "Gather":
            idx = x[1]
            out = [torch.index_select(x[0], a.get("axis", 0), idx.reshape(-1)).reshape(
                x[0].shape[:a.get("axis", 0)] + idx.shape + x[0].shape[a.get("axis", 0) + 1:])]
        elif op == "Unsqueeze":
            y = x[0]
            for ax in sorted(int(v) for v in (x[1] if len(x) > 1 else a["axes"])):
                y = y.unsqueeze(ax)
            out = [y]
        elif op == "ConstantOfShape":
            v = nh.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
            out = [torch.full(tuple(int(s) for s in x[0]), float(v.reshape(-1)[0]), dtype=torch.float32)]
        elif op == "Transpose":
            out = [x[0].permute(*a["perm"])]
        elif op in ("RNN", "LSTM"):
            ys = rnn_like(op, a, x[0], x[1], x[2], x[3] if len(x) > 3 else None, x[5] if len(x) > 5 else None,
                          x[6] if len(x) > 6 else None)
            out = ys[:len(n.output)]
        elif op == "Loop":
            body = a["body"]
            M = int(x[0]) if x[0] is not None else 1 << 30
            cond = bool(x[1]) if x[1] is not None else True
            carried = x[2:]
            i = 0
            while i < M and cond:
                benv = dict(env)
                benv[body.input[0].name] = torch.tensor(i, dtype=torch.int64)
                benv[body.input[1].name] = torch.tensor(cond)
                for vi, v in zip(body.input[2:], carried):
                    benv[vi.name] = v
                for t in body.initializer:
                    benv[t.name] = env["__params"][t.name]
                run_graph(body, benv, opset)
                res = [benv[o.name] for o in body.output]
                cond = bool(res[0])
                carried = res[1:]
                i += 1
            out = carried
        else:
            raise NotImplementedError(op)
        for name, v in zip(n.output, out):
            if name:
                env[name] = v


def collect_inits(g, params):
    for t in g.initializer:
        arr = nh.to_array(t).copy()
        params[t.name] = torch.tensor(arr, requires_grad=arr.dtype == np.float32)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                collect_inits(a.g, params)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def main():
    y8 = torch.from_numpy(np.load(os.path.join(HERE, "ref", "y8.npy")))
    for name, xfile in [("mlp", "x8_flat"), ("cnn", "x8_img"), ("rnn", "x8_seq"), ("lstm", "x8_seq"),
                        ("rnn_loop", "x8_seq"), ("squeezenet", "x8_img")]:
        m = onnx.load(os.path.join(HERE, name + ".onnx"))
        params = {}
        collect_inits(m.graph, params)
        env = dict(params)
        env["__params"] = params
        env[m.graph.input[0].name] = torch.from_numpy(np.load(os.path.join(HERE, "ref", xfile + ".npy")))
        run_graph(m.graph, env, m.opset_import[0].version)
        logits = env[m.graph.output[0].name]
        loss = torch.nn.functional.cross_entropy(logits, y8)
        loss.backward()
        out = os.path.join(HERE, "ref", "grads", name)
        os.makedirs(out, exist_ok=True)
        np.save(os.path.join(out, "loss.npy"), np.array(loss.item(), np.float32))
        for pname, p in params.items():
            if p.requires_grad:
                np.save(os.path.join(out, sanitize(pname) + ".npy"), p.grad.numpy().astype(np.float32))
        print(name, "loss %.6f" % loss.item(), len([p for p in params.values() if p.requires_grad]), "gradients")


if __name__ == "__main__":
    main()
