"""Reference values for lantern's narrow element types (tests/unit/test_narrow_types.c),
from onnx 1.23.2's numpy helpers and ml_dtypes, which its backend suite uses:

  decode_T.npy     float32[2^bits]: the value of every code of float type T
  in_f32.npy       float32[N]: edges (zeros, NaN, infinities, the largest values and just past them,
                   ties between neighbours, subnormals and half the smallest) and seeded random values
  sat_T.npy        uint8[N]: Cast(in, T) with saturate=1   (numpy_helper.saturate_cast)
  nosat_T.npy      uint8[N]: Cast(in, T) with saturate=0   (ml_dtypes astype)
  int_T.npy        uint8[M]: Cast(in_int.npy, T) for int4/uint4/int2/uint2, sign-extended bytes
  e8m0_in.npy      float32[K] positive normal values; e8m0_{up,down,nearest}.npy their codes
  pack4.pb, pack4_i32.pb, pack2.pb, pack2_i32.pb: TensorProtos of 7 int4 / 7 uint2 values
                   (raw_data and int32_data), pack4.npy / pack2.npy the values

Run with /tmp/venv-onnx/bin/python (onnx==1.23.2)."""
import os
import ml_dtypes as md
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
save = lambda name, a: np.save(os.path.join(here, name), a)
floats = {"e4m3fn": md.float8_e4m3fn, "e4m3fnuz": md.float8_e4m3fnuz, "e5m2": md.float8_e5m2,
          "e5m2fnuz": md.float8_e5m2fnuz, "e2m1": md.float4_e2m1fn}
rng = np.random.default_rng(1127)

vals = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30]
for name, t in floats.items():
    bits = 4 if name == "e2m1" else 8
    codes = np.arange(2 ** bits, dtype=np.uint8)
    dec = codes.view(t).astype(np.float32) if bits == 8 else np.array(
        [np.array(c, dtype=np.uint8).view(t).astype(np.float32) for c in codes], dtype=np.float32)
    save(f"decode_{name}.npy", dec)
    fin = np.unique(dec[np.isfinite(dec)])
    fin = fin[fin >= 0]
    mids = (fin[:-1].astype(np.float64) + fin[1:]) / 2  # exact ties
    vals += list(fin) + list(mids) + list(-mids) + [fin[-1] * 1.01, fin[-1] * 1.06, fin[-1] * 1.2, fin[1] / 2,
                                                     fin[1] / 2 * 1.01, fin[1] * 0.49, -fin[1] * 0.51]
vals += list(rng.standard_normal(200) * 50) + list(rng.standard_normal(100) * 1e-3)
x = np.array(vals, dtype=np.float32)
save("in_f32.npy", x)
for name, t in floats.items():
    sat = numpy_helper.saturate_cast(x, t)
    nosat = x.astype(t)
    if name == "e2m1":  # ml_dtypes keeps a 4-bit code in a byte's low bits
        save(f"sat_{name}.npy", sat.view(np.uint8) & 0xF)
        save(f"nosat_{name}.npy", nosat.view(np.uint8) & 0xF)
    else:
        save(f"sat_{name}.npy", sat.view(np.uint8))
        save(f"nosat_{name}.npy", nosat.view(np.uint8))

xi = np.concatenate([np.arange(-20, 21), rng.standard_normal(40) * 30, [0.5, -0.5, 7.99, -8.99, 1e10, -1e10]])
xi = xi.astype(np.float32)
save("in_int.npy", xi)
for name, t in {"int4": md.int4, "uint4": md.uint4, "int2": md.int2, "uint2": md.uint2}.items():
    save(f"int_{name}.npy", xi.astype(t).astype(np.int8).view(np.uint8))

e = np.concatenate([2.0 ** np.arange(-126, 128, 7), rng.uniform(1, 2, 60) * 2.0 ** rng.integers(-120, 120, 60),
                    [1.5, 3.0, 0.75, 1.25, 1.75, 2.0 ** 127 * 1.5, 2.0 ** -126 * 1.5, 6.0, 12.0]]).astype(np.float32)
save("e8m0_in.npy", e)
for rm in ("up", "down", "nearest"):
    save(f"e8m0_{rm}.npy", numpy_helper.to_float8e8m0(e, True, rm).view(np.uint8))

i4 = np.array([-8, 7, -1, 0, 3, -5, 6], dtype=np.int8)
u2 = np.array([3, 0, 1, 2, 2, 3, 1], dtype=np.uint8)
save("pack4.npy", i4)
save("pack2.npy", u2)
for fname, dt, v, raw in (("pack4.pb", TensorProto.INT4, i4, True), ("pack4_i32.pb", TensorProto.INT4, i4, False),
                          ("pack2.pb", TensorProto.UINT2, u2, True), ("pack2_i32.pb", TensorProto.UINT2, u2, False)):
    tp = helper.make_tensor("t", dt, [7], v.astype(md.int4 if dt == TensorProto.INT4 else md.uint2), raw=raw)
    assert np.array_equal(numpy_helper.to_array(tp).astype(np.int8), v.astype(np.int8))
    with open(os.path.join(here, fname), "wb") as f:
        f.write(tp.SerializeToString())

# a model whose initializers are narrow (odd counts): the exporter must pack them back
w4 = numpy_helper.from_array(i4.astype(md.int4), "w4")
w2 = numpy_helper.from_array(u2.astype(md.uint2), "w2")
w8 = numpy_helper.from_array(np.array([0.5, -448, 3.25], dtype=np.float32).astype(md.float8_e4m3fn), "w8")
sc = numpy_helper.from_array(np.array(0.5, dtype=np.float32), "sc")
g = helper.make_graph(
    [helper.make_node("DequantizeLinear", ["w4", "sc"], ["y4"]),
     helper.make_node("DequantizeLinear", ["w2", "sc"], ["y2"]),
     helper.make_node("Cast", ["w8"], ["y8"], to=TensorProto.FLOAT)],
    "narrow_inits", [],
    [helper.make_tensor_value_info("y4", TensorProto.FLOAT, [7]),
     helper.make_tensor_value_info("y2", TensorProto.FLOAT, [7]),
     helper.make_tensor_value_info("y8", TensorProto.FLOAT, [3])],
    initializer=[w4, w2, w8, sc])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "narrow_inits.onnx"))
