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

Block quantization (opset 21, block_size: entry j of the scale, of x's rank,
covers indices [4j, 4j + 4) along the axis; D = 10 is not a multiple of 4):

  fq_block.onnx        x [3,8] -> MatMul with A' + B' + C' -> y [3,10], where
                       A' = DequantizeLinear(QuantizeLinear(A)) (int8, scale sa
                       [8,3] and zero points za, axis 1), B' = DequantizeLinear
                       of the int4 initializer Bq (scale sb, zero points zb:
                       no QuantizeLinear, so sb takes the exact gradient), C'
                       = DequantizeLinear(QuantizeLinear(C, scq), scd) (int8 by
                       output_dtype, no zero points; the DequantizeLinear
                       scales by a scale of its own, scd)
  fq_block_const.onnx  x [3,8] -> MatMul with W' -> y, W' fake-quantized to
                       uint4 (axis -1) by a Constant scale and zero point
  fq_f8.onnx           x [2,4] -> MatMul with W' -> y, W' fake-quantized to
                       float8e4m3fn (by output_dtype): no straight-through gradient
  fq_between.onnx      x [2,4] -> MatMul with W', W' = DequantizeLinear of the
                       Transpose of QuantizeLinear(W): the straight-through
                       gradient is refused, not silently zero
  bx.npy, bdy.npy      the input and seed of both block models
  bdA, bdC, bdW.npy    the weights' gradients: torch's fake_quantize_per_-
                       channel_affine on the blocks laid out as channels (the
                       scale's entries flattened, each block a row of 4, the
                       last padded), times scd / scq for C
  bdsb, bdscd.npy      the DequantizeLinear scales' gradients, in float64
                       (saved as float32): sum over each block of dy' (q -
                       zero point), dy' = x^T dy, q clipped to the type

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


# ---- block quantization (opset 21) ----
# onnx 1.12 knows neither int4/uint4 nor float8 nor opset 21's checker: the
# types go in by number and the models skip onnx.checker.
UINT4, INT4, F8E4M3FN, INT8 = 21, 22, 17, TP.INT8
BS = 4
rng = np.random.default_rng(29)


def nibbles(dt, v):
    """a 4-bit TensorProto's raw_data: two elements a byte, the first low"""
    u = (np.asarray(v).astype(np.int64).ravel() & 15).tolist() + [0]
    return bytes(u[i] | u[i + 1] << 4 for i in range(0, len(u) - 1, 2))


def tensor4(name, dt, v):
    t = TP(name=name, data_type=dt, dims=list(np.shape(v)))
    t.raw_data = nibbles(dt, v)
    return t


def along(a, axis):
    """a scale or zero point repeated over its blocks along axis, cut to 10"""
    return np.take(np.repeat(a, BS, axis=axis), np.arange(10), axis=axis)


def ste(W, scale, zp, lo, hi, G):
    """torch's straight-through gradient of W fake-quantized in blocks of BS
    along axis 1: each block a channel (row) of a [8 * 3, 4] view, the last
    block of each row padded; also the quantized values (numpy's division)"""
    Wt = torch.tensor(W, dtype=torch.float32, requires_grad=True)
    rows = torch.nn.functional.pad(Wt, (0, 3 * BS - 10)).reshape(-1, BS)
    fq = torch.fake_quantize_per_channel_affine(rows, torch.tensor(scale.ravel()),
                                                torch.tensor(zp.ravel(), dtype=torch.int32), 0, lo, hi)
    (fq.reshape(8, 3 * BS)[:, :10] * torch.tensor(G, dtype=torch.float32)).sum().backward()
    q = np.round(W / along(scale, 1)) + along(zp, 1)
    inside = (q >= lo) & (q <= hi)
    assert ((Wt.grad.numpy() != 0) == inside).all()            # torch's mask is the division's
    assert 0 < inside.sum() < inside.size, inside.sum()      # some clip, some do not
    return Wt.grad.numpy(), np.clip(q, lo, hi)


def block_sums(v):
    """v [8,10] summed over each block along axis 1: [8,3]"""
    return np.pad(v, ((0, 0), (0, 3 * BS - 10))).reshape(8, 3, BS).sum(2)


