#!/usr/bin/python3
"""Writes tests/data/tied/copy_out.onnx: y = Gemm(x, W, b, transB=1) with a
second graph output Wt, an initializer holding exactly W's transpose (what an
exporter writes for `return lin(x), lin.weight.t()`). lantern ties Wt to W;
the output must keep its name, and a seed on it must reach W's gradient.
Run with Debian's /usr/bin/python3 (onnx)."""
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tied", "copy_out.onnx")
rng = np.random.default_rng(5)
W = rng.standard_normal((3, 4)).astype(np.float32)
g = h.make_graph([h.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1)], "copy_out",
                 [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
                 [h.make_tensor_value_info("y", TP.FLOAT, ["N", 3]), h.make_tensor_value_info("Wt", TP.FLOAT, [4, 3])],
                 initializer=[nh.from_array(W, "W"), nh.from_array(rng.standard_normal(3).astype(np.float32), "b"),
                              nh.from_array(np.ascontiguousarray(W.T), "Wt")])
m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, OUT)
