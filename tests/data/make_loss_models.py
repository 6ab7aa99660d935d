#!/usr/bin/python3
"""Models for the loss tests (tests/unit/test_train_losses.c), written with
onnx.helper; weights drawn with a fixed seed.

  loss_mlp.onnx        x [N,784] -> Gemm 784x32 -> Relu -> Gemm 32x10 -> logits [N,10]
  loss_mlp_logsm.onnx  the same weights, then LogSoftmax -> logp [N,10] (second output: logits)
  loss_mlp_sce.onnx    the same weights, inputs x and labels [N] int64, output the mean
                       SoftmaxCrossEntropyLoss (a model whose output is its loss)
  linreg.onnx          x [N,8] -> Gemm 8x3 (+ bias) -> y [N,3]
  logreg.onnx          x [N,2] -> Gemm 2x1 (+ bias) -> z [N,1]

  /usr/bin/python3 tests/data/make_loss_models.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def uni(shape, fan_in):
    b = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-b, b, shape).astype(np.float32)


W1, b1 = uni((784, 32), 784), uni((32,), 784)
W2, b2 = uni((32, 10), 32), uni((10,), 32)


def mlp_nodes():
    return [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["a"]),
            helper.make_node("Gemm", ["a", "W2", "b2"], ["logits"])]


def mlp_inits():
    return [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(b1, "b1"),
            numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(b2, "b2")]


def write(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests")
    save(model, os.path.join(HERE, name))


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])
logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])
write(helper.make_graph(mlp_nodes(), "loss_mlp", [x], [logits], mlp_inits()), "loss_mlp.onnx")

logp = helper.make_tensor_value_info("logp", TensorProto.FLOAT, ["N", 10])
write(helper.make_graph(mlp_nodes() + [helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=1)],
                        "loss_mlp_logsm", [x], [logits, logp], mlp_inits()), "loss_mlp_logsm.onnx")

labels = helper.make_tensor_value_info("labels", TensorProto.INT64, ["N"])
loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
write(helper.make_graph(mlp_nodes() + [helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"])],
                        "loss_mlp_sce", [x, labels], [loss], mlp_inits()), "loss_mlp_sce.onnx")

xl = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
yl = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
write(helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["y"])], "linreg", [xl], [yl],
                        [numpy_helper.from_array(uni((8, 3), 8), "W"), numpy_helper.from_array(uni((3,), 8), "b")]),
      "linreg.onnx")

xg = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])
zg = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 1])
write(helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["z"])], "logreg", [xg], [zg],
                        [numpy_helper.from_array(uni((2, 1), 2), "W"), numpy_helper.from_array(uni((1,), 2), "b")]),
      "logreg.onnx")