def save21(g, name, opset=21):
    m = h.make_model(g, producer_name="pytorch", opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 9
    onnx.save(m, os.path.join(HERE, name))


bx = rng.standard_normal((3, 8)).astype(np.float32)
bdy = rng.standard_normal((3, 10)).astype(np.float32)
G = bx.astype(np.float64).T @ bdy.astype(np.float64)        # the gradient reaching each dequantized weight
A = (rng.standard_normal((8, 10)) * 0.8).astype(np.float32)
sa = rng.uniform(0.003, 0.012, (8, 3)).astype(np.float32)   # clips the larger weights
za = rng.integers(-20, 21, (8, 3)).astype(np.int8)
Bq = rng.integers(-8, 8, (8, 10))
sb = rng.uniform(0.01, 0.1, (8, 3)).astype(np.float32)
zb = rng.integers(-3, 4, (8, 3))
C = (rng.standard_normal((8, 10)) * 0.8).astype(np.float32)
scq = rng.uniform(0.003, 0.012, (8, 3)).astype(np.float32)
scd = (scq * rng.uniform(0.5, 2, (8, 3))).astype(np.float32)
dA, _ = ste(A, sa, za, -128, 127, G)
dC, qc = ste(C, scq, np.zeros((8, 3), np.int32), -128, 127, G)
dC = (dC * along(scd, 1) / along(scq, 1)).astype(np.float32)
dsb = block_sums(G * (Bq - along(zb, 1)))
dscd = block_sums(G * qc)
blk = dict(axis=1, block_size=BS)
g = h.make_graph(
    [h.make_node("QuantizeLinear", ["A", "sa", "za"], ["Aq"], **blk),
     h.make_node("DequantizeLinear", ["Aq", "sa", "za"], ["Ad"], **blk),
     h.make_node("DequantizeLinear", ["Bq", "sb", "zb"], ["Bd"], **blk),
     h.make_node("QuantizeLinear", ["C", "scq"], ["Cq"], output_dtype=INT8, **blk),
     h.make_node("DequantizeLinear", ["Cq", "scd"], ["Cd"], **blk),
     h.make_node("Sum", ["Ad", "Bd", "Cd"], ["S"]),
     h.make_node("MatMul", ["x", "S"], ["y"])],
    "fq_block", [h.make_tensor_value_info("x", TP.FLOAT, [3, 8])], [h.make_tensor_value_info("y", TP.FLOAT, [3, 10])],
    initializer=[nh.from_array(A, "A"), nh.from_array(sa, "sa"), nh.from_array(za, "za"), tensor4("Bq", INT4, Bq),
                 nh.from_array(sb, "sb"), tensor4("zb", INT4, zb), nh.from_array(C, "C"), nh.from_array(scq, "scq"),
                 nh.from_array(scd, "scd")])
save21(g, "fq_block.onnx")

W2 = (rng.standard_normal((8, 10)) * 0.5).astype(np.float32)
s2 = rng.uniform(0.04, 0.1, (8, 3)).astype(np.float32)     # uint4: 16 steps, many clip
z2 = rng.integers(4, 12, (8, 3))
dW2, _ = ste(W2, s2, z2, 0, 15, G)
blk = dict(axis=-1, block_size=BS)
g = h.make_graph(
    [h.make_node("Constant", [], ["s"], value=nh.from_array(s2, "s")),
     h.make_node("Constant", [], ["z"], value=tensor4("z", UINT4, z2)),
     h.make_node("QuantizeLinear", ["W", "s", "z"], ["Wq"], **blk),
     h.make_node("DequantizeLinear", ["Wq", "s", "z"], ["Wd"], **blk),
     h.make_node("MatMul", ["x", "Wd"], ["y"])],
    "fq_block_const", [h.make_tensor_value_info("x", TP.FLOAT, [3, 8])],
    [h.make_tensor_value_info("y", TP.FLOAT, [3, 10])], initializer=[nh.from_array(W2, "W")])
save21(g, "fq_block_const.onnx")

g = h.make_graph(
    [h.make_node("Constant", [], ["s"], value=nh.from_array(np.array(0.01, np.float32), "s")),
     h.make_node("QuantizeLinear", ["W", "s"], ["Wq"], output_dtype=F8E4M3FN),
     h.make_node("DequantizeLinear", ["Wq", "s"], ["Wd"]),
     h.make_node("MatMul", ["x", "Wd"], ["y"])],
    "fq_f8", [h.make_tensor_value_info("x", TP.FLOAT, [2, 4])], [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
    initializer=[nh.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W")])
save21(g, "fq_f8.onnx")

g = h.make_graph(
    [h.make_node("QuantizeLinear", ["W", "s"], ["Wq"]),
     h.make_node("Transpose", ["Wq"], ["Wt"], perm=[1, 0]),
     h.make_node("DequantizeLinear", ["Wt", "s"], ["Wd"]),
     h.make_node("MatMul", ["x", "Wd"], ["y"])],
    "fq_between", [h.make_tensor_value_info("x", TP.FLOAT, [2, 4])], [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
    initializer=[nh.from_array(rng.standard_normal((3, 4)).astype(np.float32), "W"),
                 nh.from_array(np.array(0.01, np.float32), "s")])
save21(g, "fq_between.onnx")

for name, a in (("bx", bx), ("bdy", bdy), ("bdA", dA), ("bdC", dC), ("bdW", dW2), ("bdsb", dsb.astype(np.float32)),
                ("bdscd", dscd.astype(np.float32))):
    np.save(os.path.join(HERE, name + ".npy"), a)
print("block: A clipped", int((dA == 0).sum()), "of 80; C", int((dC == 0).sum()), "of 80; W (uint4)",
      int((dW2 == 0).sum()), "of 80")
