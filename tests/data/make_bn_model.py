#!/usr/bin/python3
"""Tiny models for the training-mode tests (test_train_mode.c; committed,
regenerate with Debian's /usr/bin/python3):
  bn_model.onnx       x[N,4] -> Gemm -> BatchNormalization (opset 15,
                      momentum 0.8) -> logits[N,3]
  bn_model_9.onnx     the same at opset 9 (training by statistics outputs)
  dropout_13.onnx     y = Dropout(x, ratio 0.3) at opset 13, x[N,1000]
  dropout_10.onnx     the same at opset 10 (ratio attribute)"""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
F = TP.FLOAT


def arr(name, a):
    return nh.from_array(np.asarray(a, np.float32), name)


def save(name, nodes, inputs, outputs, inits, opset):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def bn_model(name, opset):
    inits = [arr("W", rng.standard_normal((3, 4)) * 0.7), arr("b", rng.standard_normal(3) * 0.2),
             arr("bn_scale", 1 + rng.standard_normal(3) * 0.1), arr("bn_bias", rng.standard_normal(3) * 0.1),
             arr("bn_mean", [0.1, -0.2, 0.3]), arr("bn_var", [1.5, 0.8, 1.2])]
    nodes = [h.make_node("Gemm", ["x", "W", "b"], ["h"], transB=1),
             h.make_node("BatchNormalization", ["h", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["logits"],
                         epsilon=1e-5, momentum=0.8)]
    save(name, nodes, [h.make_tensor_value_info("x", F, ["N", 4])],
         [h.make_tensor_value_info("logits", F, ["N", 3])], inits, opset)


def dropout_model(name, opset):
    if opset >= 12:
        nodes = [h.make_node("Constant", [], ["ratio"], value=nh.from_array(np.array(0.3, np.float32))),
                 h.make_node("Dropout", ["x", "ratio"], ["y"])]
    else:
        nodes = [h.make_node("Dropout", ["x"], ["y"], ratio=0.3)]
    save(name, nodes, [h.make_tensor_value_info("x", F, ["N", 1000])],
         [h.make_tensor_value_info("y", F, ["N", 1000])], [], opset)


bn_model("bn_model", 15)
bn_model("bn_model_9", 9)
dropout_model("dropout_13", 13)
dropout_model("dropout_10", 10)
