"""Writes the FlexAttention models the AD is checked on (test_ad_flex_attention):
Q = x + Qp with K, V and the graphs' own tensors as initializers, so that the
finite-difference check reaches every parameter through score_mod and prob_mod.

  flex_mods.onnx   GQA (4 query heads over 2 key heads), a score_mod that
                   scales the scores, adds a learned bias captured from the
                   outer graph and soft-caps them (cap * tanh(s / cap)), and a
                   prob_mod that reweights the keys; scale given.
  flex_plain.onnx  no graphs, equal head counts, the default scale 1/sqrt(E),
                   float64 softmax precision over float32 inputs.

Run with onnx >= 1.19 (FlexAttention is in ai.onnx.preview opset 1):
  python tests/data/make_flex_models.py tests/data
"""
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1] if len(sys.argv) > 1 else "."
rng = np.random.default_rng(20261127)
B, HQ, HKV, L, S, E, EV = 2, 4, 2, 3, 5, 4, 3


def init(name, shape, lo=-1.0, hi=1.0):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)


def model(name, nodes, inits, hq, hkv):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, hq, L, E])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, hq, L, EV])
    g = helper.make_graph(nodes, name, [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("ai.onnx.preview", 1)])
    save(m, f"{out}/{name}.onnx")


# flex_mods: score_mod reads alpha, cap (its own initializers) and relbias (outer)
s_in = helper.make_tensor_value_info("s", TensorProto.FLOAT, None)
s_out = helper.make_tensor_value_info("s_mod", TensorProto.FLOAT, None)
score_mod = helper.make_graph(
    [helper.make_node("Mul", ["s", "alpha"], ["s_a"]),
     helper.make_node("Add", ["s_a", "relbias"], ["s_b"]),
     helper.make_node("Div", ["s_b", "cap"], ["s_c"]),
     helper.make_node("Tanh", ["s_c"], ["s_t"]),
     helper.make_node("Mul", ["s_t", "cap"], ["s_mod"])],
    "score_mod", [s_in], [s_out],
    [numpy_helper.from_array(np.array(0.8, np.float32), "alpha"),
     numpy_helper.from_array(np.array(2.5, np.float32), "cap")])
p_in = helper.make_tensor_value_info("p", TensorProto.FLOAT, None)
p_out = helper.make_tensor_value_info("p_mod", TensorProto.FLOAT, None)
prob_mod = helper.make_graph([helper.make_node("Mul", ["p", "kw"], ["p_mod"])], "prob_mod", [p_in], [p_out],
                             [init("kw", [S], 0.5, 1.5)])
model("flex_mods",
      [helper.make_node("Add", ["x", "Qp"], ["q"]),
       helper.make_node("FlexAttention", ["q", "Kp", "Vp"], ["y"], domain="ai.onnx.preview", scale=0.45,
                        score_mod=score_mod, prob_mod=prob_mod)],
      [init("Qp", [B, HQ, L, E]), init("Kp", [B, HKV, S, E]), init("Vp", [B, HKV, S, EV]),
       init("relbias", [L, S], -0.5, 0.5)], HQ, HKV)

model("flex_plain",
      [helper.make_node("Add", ["x", "Qp"], ["q"]),
       helper.make_node("FlexAttention", ["q", "Kp", "Vp"], ["y"], domain="ai.onnx.preview",
                        softmax_precision=TensorProto.DOUBLE)],
      [init("Qp", [B, HKV, L, E]), init("Kp", [B, HKV, S, E]), init("Vp", [B, HKV, S, EV])], HKV, HKV)
