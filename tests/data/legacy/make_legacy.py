#!/usr/bin/python3
"""Writes tests/data/legacy/: graphs in the forms of old exporters (Caffe2,
CNTK, early converters) that ONNX model-zoo files still carry, with numpy
references for their outputs (tests/unit/test_legacy_ops.c checks the
gradients against float64 central differences, and one training step
against torch).

  bcast6.onnx  opset 6, x [2,4,3,5]: legacy broadcasts (broadcast = 1),
               B's dims lined up with x's at axis:
                 a   = Add(x, bias [4], axis 1)
                 m   = Mul(x, s [4,3], axis 1)
                 sb  = Sub(x, w [5])               (no axis: the last dims)
                 dv  = Div(x, d [4], axis -3)
                 mk0 = Mul(x, k0 [])               (a scalar)
                 mk1 = Mul(x, k1 [1], axis 0)      (one value)
                 m0  = Mul(x, q [2,4], axis 0)
                 p   = Pow(Sigmoid(x), e [4], axis 1)
                 gt  = Greater(x, t [3,5])         (bool)
               y = Sum(a, m, sb, dv, mk0, mk1, m0, p) * R (first output)
  op1.onnx     opset 1 (IR 3, initializers also graph inputs), x [2,4,3,5]:
               a = Add(x, bias, broadcast 1, axis 1, consumed_inputs),
               r = Relu(a), p = Pow(Sigmoid(a), e [4], broadcast 1, axis 1),
               c = Concat(x, r, p) with no axis (1 below opset 4): [2,12,3,5],
               y = c * R
  cast1.onnx   opset 1: m = MatMul(x [4,5], W [5,3]), Cast(m, to "DOUBLE"),
               squared, Cast(.., to "FLOAT") -> y; Cast(m, to "INT64") -> i
  exp7.onnx    opset 7, x [2,3,6,7]; each experimental op reads x + P_k
               (P_k [3,6,7], its own parameter):
                 isc = ImageScaler(scale 0.5, bias [1, 2, 3])
                 isn = ImageScaler(scale 2) (no bias)
                 cr  = Crop(border [1, 2, 3, 1])          -> [2,3,3,3]
                 crs = Crop(border [1, 2, 0, 0], scale [3, 4]) -> [2,3,3,4]
                 sc  = Scale(scale 3)
                 st  = ScaledTanh(alpha 0.5, beta 2)
                 af  = Affine(alpha 2, beta -1)
                 ps  = ParametricSoftplus(alpha 1.5, beta 0.7)
               y = sum_k ReduceSum(o_k * R_k) (first output, a scalar)
  exp_bad.onnx ScaledTanh without alpha: refused at import
  *_x.npy, *_<out>.npy   the input and numpy's outputs of each model
  c2.onnx      the Caffe2 way of a small classifier, opset 6: Conv (no
               bias), Add(bias [5], broadcast 1, axis 1), Relu, Flatten,
               Gemm(transB 1, broadcast 1) -> logits [8,3]
  c2_x.npy, c2_y.npy     a batch and its labels
  c2_loss.npy            torch's mean softmax cross-entropy before the step
  c2_<param>.npy         the parameters after one SGD step at lr 0.1 (torch)

Run with Debian's /usr/bin/python3 (torch 1.13, onnx 1.12)."""
import os
import numpy as np
import onnx
import torch
from onnx import helper as h, numpy_helper as nh, TensorProto as T

D = os.path.dirname(os.path.abspath(__file__))
F = T.FLOAT


