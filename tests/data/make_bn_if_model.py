#!/usr/bin/python3
"""bn_in_if.onnx for test_train_mode: x [N,784] -> Gemm 784x8 -> If(cond) whose
then-branch normalizes with BatchNormalization (scale, bias, running mean and
variance are main-graph initializers) and whose else-branch passes through ->
Gemm 8x10 -> logits. Training must update that batch norm's running
statistics as it does for one in the main graph.

  /usr/bin/python3 tests/data/make_bn_if_model.py
Also bn_main.onnx (the same with the batch norm in the main graph),
bn_in_loop.onnx (the batch norm twice in a Loop body) and bn_unrolled.onnx
(those two steps unrolled in the main graph, parameters shared).
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)

then_g = helper.make_graph(
    [helper.make_node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["hn"])],
    "then", [], [helper.make_tensor_value_info("hn", TensorProto.FLOAT, ["N", 8])])
else_g = helper.make_graph(
    [helper.make_node("Identity", ["h"], ["hi"])],
    "else", [], [helper.make_tensor_value_info("hi", TensorProto.FLOAT, ["N", 8])])
nodes = [
    helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
    helper.make_node("If", ["cond"], ["hb"], then_branch=then_g, else_branch=else_g),
    helper.make_node("Gemm", ["hb", "W2", "b2"], ["logits"]),
]
inits = [
    numpy_helper.from_array(rng.uniform(-0.03, 0.03, (784, 8)).astype(np.float32), "W1"),
    numpy_helper.from_array(np.zeros(8, np.float32), "b1"),
    numpy_helper.from_array(np.ones(8, np.float32), "gamma"),
    numpy_helper.from_array(np.zeros(8, np.float32), "beta"),
    numpy_helper.from_array(np.zeros(8, np.float32), "mean"),
    numpy_helper.from_array(np.ones(8, np.float32), "var"),
    numpy_helper.from_array(np.array(True), "cond"),
    numpy_helper.from_array(rng.uniform(-0.3, 0.3, (8, 10)).astype(np.float32), "W2"),
    numpy_helper.from_array(np.zeros(10, np.float32), "b2"),
]
graph = helper.make_graph(nodes, "bn_in_if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests"),
     os.path.join(HERE, "bn_in_if.onnx"))

# the same network with the batch norm in the main graph: its statistics are updated
main_nodes = [
    helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
    helper.make_node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["hb"]),
    helper.make_node("Gemm", ["hb", "W2", "b2"], ["logits"]),
]
graph = helper.make_graph(main_nodes, "bn_main", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                          [i for i in inits if i.name != "cond"])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests"),
     os.path.join(HERE, "bn_main.onnx"))

# a Loop of two iterations whose body applies the batch norm (and a Relu) to
# the carried value, and the same two steps unrolled in the main graph with
# the batch norm's parameters shared
body = helper.make_graph(
    [helper.make_node("BatchNormalization", ["hp", "gamma", "beta", "mean", "var"], ["hq"]),
     helper.make_node("Relu", ["hq"], ["hn"]),
     helper.make_node("Identity", ["c"], ["co"])],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("c", TensorProto.BOOL, []),
     helper.make_tensor_value_info("hp", TensorProto.FLOAT, ["N", 8])],
    [helper.make_tensor_value_info("co", TensorProto.BOOL, []),
     helper.make_tensor_value_info("hn", TensorProto.FLOAT, ["N", 8])])
loop_nodes = [
    helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
    helper.make_node("Loop", ["trips", "cond", "h"], ["hl"], body=body),
    helper.make_node("Gemm", ["hl", "W2", "b2"], ["logits"]),
]
trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
graph = helper.make_graph(loop_nodes, "bn_in_loop",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits + [trips])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests"),
     os.path.join(HERE, "bn_in_loop.onnx"))
unrolled = [
    helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
    helper.make_node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["q1"]),
    helper.make_node("Relu", ["q1"], ["h1"]),
    helper.make_node("BatchNormalization", ["h1", "gamma", "beta", "mean", "var"], ["q2"]),
    helper.make_node("Relu", ["q2"], ["h2"]),
    helper.make_node("Gemm", ["h2", "W2", "b2"], ["logits"]),
]
graph = helper.make_graph(unrolled, "bn_unrolled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                          [i for i in inits if i.name != "cond"])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests"),
     os.path.join(HERE, "bn_unrolled.onnx"))

# bn_loop3.onnx: x [N,4] -> a Loop of three iterations applying one batch
# norm (momentum 0.7, statistics away from 0 and 1) and a Relu -> Gemm 4x3:
# its running statistics are updated three times a step, in turn
body3 = helper.make_graph(
    [helper.make_node("BatchNormalization", ["hp", "g3", "b3", "m3", "v3"], ["hq"], momentum=0.7),
     helper.make_node("Relu", ["hq"], ["hn"]),
     helper.make_node("Identity", ["c"], ["co"])],
    "body3",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("c", TensorProto.BOOL, []),
     helper.make_tensor_value_info("hp", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("co", TensorProto.BOOL, []),
     helper.make_tensor_value_info("hn", TensorProto.FLOAT, ["N", 4])])
inits3 = [
    numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "g3"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, 4).astype(np.float32), "b3"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, 4).astype(np.float32), "m3"),
    numpy_helper.from_array(rng.uniform(0.5, 2.0, 4).astype(np.float32), "v3"),
    numpy_helper.from_array(np.array(3, np.int64), "trips3"),
    numpy_helper.from_array(np.array(True), "cond3"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, (4, 3)).astype(np.float32), "W3"),
]
graph = helper.make_graph(
    [helper.make_node("Loop", ["trips3", "cond3", "x"], ["hl"], body=body3),
     helper.make_node("Gemm", ["hl", "W3"], ["logits"])], "bn_loop3",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])], inits3)
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests"),
     os.path.join(HERE, "bn_loop3.onnx"))
