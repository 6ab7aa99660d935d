"""if_alias.onnx: a value whose buffer outlives its planned death on some runs.

  a = Relu(x)
  y = If(flag) then Identity(a) (y shares a's buffer) else Mul(a, a)
  z = MatMul(y, W)
  out = Add(z, x)

Planned with flag false, a dies at the If and z (same size) takes its place
in the arena; run with flag true, a's buffer lives on as y while MatMul
would write z over it.
tests/unit/test_memplan.c checks that the run still matches the pool alone.
Written with Debian's python3 and onnx: python3 make_if_alias.py
"""
import os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
W = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
then_g = helper.make_graph([helper.make_node("Identity", ["a"], ["then_y"])], "then", [],
                           [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, ["N", 8])])
else_g = helper.make_graph([helper.make_node("Mul", ["a", "a"], ["else_y"])], "else", [],
                           [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, ["N", 8])])
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["a"]),
     helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g),
     helper.make_node("MatMul", ["y", "W"], ["z"]),
     helper.make_node("Add", ["z", "x"], ["out"])],
    "if_alias",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
     helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 8])],
    initializer=[numpy_helper.from_array(W, "W")])
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "if_alias.onnx"))
