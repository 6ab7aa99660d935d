#!/usr/bin/python3
"""Models for the image-folder tests (tests/unit/test_data_images.c), written
with onnx.helper; weights drawn with a fixed seed.

  img_rgb.onnx   x [N,3,8,8] -> Conv 3->4 3x3 pad 1 -> Relu -> GlobalAveragePool
                 -> Flatten -> Gemm 4x3 -> logits [N,3]
  img_gray.onnx  x [N,1,8,8] -> Flatten -> Gemm 64x2 -> logits [N,2]
  img_rgb_nhwc.onnx  x [N,8,8,3] (channels last, as Keras models take images)
                 -> Transpose to [N,3,8,8] -> img_rgb's nodes and weights

  /usr/bin/python3 tests/data/make_image_models.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(5)


def uni(shape, fan_in):
    b = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-b, b, shape).astype(np.float32)


def write(nodes, name, x, out, inits):
    g = helper.make_graph(nodes, name, [x], [out], [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern tests")
    m.ir_version = 7
    save(m, os.path.join(HERE, name + ".onnx"))


RGB_NODES = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "W2", "b2"], ["logits"])]
RGB_INITS = [("W", uni((4, 3, 3, 3), 27)), ("B", uni((4,), 27)), ("W2", uni((4, 3), 4)), ("b2", uni((3,), 4))]
write(RGB_NODES, "img_rgb",
      helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8]),
      helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3]), RGB_INITS)

write([helper.make_node("Flatten", ["x"], ["f"]),
       helper.make_node("Gemm", ["f", "W", "b"], ["logits"])],
      "img_gray",
      helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8]),
      helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2]),
      [("W", uni((64, 2), 64)), ("b", uni((2,), 64))])

write([helper.make_node("Transpose", ["x_nhwc"], ["x"], perm=[0, 3, 1, 2])] + RGB_NODES, "img_rgb_nhwc",
      helper.make_tensor_value_info("x_nhwc", TensorProto.FLOAT, ["N", 8, 8, 3]),
      helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3]), RGB_INITS)
