#!/usr/bin/python3
"""Writes tests/data/f64_bucket.onnx: DeBERTa-v2's log-bucketed relative
positions (make_log_bucket_position, bucket_size 32, max_position 64) for a
sequence of x's length, computed in float32 from integer positions as torch
computes them (Shape, Range, Sub, then Cast to float, Div, Log, Div, Mul,
Ceil and a Cast back to int64) and gathering a trained bias table, added to
x * w, with an additive mask and a multiplicative one made from the integer
input `mask`:

    y = tanh(x * w + rel_bias[bucket + 32] + (1 - m) * -10000) * m,  m = float(mask)

Outputs y and the buckets. At |i - j| = 63 the bucket's ratio
log(63 / 16) / log(63 / 16) is exactly 1 in float32 (the constant is
float32 log(63 / 16)) and 1 + 2^-25 or so in float64 arithmetic on the same
float32 constants, so the float64 ceiling is one higher (32, not 31): the
model must keep that arithmetic in float32 when widened to float64.
Run with Debian's /usr/bin/python3 (onnx)."""
import math
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "f64_bucket.onnx")
L, MID, MAXPOS = 64, 16, 64
rng = np.random.default_rng(31)


def const(name, v, dt):
    return h.make_node("Constant", [], [name], value=nh.from_array(np.array(v, dt), name + "_v"))


nodes = [
    const("c0", 0, np.int64), const("c1", 1, np.int64), const("ax0", [0], np.int64), const("ax1", [1], np.int64),
    const("mid_i", MID, np.int64), const("mid_m1_i", MID - 1, np.int64), const("off", MAXPOS // 2, np.int64),
    const("mid_f", MID, np.float32), const("log_ratio", math.log((MAXPOS - 1) / MID), np.float32),
    const("mid_m1_f", MID - 1, np.float32), const("one", 1.0, np.float32), const("neg", -10000.0, np.float32),
    h.make_node("Shape", ["x"], ["shape"]),
    h.make_node("Gather", ["shape", "c0"], ["n"], axis=0),
    h.make_node("Range", ["c0", "n", "c1"], ["pos"]),
    h.make_node("Unsqueeze", ["pos", "ax1"], ["pos_i"]),
    h.make_node("Unsqueeze", ["pos", "ax0"], ["pos_j"]),
    h.make_node("Sub", ["pos_j", "pos_i"], ["rel"]),
    h.make_node("Sign", ["rel"], ["sign"]),
    h.make_node("Abs", ["rel"], ["abs"]),
    h.make_node("Less", ["abs", "mid_i"], ["small"]),
    h.make_node("Where", ["small", "mid_m1_i", "abs"], ["abs_pos"]),
    h.make_node("Cast", ["abs_pos"], ["abs_f"], to=TP.FLOAT),
    h.make_node("Div", ["abs_f", "mid_f"], ["ratio"]),
    h.make_node("Log", ["ratio"], ["log"]),
    h.make_node("Div", ["log", "log_ratio"], ["frac"]),
    h.make_node("Mul", ["frac", "mid_m1_f"], ["scaled"]),
    h.make_node("Ceil", ["scaled"], ["ceil"]),
    h.make_node("Add", ["ceil", "mid_f"], ["log_pos"]),
    h.make_node("LessOrEqual", ["abs", "mid_i"], ["near"]),
    h.make_node("Cast", ["sign"], ["sign_f"], to=TP.FLOAT),
    h.make_node("Mul", ["log_pos", "sign_f"], ["signed"]),
    h.make_node("Cast", ["rel"], ["rel_f"], to=TP.FLOAT),
    h.make_node("Where", ["near", "rel_f", "signed"], ["bucket_f"]),
    h.make_node("Cast", ["bucket_f"], ["bucket"], to=TP.INT64),
    h.make_node("Add", ["bucket", "off"], ["idx"]),
    h.make_node("Gather", ["rel_bias", "idx"], ["bias"], axis=0),
    h.make_node("Cast", ["mask"], ["m"], to=TP.FLOAT),
    h.make_node("Sub", ["one", "m"], ["inv"]),
    h.make_node("Mul", ["inv", "neg"], ["madd"]),
    h.make_node("Mul", ["x", "w"], ["xw"]),
    h.make_node("Add", ["xw", "bias"], ["z0"]),
    h.make_node("Add", ["z0", "madd"], ["z"]),
    h.make_node("Tanh", ["z"], ["t"]),
    h.make_node("Mul", ["t", "m"], ["y"]),
]
g = h.make_graph(
    nodes, "f64_bucket",
    [h.make_tensor_value_info("x", TP.FLOAT, ["L", "L"]), h.make_tensor_value_info("mask", TP.INT64, ["L"])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["L", "L"]), h.make_tensor_value_info("bucket", TP.INT64, ["L", "L"])],
    initializer=[nh.from_array((rng.standard_normal(MAXPOS + 1) * 0.5).astype(np.float32), "rel_bias"),
                 nh.from_array((rng.standard_normal(L) * 0.5 + 1).astype(np.float32), "w")])
m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, OUT)
