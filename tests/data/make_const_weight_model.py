#!/usr/bin/python3
"""Writes tests/data/const_weight.onnx: x float [N,4] -> Loop of 2 iterations
whose body multiplies the carried [N,4] by W, a Constant node of [4,64]
values, and sums back to [N,4] through a second Constant [64,4]; then a
Linear head (an initializer) -> logits [N,3]. The Constants are weights
as TorchScript writes a scripted loop body's module: lantern does not
train them and says so (tests/unit/test_train_init.c).

Run with Debian's /usr/bin/python3 (onnx 1.12)."""
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

rng = np.random.default_rng(5)
W1 = (rng.standard_normal((4, 64)) * 0.3).astype(np.float32)
W2 = (rng.standard_normal((64, 4)) * 0.3).astype(np.float32)
body = h.make_graph(
    [h.make_node("Constant", [], ["w1"], value=nh.from_array(W1, "w1")),
     h.make_node("Constant", [], ["w2"], value=nh.from_array(W2, "w2")),
     h.make_node("MatMul", ["h", "w1"], ["a"]), h.make_node("Tanh", ["a"], ["t"]),
     h.make_node("MatMul", ["t", "w2"], ["h2"]), h.make_node("Identity", ["c"], ["c2"])],
    "body",
    [h.make_tensor_value_info("i", TP.INT64, []), h.make_tensor_value_info("c", TP.BOOL, []),
     h.make_tensor_value_info("h", TP.FLOAT, ["N", 4])],
    [h.make_tensor_value_info("c2", TP.BOOL, []), h.make_tensor_value_info("h2", TP.FLOAT, ["N", 4])])
g = h.make_graph(
    [h.make_node("Loop", ["M", "", "x"], ["hN"], body=body),
     h.make_node("Gemm", ["hN", "head.weight", "head.bias"], ["logits"], transB=1)],
    "const_weight", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
    [h.make_tensor_value_info("logits", TP.FLOAT, ["N", 3])],
    [nh.from_array(np.array(2, np.int64), "M"),
     nh.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "head.weight"),
     nh.from_array(np.zeros(3, np.float32), "head.bias")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="make_const_weight_model")
onnx.checker.check_model(m)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "const_weight.onnx"))
