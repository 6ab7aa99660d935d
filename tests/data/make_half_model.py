#!/usr/bin/python3
"""Writes tests/data/half_mlp.onnx: logits = Cast(x @ W, float32) + b with
x and W float16, b float32. lantern trains float32 and float64 weights
only: training it names W; with W frozen, b trains.
Run with Debian's /usr/bin/python3 (onnx)."""
import os
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "half_mlp.onnx")
rng = np.random.default_rng(3)
g = h.make_graph([h.make_node("MatMul", ["x", "W"], ["xw"]), h.make_node("Cast", ["xw"], ["xw32"], to=TP.FLOAT),
                  h.make_node("Add", ["xw32", "b"], ["logits"])], "half_mlp",
                 [h.make_tensor_value_info("x", TP.FLOAT16, ["N", 4])],
                 [h.make_tensor_value_info("logits", TP.FLOAT, ["N", 3])],
                 initializer=[nh.from_array(rng.standard_normal((4, 3)).astype(np.float16), "W"),
                              nh.from_array(rng.standard_normal(3).astype(np.float32), "b")])
m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, OUT)

# autocast_mlp.onnx: float32 weights and input, the product in float16 and
# float16 logits, as torch.autocast exports write it: the float32 weights
# train, the float16 output is scored and compared with targets
OUT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autocast_mlp.onnx")
g2 = h.make_graph([h.make_node("Cast", ["x"], ["xh"], to=TP.FLOAT16),
                   h.make_node("Cast", ["W"], ["Wh"], to=TP.FLOAT16),
                   h.make_node("Cast", ["b"], ["bh"], to=TP.FLOAT16),
                   h.make_node("MatMul", ["xh", "Wh"], ["xw"]), h.make_node("Add", ["xw", "bh"], ["logits"])],
                  "autocast_mlp", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
                  [h.make_tensor_value_info("logits", TP.FLOAT16, ["N", 3])],
                  initializer=[nh.from_array((rng.standard_normal((4, 3)) * 0.5).astype(np.float32), "W"),
                               nh.from_array((rng.standard_normal(3) * 0.1).astype(np.float32), "b")])
m2 = h.make_model(g2, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m2)
onnx.save(m2, OUT2)
