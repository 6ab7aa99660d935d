#!/usr/bin/python3
"""Writes tests/data/const_model.onnx: a Linear, then HF's tanh-free GELU
core (h + 0.044715 h^3) * 0.5, times a learned scalar, with the constants
stored as torch's exporters store them: dynamo's scalar initializers val_1
(3.0, Pow's exponent) and val_2 (0.044715), a TorchScript folded scalar
onnx::Mul_9 (0.5), beside real parameters fc.weight, fc.bias (zeros) and a
scalar weight `scale` (1.0). Training keeps the three constants fixed.
Run with Debian's /usr/bin/python3 (onnx)."""
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "const_model.onnx")
rng = np.random.default_rng(9)
f32 = lambda v: np.array(v, np.float32)  # noqa: E731
g = h.make_graph(
    [h.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], transB=1), h.make_node("Pow", ["h", "val_1"], ["p"]),
     h.make_node("Mul", ["p", "val_2"], ["q"]), h.make_node("Add", ["h", "q"], ["r"]),
     h.make_node("Mul", ["r", "onnx::Mul_9"], ["s"]), h.make_node("Mul", ["s", "scale"], ["logits"])],
    "const_model", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
    [h.make_tensor_value_info("logits", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "fc.weight"),
                 nh.from_array(np.zeros(3, np.float32), "fc.bias"), nh.from_array(f32(3.0), "val_1"),
                 nh.from_array(f32(0.044715), "val_2"), nh.from_array(f32(0.5), "onnx::Mul_9"),
                 nh.from_array(f32(1.0), "scale")])
m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, OUT)

# merged_scales.onnx: two LayerNormalization nodes read one scale (ones)
# and one bias (zeros), as torch's dynamo exporter writes an untrained
# model whose equal initializers it merged
OUT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "merged_scales.onnx")
g2 = h.make_graph(
    [h.make_node("LayerNormalization", ["x", "ln.weight", "ln.bias"], ["a"], axis=-1),
     h.make_node("Gemm", ["a", "fc1.weight"], ["b"], transB=1),
     h.make_node("LayerNormalization", ["b", "ln.weight", "ln.bias"], ["c"], axis=-1),
     h.make_node("Gemm", ["c", "fc2.weight"], ["logits"], transB=1)],
    "merged_scales", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
    [h.make_tensor_value_info("logits", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array(np.ones(4, np.float32), "ln.weight"), nh.from_array(np.zeros(4, np.float32), "ln.bias"),
                 nh.from_array((rng.standard_normal((4, 4)) * 0.5).astype(np.float32), "fc1.weight"),
                 nh.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "fc2.weight")])
m2 = h.make_model(g2, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m2)
onnx.save(m2, OUT2)

# inf_mask.onnx: a padding mask of -inf for the last class added to the
# logits, stored as an initializer as TorchScript writes a buffer; training
# keeps it fixed (a step with weight decay would make it nan)
OUT3 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inf_mask.onnx")
g3 = h.make_graph(
    [h.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["z"], transB=1),
     h.make_node("Add", ["z", "mask"], ["logits"])],
    "inf_mask", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
    [h.make_tensor_value_info("logits", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array((rng.standard_normal((3, 4)) * 0.5).astype(np.float32), "fc.weight"),
                 nh.from_array((rng.standard_normal(3) * 0.1).astype(np.float32), "fc.bias"),
                 nh.from_array(f32([0.0, 0.0, -np.inf]), "mask")])
m3 = h.make_model(g3, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m3)
onnx.save(m3, OUT3)

