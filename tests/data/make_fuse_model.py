#!/usr/bin/python3
"""A model for the elementwise-fusion test (test_fuse_elementwise.c;
committed, regenerate with Debian's /usr/bin/python3):
  fuse_chain.onnx  x[N,5,24] -> MatMul -> Add bias (a row) -> GELU written
                   out as Div, Erf, Add, Mul, Mul (scalars) -> Sub the input
                   -> Tanh, Sigmoid, Neg, Exp, Sqrt of a square plus eps,
                   Reciprocal -> y[N,5,24]; h (the GELU value) is a second
                   output, so one chain value leaves the chain
  fuse_mish.onnx   x[N,5,24] -> Mul by a weight row, Add a bias row -> Mish
                   spelled out as TorchScript writes it (Softplus, Tanh,
                   Mul) -> y[N,5,24]"""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(5)
F = TP.FLOAT


def arr(name, a):
    return nh.from_array(np.asarray(a, np.float32), name)


def main():
    inits = [arr("W", rng.normal(0, 0.3, (24, 24))), arr("b", rng.normal(0, 0.1, (24,))),
             arr("sqrt2", np.sqrt(2.0)), arr("one", 1.0), arr("half", 0.5), arr("eps", 1e-3),
             arr("row", rng.normal(0, 0.5, (1, 1, 24)))]
    n = [
        h.make_node("MatMul", ["x", "W"], ["mm"]),
        h.make_node("Add", ["b", "mm"], ["pre"]),
        h.make_node("Div", ["pre", "sqrt2"], ["d"]),
        h.make_node("Erf", ["d"], ["e"]),
        h.make_node("Add", ["e", "one"], ["e1"]),
        h.make_node("Mul", ["pre", "e1"], ["g"]),
        h.make_node("Mul", ["g", "half"], ["h"]),
        h.make_node("Sub", ["h", "x"], ["s"]),
        h.make_node("Tanh", ["s"], ["t"]),
        h.make_node("Sigmoid", ["h"], ["sg"]),
        h.make_node("Mul", ["t", "sg"], ["ts"]),
        h.make_node("Neg", ["ts"], ["ng"]),
        h.make_node("Exp", ["ng"], ["ex"]),
        h.make_node("Mul", ["s", "s"], ["sq"]),
        h.make_node("Add", ["sq", "eps"], ["sqe"]),
        h.make_node("Sqrt", ["sqe"], ["rt"]),
        h.make_node("Reciprocal", ["rt"], ["rc"]),
        h.make_node("Mul", ["ex", "rc"], ["m1"]),
        h.make_node("Mul", ["m1", "row"], ["y"]),
    ]
    g = h.make_graph(n, "fuse_chain", [h.make_tensor_value_info("x", F, ["N", 5, 24])],
                     [h.make_tensor_value_info("y", F, ["N", 5, 24]),
                      h.make_tensor_value_info("h", F, ["N", 5, 24])], initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "fuse_chain.onnx"))
    n = [
        h.make_node("Mul", ["x", "w"], ["xw"]),
        h.make_node("Add", ["xw", "b"], ["pre"]),
        h.make_node("Softplus", ["pre"], ["sp"]),
        h.make_node("Tanh", ["sp"], ["t"]),
        h.make_node("Mul", ["pre", "t"], ["y"]),
    ]
    inits = [arr("w", rng.normal(1, 0.5, (24,))), arr("b", rng.normal(0, 0.5, (24,)))]
    g = h.make_graph(n, "fuse_mish", [h.make_tensor_value_info("x", F, ["N", 5, 24])],
                     [h.make_tensor_value_info("y", F, ["N", 5, 24])], initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "fuse_mish.onnx"))


if __name__ == "__main__":
    main()
