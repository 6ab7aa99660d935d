#!/usr/bin/python3
"""Writes the models test_thread_bits trains on 1, 2 and 3 threads
(committed; run with Debian's /usr/bin/python3 to regenerate). Weights are
seeded; batch sizes are the test's.
  conv_bn.onnx     x [N, 3, 16, 16]: Conv 3->32 3x3 pad 1, BatchNormalization,
                   Relu, Conv 32->64 3x3 stride 2 pad 1, BatchNormalization,
                   Relu, Conv 64->32 1x1, Relu, GlobalAveragePool, Flatten,
                   Gemm 32->10
  attn_block.onnx  x [N, 28, 28]: Gemm-like MatMul 28->32 plus bias, a
                   pre-LayerNorm attention block (4 heads of 8, MatMul,
                   Softmax, MatMul, projection, residual), a LayerNorm MLP
                   32->128->32 with Relu and residual, ReduceMean over the
                   tokens, MatMul 32->10 plus bias"""
import os
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20240917)


def weight(name, shape, fan_in):
    a = (rng.uniform(-1, 1, size=shape) / np.sqrt(fan_in)).astype(np.float32)
    return numpy_helper.from_array(a, name)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def save(nodes, name, x_shape, inits, opset):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], initializer=inits)
    m = helper.make_model(graph, producer_name="lantern-tests", opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def bn(prefix, c, x, y, inits):
    inits += [const(prefix + ".g", rng.uniform(0.5, 1.5, c).astype(np.float32)),
              const(prefix + ".b", rng.uniform(-0.1, 0.1, c).astype(np.float32)),
              const(prefix + ".m", np.zeros(c, np.float32)), const(prefix + ".v", np.ones(c, np.float32))]
    return helper.make_node("BatchNormalization", [x, prefix + ".g", prefix + ".b", prefix + ".m", prefix + ".v"],
                            [y], epsilon=1e-5, momentum=0.9)


# ---- conv_bn ----
inits = [weight("c1.w", [32, 3, 3, 3], 27), weight("c1.b", [32], 27),
         weight("c2.w", [64, 32, 3, 3], 288), weight("c2.b", [64], 288),
         weight("c3.w", [32, 64, 1, 1], 64), weight("c3.b", [32], 64),
         weight("fc.w", [10, 32], 32), weight("fc.b", [10], 32)]
nodes = [helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["a1"], pads=[1, 1, 1, 1]),
         bn("bn1", 32, "a1", "n1", inits),
         helper.make_node("Relu", ["n1"], ["r1"]),
         helper.make_node("Conv", ["r1", "c2.w", "c2.b"], ["a2"], pads=[1, 1, 1, 1], strides=[2, 2]),
         bn("bn2", 64, "a2", "n2", inits),
         helper.make_node("Relu", ["n2"], ["r2"]),
         helper.make_node("Conv", ["r2", "c3.w", "c3.b"], ["a3"]),
         helper.make_node("Relu", ["a3"], ["r3"]),
         helper.make_node("GlobalAveragePool", ["r3"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1)]
save(nodes, "conv_bn", ["N", 3, 16, 16], inits, 15)

# ---- attn_block: T 28 tokens, d 32, 4 heads of 8 ----
T, D, H, DH, F = 28, 32, 4, 8, 128
inits = [weight("inp.w", [28, D], 28), weight("inp.b", [D], 28), weight("pos", [T, D], 1),
         const("ln1.g", np.ones(D, np.float32)), const("ln1.b", np.zeros(D, np.float32)),
         weight("qkv.w", [D, 3 * D], D), weight("qkv.b", [3 * D], D),
         weight("proj.w", [D, D], D), weight("proj.b", [D], D),
         const("ln2.g", np.ones(D, np.float32)), const("ln2.b", np.zeros(D, np.float32)),
         weight("fc1.w", [D, F], D), weight("fc1.b", [F], D),
         weight("fc2.w", [F, D], F), weight("fc2.b", [D], F),
         weight("head.w", [D, 10], D), weight("head.b", [10], D),
         const("heads_shape", np.array([0, T, 3, H, DH], np.int64)),
         const("merge_shape", np.array([0, T, D], np.int64)),
         const("scale", np.array(1 / np.sqrt(DH), np.float32))]
nodes = [helper.make_node("MatMul", ["x", "inp.w"], ["e0"]),
         helper.make_node("Add", ["e0", "inp.b"], ["e1"]),
         helper.make_node("Add", ["e1", "pos"], ["h0"]),
         helper.make_node("LayerNormalization", ["h0", "ln1.g", "ln1.b"], ["l1"], axis=-1, epsilon=1e-5),
         helper.make_node("MatMul", ["l1", "qkv.w"], ["q0"]),
         helper.make_node("Add", ["q0", "qkv.b"], ["q1"]),
         helper.make_node("Reshape", ["q1", "heads_shape"], ["q2"]),
         helper.make_node("Transpose", ["q2"], ["q3"], perm=[2, 0, 3, 1, 4]),  # [3, N, H, T, DH]
         helper.make_node("Split", ["q3"], ["qs", "ks", "vs"], axis=0),
         helper.make_node("Squeeze", ["qs", "ax0"], ["q"]),
         helper.make_node("Squeeze", ["ks", "ax0"], ["k"]),
         helper.make_node("Squeeze", ["vs", "ax0"], ["v"]),
         helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
         helper.make_node("MatMul", ["q", "kt"], ["s0"]),
         helper.make_node("Mul", ["s0", "scale"], ["s1"]),
         helper.make_node("Softmax", ["s1"], ["att"], axis=-1),
         helper.make_node("MatMul", ["att", "v"], ["o0"]),
         helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
         helper.make_node("Reshape", ["o1", "merge_shape"], ["o2"]),
         helper.make_node("MatMul", ["o2", "proj.w"], ["o3"]),
         helper.make_node("Add", ["o3", "proj.b"], ["o4"]),
         helper.make_node("Add", ["h0", "o4"], ["h1"]),
         helper.make_node("LayerNormalization", ["h1", "ln2.g", "ln2.b"], ["l2"], axis=-1, epsilon=1e-5),
         helper.make_node("MatMul", ["l2", "fc1.w"], ["m0"]),
         helper.make_node("Add", ["m0", "fc1.b"], ["m1"]),
         helper.make_node("Relu", ["m1"], ["m2"]),
         helper.make_node("MatMul", ["m2", "fc2.w"], ["m3"]),
         helper.make_node("Add", ["m3", "fc2.b"], ["m4"]),
         helper.make_node("Add", ["h1", "m4"], ["h2"]),
         helper.make_node("ReduceMean", ["h2"], ["pooled"], axes=[1], keepdims=0),
         helper.make_node("MatMul", ["pooled", "head.w"], ["z0"]),
         helper.make_node("Add", ["z0", "head.b"], ["logits"])]
inits += [const("ax0", np.array([0], np.int64))]
save(nodes, "attn_block", ["N", T, 28], inits, 17)
print("wrote conv_bn.onnx, attn_block.onnx")