# mlp_f64.onnx and mlp_f32.onnx: one two-layer classifier of 4 features and
# 3 classes, in float64 and in float32 with the same (float32-exact) weights:
# CSV, idx and image data feed the float64 one widened
for name, tp, dt in (("mlp_f64.onnx", TP.DOUBLE, np.float64), ("mlp_f32.onnx", TP.FLOAT, np.float32)):
    rw = np.random.default_rng(31)
    w1 = (rw.standard_normal((8, 4)) * 0.5).astype(np.float32).astype(dt)
    w2 = (rw.standard_normal((3, 8)) * 0.5).astype(np.float32).astype(dt)
    gm = h.make_graph(
        [h.make_node("Gemm", ["x", "W1", "b1"], ["h1"], transB=1), h.make_node("Relu", ["h1"], ["r1"]),
         h.make_node("Gemm", ["r1", "W2", "b2"], ["logits"], transB=1)],
        "mlp", [h.make_tensor_value_info("x", tp, ["N", 4])], [h.make_tensor_value_info("logits", tp, ["N", 3])],
        initializer=[nh.from_array(w1, "W1"), nh.from_array(np.full(8, 0.1, dt), "b1"),
                     nh.from_array(w2, "W2"), nh.from_array(np.zeros(3, dt), "b2")])
    mm = h.make_model(gm, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(mm)
    onnx.save(mm, os.path.join(os.path.dirname(os.path.abspath(__file__)), name))

# shared_folded.onnx: a weight's folded transpose that two layers read, as
# torch's TorchScript exporter writes it once two folded copies come out
# equal: onnx::MatMul_937 = Identity(onnx::MatMul_826). It is one tensor:
# the gradient sums both reads
OUT4 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shared_folded.onnx")
g4 = h.make_graph(
    [h.make_node("Identity", ["onnx::MatMul_826"], ["onnx::MatMul_937"], name="Identity_12"),
     h.make_node("MatMul", ["x", "onnx::MatMul_826"], ["a"]), h.make_node("MatMul", ["a", "onnx::MatMul_937"], ["y"])],
    "shared_folded", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array((np.random.default_rng(37).standard_normal((3, 3)) * 0.5).astype(np.float32),
                               "onnx::MatMul_826")])
m4 = h.make_model(g4, producer_name="pytorch", producer_version="2.15.0", opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m4)
onnx.save(m4, OUT4)

# shared_zero.onnx: the same layout with zeros (two freshly zeroed weights,
# as LoRA's B matrices, whose equal folded copies the exporter merged): two
# parameters, each trained on its own
OUT5 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shared_zero.onnx")
g5 = h.make_graph(
    [h.make_node("Identity", ["onnx::MatMul_826"], ["onnx::MatMul_937"], name="Identity_12"),
     h.make_node("MatMul", ["x", "onnx::MatMul_826"], ["a"]), h.make_node("MatMul", ["a", "onnx::MatMul_937"], ["y"])],
    "shared_zero", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array(np.zeros((3, 3), np.float32), "onnx::MatMul_826")])
m5 = h.make_model(g5, producer_name="pytorch", producer_version="2.15.0", opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m5)
onnx.save(m5, OUT5)

# deepcopy_layers.onnx: two layers deep-copied from one (nn.TransformerEncoder
# makes its layers so), as TorchScript writes them: the second layer's
# folded transpose and its bias are Identities of the first's; the bias is
# the second module's own tensor (2.bias), so the module's tensors were
# merged by value, and its folded weight is a chance copy too: two
# parameters each, trained apart
OUT6 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcopy_layers.onnx")
g6 = h.make_graph(
    [h.make_node("Identity", ["onnx::MatMul_18"], ["onnx::MatMul_19"], name="Identity_0"),
     h.make_node("Identity", ["0.bias"], ["2.bias"], name="Identity_1"),
     h.make_node("MatMul", ["x", "onnx::MatMul_18"], ["a"], name="/0/MatMul"),
     h.make_node("Add", ["a", "0.bias"], ["b"], name="/0/Add"),
     h.make_node("MatMul", ["b", "onnx::MatMul_19"], ["c"], name="/2/MatMul"),
     h.make_node("Add", ["c", "2.bias"], ["y"], name="/2/Add")],
    "deepcopy_layers", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["N", 3])],
    initializer=[nh.from_array((np.random.default_rng(38).standard_normal((3, 3)) * 0.5).astype(np.float32),
                               "onnx::MatMul_18"),
                 nh.from_array(np.array([0.1, -0.2, 0.3], np.float32), "0.bias")])
m6 = h.make_model(g6, producer_name="pytorch", producer_version="2.15.0", opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m6)
onnx.save(m6, OUT6)
