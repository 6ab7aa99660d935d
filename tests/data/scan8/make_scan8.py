#!/usr/bin/python3
"""Writes tests/data/scan8/: a Scan at opset 8 (batch axis 0, sequence axis
1) with sequence_lens, and its values computed step by step in numpy.

  lens.onnx  s0 [B,4], x [B,T,3], r [B,T,2] -> Scan-8 (x forward, r in
             reverse: directions [0, 1]) whose body is
             s' = tanh(s Wh + x_t Wx + r_t Wr), y_t = 2 s'
             -> sN [B,4], ys [B,T,4]
  s0.npy, x.npy, r.npy, lens.npy   B 32, T 6, lengths 0..6 (0 and 6 both
                                   present)
  sN.npy, ys.npy                   the outputs: entry b runs its first
                                   lens[b] steps (the reversed input from
                                   its step lens[b] - 1 down), its state
                                   after them, its scan outputs zero past
                                   them

Run with Debian's /usr/bin/python3 (onnx 1.12)."""
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(8)
B, T = 32, 6
Wh = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
Wx = (rng.standard_normal((3, 4)) * 0.5).astype(np.float32)
Wr = (rng.standard_normal((2, 4)) * 0.5).astype(np.float32)
s0 = rng.standard_normal((B, 4)).astype(np.float32)
x = rng.standard_normal((B, T, 3)).astype(np.float32)
r = rng.standard_normal((B, T, 2)).astype(np.float32)
lens = rng.integers(0, T + 1, B).astype(np.int64)
lens[0], lens[1] = 0, T

body = h.make_graph(
    [h.make_node("MatMul", ["s", "Wh"], ["a"]), h.make_node("MatMul", ["xt", "Wx"], ["b"]),
     h.make_node("MatMul", ["rt", "Wr"], ["c"]), h.make_node("Add", ["a", "b"], ["ab"]),
     h.make_node("Add", ["ab", "c"], ["abc"]), h.make_node("Tanh", ["abc"], ["s2"]),
     h.make_node("Add", ["s2", "s2"], ["y"])],
    "body",
    [h.make_tensor_value_info("s", TP.FLOAT, [4]), h.make_tensor_value_info("xt", TP.FLOAT, [3]),
     h.make_tensor_value_info("rt", TP.FLOAT, [2])],
    [h.make_tensor_value_info("s2", TP.FLOAT, [4]), h.make_tensor_value_info("y", TP.FLOAT, [4])])
g = h.make_graph(
    [h.make_node("Scan", ["lens", "s0", "x", "r"], ["sN", "ys"], body=body, num_scan_inputs=2, directions=[0, 1])],
    "scan8",
    [h.make_tensor_value_info("lens", TP.INT64, [B]), h.make_tensor_value_info("s0", TP.FLOAT, [B, 4]),
     h.make_tensor_value_info("x", TP.FLOAT, [B, T, 3]), h.make_tensor_value_info("r", TP.FLOAT, [B, T, 2])],
    [h.make_tensor_value_info("sN", TP.FLOAT, [B, 4]), h.make_tensor_value_info("ys", TP.FLOAT, [B, T, 4])],
    [nh.from_array(Wh, "Wh"), nh.from_array(Wx, "Wx"), nh.from_array(Wr, "Wr")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 8)], producer_name="make_scan8")
m.ir_version = 4
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "lens.onnx"))

sN = np.zeros((B, 4), np.float64)
ys = np.zeros((B, T, 4), np.float64)
for b in range(B):
    s = s0[b].astype(np.float64)
    L = lens[b]
    for t in range(L):
        s = np.tanh(s @ Wh + x[b, t] @ Wx + r[b, L - 1 - t] @ Wr)
        ys[b, t] = 2 * s
    sN[b] = s
for name, v in [("s0", s0), ("x", x), ("r", r), ("lens", lens), ("sN", sN.astype(np.float32)),
                ("ys", ys.astype(np.float32))]:
    np.save(os.path.join(HERE, name + ".npy"), v)