def save(name, nodes, x, outputs, inits, opset, ir=3):
    g_in = [h.make_tensor_value_info("x", F, list(x.shape))]
    if ir < 4:  # IR 3: every initializer is a graph input too
        g_in += [h.make_tensor_value_info(k, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], list(v.shape))
                 for k, v in inits.items()]
    g_out = [h.make_tensor_value_info(o, t, None) for o, t in outputs]
    g = h.make_graph(nodes, name, g_in, g_out, [nh.from_array(v, k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=ir, producer_name="legacy-tests")
    onnx.save(m, os.path.join(D, name + ".onnx"))
    np.save(os.path.join(D, name + "_x.npy"), x)


def ref(name, out, v):
    np.save(os.path.join(D, "%s_%s.npy" % (name, out)), v)


def rs(seed):
    return np.random.RandomState(seed)


def f32(a):
    return np.asarray(a, np.float32)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def bcast6():
    r = rs(1)
    x = f32(r.uniform(-1, 1, (2, 4, 3, 5)))
    P = {"bias": f32(r.randn(4)), "s": f32(r.randn(4, 3)), "w": f32(r.randn(5)),
         "d": f32(r.uniform(1, 2, 4)), "k0": f32(1.7), "k1": f32([-0.6]), "q": f32(r.randn(2, 4)),
         "e": f32(r.uniform(0.5, 3, 4)), "t": f32(r.randn(3, 5) * 0.5), "R": f32(r.randn(2, 4, 3, 5))}
    B = dict(broadcast=1)
    nodes = [h.make_node("Add", ["x", "bias"], ["a"], axis=1, **B),
             h.make_node("Mul", ["x", "s"], ["m"], axis=1, **B),
             h.make_node("Sub", ["x", "w"], ["sb"], **B),
             h.make_node("Div", ["x", "d"], ["dv"], axis=-3, **B),
             h.make_node("Mul", ["x", "k0"], ["mk0"], **B),
             h.make_node("Mul", ["x", "k1"], ["mk1"], axis=0, **B),
             h.make_node("Mul", ["x", "q"], ["m0"], axis=0, **B),
             h.make_node("Sigmoid", ["x"], ["sg"]),
             h.make_node("Pow", ["sg", "e"], ["p"], axis=1, **B),
             h.make_node("Greater", ["x", "t"], ["gt"], **B),
             h.make_node("Sum", ["a", "m", "sb", "dv", "mk0", "mk1", "m0", "p"], ["sum"]),
             h.make_node("Mul", ["sum", "R"], ["y"])]
    c = lambda v: v.reshape(1, 4, 1, 1)
    o = {"a": x + c(P["bias"]), "m": x * P["s"].reshape(1, 4, 3, 1), "sb": x - P["w"], "dv": x / c(P["d"]),
         "mk0": x * P["k0"], "mk1": x * P["k1"][0], "m0": x * P["q"].reshape(2, 4, 1, 1),
         "p": sigmoid(x) ** c(P["e"])}
    y = sum(o.values()) * P["R"]
    gt = x > P["t"]
    outs = [("y", F)] + [(k, F) for k in o] + [("gt", T.BOOL)]
    save("bcast6", nodes, x, outs, P, 6)
    ref("bcast6", "y", f32(y))
    for k, v in o.items():
        ref("bcast6", k, f32(v))
    ref("bcast6", "gt", gt)


def op1():
    r = rs(2)
    x = f32(r.uniform(-1, 1, (2, 4, 3, 5)))
    P = {"bias": f32(r.randn(4)), "e": f32(r.uniform(0.5, 3, 4)), "R": f32(r.randn(2, 12, 3, 5))}
    nodes = [h.make_node("Add", ["x", "bias"], ["a"], broadcast=1, axis=1, consumed_inputs=[0, 0]),
             h.make_node("Relu", ["a"], ["r"], consumed_inputs=[0]),
             h.make_node("Sigmoid", ["a"], ["sg"], consumed_inputs=[0]),
             h.make_node("Pow", ["sg", "e"], ["p"], broadcast=1, axis=1),
             h.make_node("Concat", ["x", "r", "p"], ["c"]),
             h.make_node("Mul", ["c", "R"], ["y"], consumed_inputs=[0, 0])]
    a = x + P["bias"].reshape(1, 4, 1, 1)
    c = np.concatenate([x, np.maximum(a, 0), sigmoid(a) ** P["e"].reshape(1, 4, 1, 1)], 1)
    save("op1", nodes, x, [("y", F), ("c", F)], P, 1)
    ref("op1", "y", f32(c * P["R"]))
    ref("op1", "c", f32(c))


def cast1():
    r = rs(3)
    x = f32(r.uniform(-2, 2, (4, 5)))
    P = {"W": f32(r.randn(5, 3))}
    nodes = [h.make_node("MatMul", ["x", "W"], ["m"]),
             h.make_node("Cast", ["m"], ["md"], to="DOUBLE"),
             h.make_node("Mul", ["md", "md"], ["md2"]),
             h.make_node("Cast", ["md2"], ["y"], to="FLOAT"),
             h.make_node("Cast", ["m"], ["i"], to="INT64")]
    save("cast1", nodes, x, [("y", F), ("i", T.INT64), ("md", T.DOUBLE)], P, 1)
    m = x.astype(np.float64) @ P["W"].astype(np.float64)
    ref("cast1", "y", f32(m * m))
    ref("cast1", "i", f32(x @ P["W"]).astype(np.int64))
    ref("cast1", "md", f32(x @ P["W"]).astype(np.float64))


def exp7():
    r = rs(4)
    x = f32(r.uniform(-1.5, 1.5, (2, 3, 6, 7)))
    ops = [("isc", "ImageScaler", dict(scale=0.5, bias=[1.0, 2.0, 3.0])),
           ("isn", "ImageScaler", dict(scale=2.0)),
           ("cr", "Crop", dict(border=[1, 2, 3, 1])),
           ("crs", "Crop", dict(border=[1, 2, 0, 0], scale=[3, 4])),
           ("sc", "Scale", dict(scale=3.0)),
           ("st", "ScaledTanh", dict(alpha=0.5, beta=2.0)),
           ("af", "Affine", dict(alpha=2.0, beta=-1.0)),
           ("ps", "ParametricSoftplus", dict(alpha=1.5, beta=0.7))]
    P, nodes, o = {}, [], {}
    for k, (name, op, at) in enumerate(ops):
        Pk = f32(r.randn(3, 6, 7) * 0.3)
        P["P_" + name] = Pk
        z = x + Pk
        nodes += [h.make_node("Add", ["x", "P_" + name], ["z_" + name]),
                  h.make_node(op, ["z_" + name], [name], **at)]
        if name == "isc":
            v = 0.5 * z + np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1)
        elif name == "isn":
            v = 2 * z
        elif name == "cr":  # left 1, top 2, right 3, bottom 1
            v = z[:, :, 2:6 - 1, 1:7 - 3]
        elif name == "crs":  # top 2 .. 2 + 3, left 1 .. 1 + 4
            v = z[:, :, 2:5, 1:5]
        elif name == "sc":
            v = 3 * z
        elif name == "st":
            v = 0.5 * np.tanh(2 * z)
        elif name == "af":
            v = 2 * z - 1
        else:
            v = 1.5 * np.log(np.exp(0.7 * z.astype(np.float64)) + 1)
        o[name] = f32(v)
        P["R_" + name] = f32(r.randn(*v.shape))
        nodes += [h.make_node("Mul", [name, "R_" + name], ["w_" + name]),
                  h.make_node("ReduceSum", ["w_" + name], ["s_" + name], keepdims=0)]
    nodes.append(h.make_node("Sum", ["s_" + n for n, _, _ in ops], ["y"]))
    save("exp7", nodes, x, [("y", F)] + [(n, F) for n, _, _ in ops], P, 7)
    ref("exp7", "y", f32(sum((o[n] * P["R_" + n]).sum() for n, _, _ in ops)))
    for k, v in o.items():
        ref("exp7", k, v)
    bad = [h.make_node("ScaledTanh", ["x"], ["y"], beta=2.0)]
    save("exp_bad", bad, x[:1], [("y", F)], {}, 7)
    os.remove(os.path.join(D, "exp_bad_x.npy"))


def c2():
    r = rs(5)
    N = 8
    x = f32(r.randn(N, 4, 6, 6))
    y = r.randint(0, 3, N).astype(np.int64)
    P = {"Wcv": f32(r.randn(5, 4, 3, 3) * 0.2), "bcv": f32(r.randn(5) * 0.1),
         "Wf": f32(r.randn(3, 80) * 0.1), "bf": f32(r.randn(3) * 0.1)}
    nodes = [h.make_node("Conv", ["x", "Wcv"], ["c"], kernel_shape=[3, 3]),
             h.make_node("Add", ["c", "bcv"], ["cb"], broadcast=1, axis=1),
             h.make_node("Relu", ["cb"], ["r"]),
             h.make_node("Flatten", ["r"], ["f"]),
             h.make_node("Gemm", ["f", "Wf", "bf"], ["logits"], transB=1, broadcast=1)]
    save("c2", nodes, x, [("logits", F)], P, 6)
    np.save(os.path.join(D, "c2_y.npy"), y)
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in P.items()}
    xt = torch.tensor(x, dtype=torch.float64)
    c = torch.nn.functional.conv2d(xt, t["Wcv"]) + t["bcv"].view(1, 5, 1, 1)
    logits = torch.relu(c).flatten(1) @ t["Wf"].T + t["bf"]
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
    loss.backward()
    np.save(os.path.join(D, "c2_loss.npy"), np.float64(loss.item()))
    for k, v in t.items():
        np.save(os.path.join(D, "c2_%s.npy" % k), f32((v - 0.1 * v.grad).detach().numpy()))


if __name__ == "__main__":
    bcast6()
    op1()
    cast1()
    exp7()
    c2()
