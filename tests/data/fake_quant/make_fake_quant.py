#!/usr/bin/python3
"""Writes tests/data/fake_quant/: fake quantization as torch's QAT export
writes it, and torch's straight-through gradients as the reference.

  fq.onnx   x [6,5] -> QuantizeLinear (per tensor, uint8, scale 0.05,
            zero point 20) -> DequantizeLinear -> MatMul with W, where
            W [5,4] -> QuantizeLinear (per channel along axis 1, int8,
            scales s [4], zero points 0) -> DequantizeLinear
            -> y [6,4]; y is summed with the seed dy.npy
  x.npy, dy.npy        the input (some of it clipped either way) and seed
  dx.npy, dW.npy       torch's gradients of sum(y * dy) (fake_quantize's
                       straight-through rule: zero where it clips)

Run with Debian's /usr/bin/python3 (torch 1.13, onnx 1.12)."""
import os
import numpy as np
import onnx
import torch
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(17)
x = (rng.standard_normal((6, 5)) * 6).astype(np.float32)        # beyond [-1, 11.75] in places
W = (rng.standard_normal((5, 4)) * 0.8).astype(np.float32)
s = np.array([0.004, 0.01, 0.02, 0.005], np.float32)           # small scales clip the larger weights
dy = rng.standard_normal((6, 4)).astype(np.float32)

xt = torch.tensor(x, requires_grad=True)
Wt = torch.tensor(W, requires_grad=True)
xq = torch.fake_quantize_per_tensor_affine(xt, 0.05, 20, 0, 255)
Wq = torch.fake_quantize_per_channel_affine(Wt, torch.tensor(s), torch.zeros(4, dtype=torch.int32), 1, -128, 127)
(xq @ Wq * torch.tensor(dy)).sum().backward()

g = h.make_graph(
    [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
     h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
     h.make_node("QuantizeLinear", ["W", "s", "z"], ["Wq"], axis=1),
     h.make_node("DequantizeLinear", ["Wq", "s", "z"], ["Wd"], axis=1),
     h.make_node("MatMul", ["xd", "Wd"], ["y"])],
    "fq", [h.make_tensor_value_info("x", TP.FLOAT, [6, 5])], [h.make_tensor_value_info("y", TP.FLOAT, [6, 4])],
    initializer=[nh.from_array(np.array(0.05, np.float32), "xs"), nh.from_array(np.array(20, np.uint8), "xz"),
                 nh.from_array(W, "W"), nh.from_array(s, "s"), nh.from_array(np.zeros(4, np.int8), "z")])
m = h.make_model(g, producer_name="pytorch", opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "fq.onnx"))
for name, a in (("x", x), ("dy", dy), ("dx", xt.grad.numpy()), ("dW", Wt.grad.numpy())):
    np.save(os.path.join(HERE, name + ".npy"), a)
print("clipped: x", int((xt.grad.numpy() == 0).sum()), "of 30; W", int((Wt.grad.numpy() == 0).sum()), "of 20")
