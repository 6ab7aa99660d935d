#!/usr/bin/python3
"""Models for the named-input feed tests (tests/unit/test_train_arrays.c),
written with onnx.helper; weights drawn with a fixed seed.

  feed_tok.onnx     input_ids int64 [batch,6], attention_mask bool [batch,6]
                    -> Gather emb 12x8, masked sum over the tokens -> MatMul 8x3 + b
                    -> logits [batch,3]
  feed_tagger.onnx  input_ids int64 [batch,seq] -> Gather emb 12x8 -> MatMul 8x4 + b
                    -> logits [batch,seq,4] (one score row per token)
  feed_tm_rnn.onnx  x float [T,N,3] (time-major, as PyTorch's RNN) -> RNN hidden 5
                    -> last state [N,5] -> MatMul 5x2 + b -> logits [N,2]
  feed_tm_tag.onnx  x float [d0,d1,3] -> the same RNN -> every state [d0,d1,5]
                    -> MatMul 5x2 + b -> logits [d0,d1,2]: nothing tells the batch axis
  feed_tree.onnx    no batch axis: words int64 [n], children int64 [n,2]
                    -> h = emb[words], z = tanh(h + h[children[:,0]] + h[children[:,1]])
                    -> MatMul 8x3 + b -> logits [n,3] (one score row per node)
  feed_f16.onnx     x float16 [N,4] -> Cast float -> MatMul 4x2 + b -> logits [N,2]
  feed_seg.onnx     x float [N,2,4,5] -> Conv 1x1 to 3 channels -> logits [N,3,4,5] (a per-pixel
                    class map, classes on axis 1 as PyTorch's losses read them)
  feed_seg_sq.onnx  x float [N,2,4,4] -> Conv 1x1 to 4 channels -> logits [N,4,4,4] (labels [N,4,4]
                    fit classes on axis 1 and on the last axis alike)
  feed_steps.onnx   x float [N,4], steps int64 [] (a step count every sample shares)
                    -> h = x, then steps times h = tanh(h W) (a Loop) -> logits [N,4]

  /usr/bin/python3 tests/data/make_feed_models.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(12)


def uni(shape, fan_in):
    b = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-b, b, shape).astype(np.float32)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_feed_models")
    m.ir_version = 7
    save(m, os.path.join(HERE, name + ".onnx"))


def tok():
    emb, W, b = uni((12, 8), 8), uni((8, 3), 8), uni((3,), 8)
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["e"]),
        helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "ax2"], ["m3"]),
        helper.make_node("Mul", ["e", "m3"], ["em"]),
        helper.make_node("ReduceSum", ["em", "ax1"], ["s"], keepdims=0),
        helper.make_node("MatMul", ["s", "W"], ["z"]),
        helper.make_node("Add", ["z", "b"], ["logits"]),
    ]
    model(nodes,
          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", 6]),
           helper.make_tensor_value_info("attention_mask", TensorProto.BOOL, ["batch", 6])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])],
          [init("emb", emb), init("W", W), init("b", b), init("ax1", np.array([1], np.int64)),
           init("ax2", np.array([2], np.int64))], "feed_tok")


def tagger():
    emb, W, b = uni((12, 8), 8), uni((8, 4), 8), uni((4,), 8)
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["e"]),
        helper.make_node("MatMul", ["e", "W"], ["z"]),
        helper.make_node("Add", ["z", "b"], ["logits"]),
    ]
    model(nodes, [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 4])],
          [init("emb", emb), init("W", W), init("b", b)], "feed_tagger")


def rnn(name, dims, per_step):
    Wx, Rh, B = uni((1, 5, 3), 5), uni((1, 5, 5), 5), uni((1, 10), 5)
    W, b = uni((5, 2), 5), uni((2,), 5)
    nodes = [helper.make_node("RNN", ["x", "Wx", "Rh", "B"], ["Y", "Y_h"], hidden_size=5)]
    if per_step:
        nodes += [helper.make_node("Squeeze", ["Y", "ax1"], ["h"])]
    else:
        nodes += [helper.make_node("Squeeze", ["Y_h", "ax0"], ["h"])]
    nodes += [helper.make_node("MatMul", ["h", "W"], ["z"]), helper.make_node("Add", ["z", "b"], ["logits"])]
    out = [dims[0], dims[1], 2] if per_step else [dims[1], 2]
    model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dims[0], dims[1], 3])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out)],
          [init("Wx", Wx), init("Rh", Rh), init("B", B), init("W", W), init("b", b),
           init("ax0", np.array([0], np.int64)), init("ax1", np.array([1], np.int64))], name)


def tree():
    emb, W, b = uni((12, 8), 8), uni((8, 3), 8), uni((3,), 8)
    nodes = [
        helper.make_node("Gather", ["emb", "words"], ["h"]),
        helper.make_node("Gather", ["h", "children"], ["hc"]),
        helper.make_node("ReduceSum", ["hc", "ax1"], ["cs"], keepdims=0),
        helper.make_node("Add", ["h", "cs"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["a"]),
        helper.make_node("MatMul", ["a", "W"], ["z"]),
        helper.make_node("Add", ["z", "b"], ["logits"]),
    ]
    model(nodes,
          [helper.make_tensor_value_info("words", TensorProto.INT64, ["n"]),
           helper.make_tensor_value_info("children", TensorProto.INT64, ["n", 2])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", 3])],
          [init("emb", emb), init("W", W), init("b", b), init("ax1", np.array([1], np.int64))], "feed_tree")


def f16():
    W, b = uni((4, 2), 4), uni((2,), 4)
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["xf", "W"], ["z"]), helper.make_node("Add", ["z", "b"], ["logits"])]
    model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", 4])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
          [init("W", W), init("b", b)], "feed_f16")


def steps():
    W = uni((4, 4), 4) * 2
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("Tanh", ["hw"], ["h_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])], "steps_body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["N", 4])])
    nodes = [helper.make_node("Loop", ["steps", "true", "x"], ["logits"], body=body)]
    model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                  helper.make_tensor_value_info("steps", TensorProto.INT64, [])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4])],
          [init("W", W), init("true", np.array(True))], "feed_steps")


tok()
tagger()
rnn("feed_tm_rnn", ["T", "N"], False)
rnn("feed_tm_tag", ["d0", "d1"], True)
tree()
f16()
steps()


def seg(name, w, c):
    W, b = uni((c, 2, 1, 1), 2), uni((c,), 2)
    nodes = [helper.make_node("Conv", ["x", "W", "b"], ["logits"])]
    model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 4, w])],
          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", c, 4, w])], [init("W", W), init("b", b)],
          name)


seg("feed_seg", 5, 3)
seg("feed_seg_sq", 4, 4)
