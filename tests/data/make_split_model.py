#!/usr/bin/python3
"""A model for the Split-view test (test_tensorops.c; committed, regenerate
with Debian's /usr/bin/python3):
  split_view.onnx  x[3,N,4] -> m = x * x -> Split along axis 0 into three
                   [1,N,4] pieces (views of m's storage) -> sigmoid(s0),
                   -s1, s2 + s0, each of which may be written over its
                   input -> Concat along axis 0 -> y[3,N,4]"""
import os
import onnx
from onnx import helper as h, TensorProto as TP

HERE = os.path.dirname(os.path.abspath(__file__))
F = TP.FLOAT


def main():
    n = [
        h.make_node("Mul", ["x", "x"], ["m"]),
        h.make_node("Split", ["m"], ["s0", "s1", "s2"], axis=0),
        h.make_node("Sigmoid", ["s0"], ["a"]),
        h.make_node("Neg", ["s1"], ["b"]),
        h.make_node("Add", ["s2", "s0"], ["c"]),
        h.make_node("Concat", ["a", "b", "c"], ["y"], axis=0),
    ]
    g = h.make_graph(n, "split_view", [h.make_tensor_value_info("x", F, [3, "N", 4])],
                     [h.make_tensor_value_info("y", F, [3, "N", 4])])
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "split_view.onnx"))


if __name__ == "__main__":
    main()
