#!/usr/bin/python3
"""A model for the transpose-folding test (test_fold_transpose.c; committed,
regenerate with Debian's /usr/bin/python3):
  attn_fold.onnx  x[N,5,8] -> q, k, v = x W^T (MatMul of a Transpose of
                  each weight) -> heads [N,2,5,4] (Reshape, Transpose
                  0,2,1,3) -> softmax(q k^T * scale) v (k^T a Transpose of
                  the last two axes) -> heads merged -> MatMul by Wo^T
                  (a rank-2 Transpose without perm) -> plus the transpose of
                  a product, (x^T W3)^T -> y[N,5,8]"""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
F = TP.FLOAT


def arr(name, a, dt=np.float32):
    return nh.from_array(np.asarray(a, dt), name)


def main():
    inits = [arr("Wq", rng.normal(0, 0.4, (8, 8))), arr("Wk", rng.normal(0, 0.4, (8, 8))),
             arr("Wv", rng.normal(0, 0.4, (8, 8))), arr("Wo", rng.normal(0, 0.4, (8, 8))),
             arr("W3", rng.normal(0, 0.4, (5, 5))), arr("scale", 0.5),
             arr("heads", [0, 5, 2, 4], np.int64), arr("merged", [0, 5, 8], np.int64)]
    n = []
    for w in "qkv":
        n += [h.make_node("Transpose", ["W" + w], [w + "T"], perm=[1, 0]),
              h.make_node("MatMul", ["x", w + "T"], [w + "p"]),
              h.make_node("Reshape", [w + "p", "heads"], [w + "r"]),
              h.make_node("Transpose", [w + "r"], [w + "h"], perm=[0, 2, 1, 3])]
    n += [
        h.make_node("Transpose", ["kh"], ["khT"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["qh", "khT"], ["s"]),
        h.make_node("Mul", ["s", "scale"], ["ss"]),
        h.make_node("Softmax", ["ss"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "vh"], ["o"]),
        h.make_node("Transpose", ["o"], ["om"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["om", "merged"], ["oc"]),
        h.make_node("Transpose", ["Wo"], ["WoT"]),
        h.make_node("MatMul", ["oc", "WoT"], ["y0"]),
        h.make_node("Transpose", ["x"], ["xT"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["xT", "W3"], ["xw"]),
        h.make_node("Transpose", ["xw"], ["xwT"], perm=[0, 2, 1]),
        h.make_node("Add", ["y0", "xwT"], ["y"]),
    ]
    g = h.make_graph(n, "attn_fold", [h.make_tensor_value_info("x", F, ["N", 5, 8])],
                     [h.make_tensor_value_info("y", F, ["N", 5, 8])], initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "attn_fold.onnx"))


if __name__ == "__main__":
    main()
