#!/usr/bin/python3
"""Writes the small models the importer tests load (committed; run with
Debian's /usr/bin/python3 to regenerate):
  function.onnx  a model-local function with an attribute reference, called twice
  sparse.onnx    a sparse initializer (COO indices) added to the input"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

# MulLeaky(X, Y) = LeakyRelu(X * Y, alpha=@alpha)
leaky = helper.make_node("LeakyRelu", ["S"], ["T"])
leaky.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
fn = helper.make_function("custom", "MulLeaky", ["X", "Y"], ["T"],
                          [helper.make_node("Mul", ["X", "Y"], ["S"]), leaky],
                          [helper.make_opsetid("", 13)], ["alpha"])
graph = helper.make_graph(
    [helper.make_node("MulLeaky", ["x", "y"], ["t1"], domain="custom", name="first", alpha=0.5),
     helper.make_node("MulLeaky", ["t1", "y"], ["z"], domain="custom", name="second", alpha=0.25)],
    "uses_function",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
m = helper.make_model(graph, functions=[fn], producer_name="lantern-tests",
                      opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("custom", 1)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "function.onnx"))

values = numpy_helper.from_array(np.array([1.5, -2.0, 4.0], np.float32), "W")
indices = numpy_helper.from_array(np.array([[0, 1], [1, 3], [2, 0]], np.int64), "W_indices")
sparse = helper.make_sparse_tensor(values, indices, [3, 4])
graph = helper.make_graph(
    [helper.make_node("Add", ["x", "W"], ["z"])], "uses_sparse",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3, 4])],
    sparse_initializer=[sparse])
m = helper.make_model(graph, producer_name="lantern-tests", opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "sparse.onnx"))
