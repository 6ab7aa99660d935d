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
  loop_state.onnx       x float [4,3] -> Loop of 3 steps from the initializer h0 -> logits [4,3]

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

# loop_state.onnx: x float [4,3] -> a Loop of 3 steps h = tanh(h W + x V) from
# h0, an initializer [4,5] -> h MatMul U 5x3 -> logits [4,3]. With h0 kept
# fixed (--freeze h0, or a constant an exporter folded, as torch.zeros of a
# static shape) the loop's state still starts from it.
step = helper.make_graph(
    [helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("MatMul", ["x", "V"], ["xv"]),
     helper.make_node("Add", ["hw", "xv"], ["s"]), helper.make_node("Tanh", ["s"], ["h_out"]),
     helper.make_node("Identity", ["c_in"], ["c_out"])],
    "step", [helper.make_tensor_value_info("it", TensorProto.INT64, []),
             helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
             helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [4, 5])],
    [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [4, 5])])
nodes = [helper.make_node("Loop", ["trips", "", "h0"], ["hT"], body=step),
         helper.make_node("MatMul", ["hT", "U"], ["logits"])]
inits = [init("h0", rng.uniform(-0.5, 0.5, (4, 5))), init("W", rng.uniform(-0.5, 0.5, (5, 5))),
         init("V", rng.uniform(-0.5, 0.5, (3, 5))), init("U", rng.uniform(-0.5, 0.5, (5, 3))),
         numpy_helper.from_array(np.array(3, np.int64), "trips")]
g = helper.make_graph(nodes, "loop_state", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 3])], inits)
m = helper.make_model(g, producer_name="lantern tests", opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
save(m, os.path.join(HERE, "loop_state.onnx"))

# unsq_folded.onnx / unsq_ops.onnx: x float [N,6] -> x W (W 6x5) + the sum over
# the last axis of x[:, None, :] * W^T[None] -> y [N,5]. The first holds
# W^T[None] as an initializer of its own (Wt1 [1,5,6], what an exporter's
# constant folding makes of W.t().unsqueeze(0)); the second computes it with
# Transpose and Unsqueeze. Trained, both are one weight W.
Wm = rng.uniform(-0.5, 0.5, (6, 5)).astype(np.float32)
for folded in (True, False):
    nodes = [helper.make_node("MatMul", ["x", "W"], ["a"]),
             helper.make_node("Unsqueeze", ["x", "ax1"], ["x1"]),
             helper.make_node("Mul", ["x1", "Wt1"], ["p"]),
             helper.make_node("ReduceSum", ["p", "ax2"], ["b"], keepdims=0),
             helper.make_node("Add", ["a", "b"], ["y"])]
    inits = [init("W", Wm), numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             numpy_helper.from_array(np.array([2], np.int64), "ax2")]
    if folded:
        inits.append(init("Wt1", Wm.T[None]))
    else:
        nodes = [helper.make_node("Transpose", ["W"], ["Wt"], perm=[1, 0]),
                 helper.make_node("Unsqueeze", ["Wt", "ax0"], ["Wt1"])] + nodes
        inits.append(numpy_helper.from_array(np.array([0], np.int64), "ax0"))
    g = helper.make_graph(nodes, "unsq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
    m = helper.make_model(g, producer_name="lantern tests", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    save(m, os.path.join(HERE, "unsq_folded.onnx" if folded else "unsq_ops.onnx"))
