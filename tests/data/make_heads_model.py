#!/usr/bin/python3
"""A model for the head-folding test (test_fold_heads.c; committed,
regenerate with Debian's /usr/bin/python3):
  heads_fold.onnx  x[N,5,8] -> qkv = x Wqkv + b [N,5,24] -> Reshape
                   [N,5,3,2,4] -> Transpose 2,0,3,1,4 -> Split along axis
                   0 -> Squeeze: q, k, v [N,2,5,4] (as torch exports a
                   packed projection) -> softmax(q k^T * c) v -> Transpose
                   0,2,1,3 -> Reshape [N,5,8] -> MatMul Wo -> y; plus q
                   times a [1,2,4,4] weight (broadcast: must stay as it is)
                   added through the same merge
  heads_plain.onnx the same without the broadcast product (every head
                   transpose folds, the gradient's Concat included)"""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(13)
F = TP.FLOAT


def arr(name, a, dt=np.float32):
    return nh.from_array(np.asarray(a, dt), name)


def build(plain):
    inits = [arr("Wqkv", rng.normal(0, 0.4, (8, 24))), arr("bqkv", rng.normal(0, 0.1, (24,))),
             arr("Wo", rng.normal(0, 0.4, (8, 8))), arr("Wb", rng.normal(0, 0.4, (1, 2, 4, 4))),
             arr("packed", [0, 5, 3, 2, 4], np.int64), arr("merged", [0, 5, 8], np.int64),
             arr("ax0", [0], np.int64), arr("c", 0.5)]
    n = [
        h.make_node("MatMul", ["x", "Wqkv"], ["qkv0"]),
        h.make_node("Add", ["qkv0", "bqkv"], ["qkv"]),
        h.make_node("Reshape", ["qkv", "packed"], ["r"]),
        h.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4]),
        h.make_node("Split", ["t"], ["s0", "s1", "s2"], axis=0),
        h.make_node("Squeeze", ["s0", "ax0"], ["q"]),
        h.make_node("Squeeze", ["s1", "ax0"], ["k"]),
        h.make_node("Squeeze", ["s2", "ax0"], ["v"]),
        h.make_node("Transpose", ["k"], ["kT"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["q", "kT"], ["s"]),
        h.make_node("Mul", ["s", "c"], ["ss"]),
        h.make_node("Softmax", ["ss"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "v"], ["o"]),
    ]
    if plain:
        inits = [i for i in inits if i.name != "Wb"]
        n += [h.make_node("Transpose", ["o"], ["om"], perm=[0, 2, 1, 3])]
    else:
        n += [h.make_node("MatMul", ["q", "Wb"], ["qb"]),
              h.make_node("Add", ["o", "qb"], ["ob"]),
              h.make_node("Transpose", ["ob"], ["om"], perm=[0, 2, 1, 3])]
    n += [
        h.make_node("Reshape", ["om", "merged"], ["oc"]),
        h.make_node("MatMul", ["oc", "Wo"], ["y"]),
    ]
    name = "heads_plain" if plain else "heads_fold"
    g = h.make_graph(n, name, [h.make_tensor_value_info("x", F, ["N", 5, 8])],
                     [h.make_tensor_value_info("y", F, ["N", 5, 8])], initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def main():
    build(False)
    build(True)


if __name__ == "__main__":
    main()
