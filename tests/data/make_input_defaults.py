#!/usr/bin/python3
"""Models for tests/unit/test_train_data_checks.c, written with onnx.helper;
weights drawn with a fixed seed.

  defaults_inputs.onnx  x float [N,4] -> Gemm W1 4x6 + b1 -> Relu -> Gemm W2 6x3 + b2
                        -> logits [N,3]; IR 3 and opset 9, every initializer also
                        listed as a graph input (as IR 3 requires, and as
                        torch.onnx.export(keep_initializers_as_inputs=True) writes)
  defaults_plain.onnx   the same model with its initializers only
  seq_pair.onnx         a, b float [N,seq,2] -> (a + b) MatMul W 2x3 -> ReduceMean over
                        seq -> logits [N,3]: two inputs that share the dim seq

  /usr/bin/python3 tests/data/make_input_defaults.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(31)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


def mlp(as_inputs):
    inits = [init("W1", W1), init("b1", b1), init("W2", W2), init("b2", b2)]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["logits"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])]
    if as_inputs:
        inputs += [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims)) for t in inits]
    out = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])]
    g = helper.make_graph(nodes, "mlp", inputs, out, inits)
    m = helper.make_model(g, producer_name="lantern tests", opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3 if as_inputs else 7
    return m


W1 = rng.uniform(-0.5, 0.5, (4, 6)).astype(np.float32)
b1 = rng.uniform(-0.1, 0.1, (6,)).astype(np.float32)
W2 = rng.uniform(-0.5, 0.5, (6, 3)).astype(np.float32)
b2 = rng.uniform(-0.1, 0.1, (3,)).astype(np.float32)
plain = mlp(False)
with_inputs = mlp(True)
save(plain, os.path.join(HERE, "defaults_plain.onnx"))
save(with_inputs, os.path.join(HERE, "defaults_inputs.onnx"))

W = rng.uniform(-0.5, 0.5, (2, 3)).astype(np.float32)
nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
         helper.make_node("MatMul", ["s", "W"], ["p"]),
         helper.make_node("ReduceMean", ["p"], ["logits"], axes=[1], keepdims=0)]
ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", "seq", 2]) for n in ("a", "b")]
out = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])]
g = helper.make_graph(nodes, "seq_pair", ins, out, [init("W", W)])
m = helper.make_model(g, producer_name="lantern tests", opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
save(m, os.path.join(HERE, "seq_pair.onnx"))
