#!/usr/bin/python3
"""A model for the scale-folding test (test_fold_scale.c; committed,
regenerate with Debian's /usr/bin/python3):
  scale_fold.onnx  x[N,5,8] -> q, k, v = x Wq, x Wk, x Wv -> heads [N,2,5,4]
                   -> s = q k^T, Mul(s, 1/sqrt 8) (folds into the product;
                   its gradient's Mul into the two products reading it)
                   -> softmax -> o = p v, Div(o, 2) (folds; so does its
                   gradient's Div) -> merged -> y; plus, must stay:
                   k v^T read twice (by a Mul by the constant and an Add),
                   a product times a trainable scalar; and Mul(x, 0.75) read
                   by one product with a constant weight (folds into it)."""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(12)
F = TP.FLOAT


def arr(name, a, dt=np.float32):
    return nh.from_array(np.asarray(a, dt), name)


def const(name, a):
    return h.make_node("Constant", [], [name], value=arr(name + "_v", a))


def main():
    inits = [arr("Wq", rng.normal(0, 0.4, (8, 8))), arr("Wk", rng.normal(0, 0.4, (8, 8))),
             arr("Wv", rng.normal(0, 0.4, (8, 8))), arr("Wt", rng.normal(0, 0.4, (8, 8))),
             arr("tscale", 0.8), arr("heads", [0, 5, 2, 4], np.int64), arr("merged", [0, 5, 8], np.int64)]
    n = [const("c1", np.float32(1 / np.sqrt(8.0))), const("c2", np.full((1, 1, 1, 1), 2.0, np.float32)),
         const("c3", np.float32([0.75])), const("Wu", rng.normal(0, 0.4, (8, 8)))]
    for w in "qkv":
        n += [h.make_node("MatMul", ["x", "W" + w], [w + "p"]),
              h.make_node("Reshape", [w + "p", "heads"], [w + "r"]),
              h.make_node("Transpose", [w + "r"], [w + "h"], perm=[0, 2, 1, 3])]
    n += [
        h.make_node("Transpose", ["kh"], ["khT"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["qh", "khT"], ["s"]),
        h.make_node("Mul", ["s", "c1"], ["ss"]),
        h.make_node("Softmax", ["ss"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "vh"], ["o"]),
        h.make_node("Div", ["o", "c2"], ["od"]),
        # k v^T read by the Mul and by the Add: stays
        h.make_node("Transpose", ["vh"], ["vhT"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["kh", "vhT"], ["kv"]),
        h.make_node("Mul", ["c1", "kv"], ["kvs"]),
        h.make_node("Add", ["kv", "kvs"], ["z"]),
        h.make_node("MatMul", ["z", "vh"], ["zo"]),
        h.make_node("Add", ["od", "zo"], ["oz"]),
        h.make_node("Transpose", ["oz"], ["om"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["om", "merged"], ["oc"]),
        # a trainable scale: stays
        h.make_node("MatMul", ["x", "Wt"], ["xt"]),
        h.make_node("Mul", ["xt", "tscale"], ["xts"]),
        # x * 0.75 read by one product (the weight a constant, so no gradient reads it)
        h.make_node("Mul", ["x", "c3"], ["u"]),
        h.make_node("MatMul", ["u", "Wu"], ["uw"]),
        h.make_node("Add", ["oc", "xts"], ["y0"]),
        h.make_node("Add", ["y0", "uw"], ["y"]),
    ]
    g = h.make_graph(n, "scale_fold", [h.make_tensor_value_info("x", F, ["N", 5, 8])],
                     [h.make_tensor_value_info("y", F, ["N", 5, 8])], initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "scale_fold.onnx"))


if __name__ == "__main__":
    main()
