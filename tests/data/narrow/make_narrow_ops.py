"""Node-test cases (model.onnx + test_data_set_0) for the ops whose type constraints
list the narrow element types in onnx 1.23's newest opsets: the movement ops, Shape/Size,
Constant/ConstantOfShape, Pad, If/Loop/Scan pass-through, IsNaN/IsInf, BitCast, Dropout,
TensorScatter, Optional, CastLike between narrow types, and Quantize/DequantizeLinear with
blocks, axes, output_dtype, precision and saturate. Expected outputs come from onnx's
reference evaluator. The CTest narrow_ops runs `lantern check` on every folder.

Run with /tmp/venv-onnx/bin/python (onnx==1.23.2); rewrites ops/."""
import os
import shutil
import ml_dtypes as md
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as H, numpy_helper as nh
from onnx.reference import ReferenceEvaluator

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
shutil.rmtree(here, ignore_errors=True)
rng = np.random.default_rng(20261127)
OPSET = 25


def vi(name, dt, shape):
    return H.make_tensor_value_info(name, dt, shape)


def case(name, nodes, inputs, outputs, feeds, inits=(), opset=OPSET):
    g = H.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    outs = ReferenceEvaluator(m).run(None, feeds)
    d = os.path.join(here, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, vinfo in enumerate(inputs):
        t = nh.from_array(np.asarray(feeds[vinfo.name]), vinfo.name)
        open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (vinfo, o) in enumerate(zip(outputs, outs)):
        t = nh.from_array(np.asarray(o), vinfo.name)
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())


def rand(shape, t, lo=-10, hi=10):
    return rng.uniform(lo, hi, shape).astype(np.float32).astype(t)


I4, U4, I2, U2, F4 = md.int4, md.uint4, md.int2, md.uint2, md.float4_e2m1fn
E4, E4UZ, E5, E5UZ, E8 = md.float8_e4m3fn, md.float8_e4m3fnuz, md.float8_e5m2, md.float8_e5m2fnuz, md.float8_e8m0fnu

# ---- movement and shape ops (odd element counts) ----
case("narrow_identity_int4", [H.make_node("Identity", ["x"], ["y"])],
     [vi("x", TP.INT4, [3, 5])], [vi("y", TP.INT4, [3, 5])], {"x": rand([3, 5], I4, -8, 8)})
case("narrow_reshape_uint4", [H.make_node("Reshape", ["x", "s"], ["y"])],
     [vi("x", TP.UINT4, [3, 2, 5])], [vi("y", TP.UINT4, [5, 6])], {"x": rand([3, 2, 5], U4, 0, 16)},
     [nh.from_array(np.array([5, -1], dtype=np.int64), "s")])
case("narrow_flatten_float4e2m1", [H.make_node("Flatten", ["x"], ["y"], axis=2)],
     [vi("x", TP.FLOAT4E2M1, [3, 1, 3])], [vi("y", TP.FLOAT4E2M1, [3, 3])], {"x": rand([3, 1, 3], F4, -6, 6)})
case("narrow_transpose_float8e4m3fn", [H.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])],
     [vi("x", TP.FLOAT8E4M3FN, [2, 3, 5])], [vi("y", TP.FLOAT8E4M3FN, [5, 2, 3])], {"x": rand([2, 3, 5], E4)})
case("narrow_transpose_int2", [H.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
     [vi("x", TP.INT2, [3, 5])], [vi("y", TP.INT2, [5, 3])], {"x": rand([3, 5], I2, -2, 2)})
case("narrow_squeeze_unsqueeze_int2",
     [H.make_node("Squeeze", ["x", "a"], ["s"]), H.make_node("Unsqueeze", ["s", "b"], ["y"])],
     [vi("x", TP.INT2, [1, 3, 1, 5])], [vi("y", TP.INT2, [3, 1, 5])], {"x": rand([1, 3, 1, 5], I2, -2, 2)},
     [nh.from_array(np.array([0, 2], dtype=np.int64), "a"), nh.from_array(np.array([1], dtype=np.int64), "b")])
case("narrow_shape_size_uint2", [H.make_node("Shape", ["x"], ["s"]), H.make_node("Size", ["x"], ["n"])],
     [vi("x", TP.UINT2, [3, 7])], [vi("s", TP.INT64, [2]), vi("n", TP.INT64, [])], {"x": rand([3, 7], U2, 0, 4)})
case("narrow_constant_float8e5m2",
     [H.make_node("Constant", [], ["y"], value=nh.from_array(np.array([1.5, -3, 57344, 1e-5, 0.1], dtype=np.float32)
                                                               .astype(E5), "v"))],
     [], [vi("y", TP.FLOAT8E5M2, [5])], {})
case("narrow_constantofshape_int4",
     [H.make_node("ConstantOfShape", ["s"], ["y"], value=nh.from_array(np.array([-3], dtype=np.int8).astype(I4), "v"))],
     [vi("s", TP.INT64, [2])], [vi("y", TP.INT4, [2, 3])], {"s": np.array([2, 3], dtype=np.int64)})
case("narrow_pad_constant_float8e4m3fn", [H.make_node("Pad", ["x", "p", "c"], ["y"])],
     [vi("x", TP.FLOAT8E4M3FN, [2, 3])], [vi("y", TP.FLOAT8E4M3FN, [3, 5])], {"x": rand([2, 3], E4)},
     [nh.from_array(np.array([1, 0, 0, 2], dtype=np.int64), "p"),
      nh.from_array(np.array(2.5, dtype=np.float32).astype(E4), "c")])
case("narrow_pad_edge_uint4", [H.make_node("Pad", ["x", "p"], ["y"], mode="edge")],
     [vi("x", TP.UINT4, [2, 3])], [vi("y", TP.UINT4, [2, 7])], {"x": rand([2, 3], U4, 0, 16)},
     [nh.from_array(np.array([0, 2, 0, 2], dtype=np.int64), "p")])
case("narrow_pad_reflect_int4", [H.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
     [vi("x", TP.INT4, [3, 3])], [vi("y", TP.INT4, [5, 3])], {"x": rand([3, 3], I4, -8, 8)},
     [nh.from_array(np.array([1, 0, 1, 0], dtype=np.int64), "p")])

# ---- control flow carrying narrow values ----
then_g = H.make_graph([H.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", TP.INT4, [2, 3])])
else_g = H.make_graph([H.make_node("Neg", ["one"], ["m"]), H.make_node("Identity", ["xr"], ["e"])], "else", [],
                      [vi("e", TP.INT4, [2, 3])])
else_g = H.make_graph([H.make_node("Identity", ["xr"], ["e"])], "else", [], [vi("e", TP.INT4, [2, 3])])
for c in (True, False):
    case(f"narrow_if_int4_{'then' if c else 'else'}",
         [H.make_node("Reshape", ["x", "s"], ["xr"]),
          H.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
         [vi("c", TP.BOOL, []), vi("x", TP.INT4, [2, 3])], [vi("y", TP.INT4, [2, 3])],
         {"c": np.array(c), "x": rand([2, 3], I4, -8, 8)}, [nh.from_array(np.array([2, 3], dtype=np.int64), "s")])
# (scan outputs of a Loop are left to the Scan case: onnx's reference evaluator concatenates
# them where the spec stacks them)
body = H.make_graph(
    [H.make_node("Identity", ["cond"], ["cond_out"]), H.make_node("Transpose", ["v"], ["v_out"], perm=[1, 0])],
    "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("v", TP.FLOAT8E5M2, [3, 3])],
    [vi("cond_out", TP.BOOL, []), vi("v_out", TP.FLOAT8E5M2, [3, 3])])
case("narrow_loop_float8e5m2", [H.make_node("Loop", ["n", "c", "v"], ["v_final"], body=body)],
     [vi("n", TP.INT64, []), vi("c", TP.BOOL, []), vi("v", TP.FLOAT8E5M2, [3, 3])],
     [vi("v_final", TP.FLOAT8E5M2, [3, 3])],
     {"n": np.array(3, dtype=np.int64), "c": np.array(True), "v": rand([3, 3], E5)})
sbody = H.make_graph([H.make_node("Identity", ["s"], ["s_out"]), H.make_node("Identity", ["row"], ["row_out"])],
                     "sbody", [vi("s", TP.UINT4, [3]), vi("row", TP.UINT4, [3])],
                     [vi("s_out", TP.UINT4, [3]), vi("row_out", TP.UINT4, [3])])
case("narrow_scan_uint4", [H.make_node("Scan", ["s0", "x"], ["s_last", "rows"], body=sbody, num_scan_inputs=1)],
     [vi("s0", TP.UINT4, [3]), vi("x", TP.UINT4, [5, 3])], [vi("s_last", TP.UINT4, [3]), vi("rows", TP.UINT4, [5, 3])],
     {"s0": rand([3], U4, 0, 16), "x": rand([5, 3], U4, 0, 16)})
# ---- ops that read the values ----
e5 = np.array([0x7c, 0xfc, 0x7e, 0x01, 0x80, 0x7b, 0xff, 0x3c], dtype=np.uint8).view(E5)  # inf, -inf, NaN, ...
case("narrow_isinf_isnan_float8e5m2",
     [H.make_node("IsInf", ["x"], ["i"]), H.make_node("IsInf", ["x"], ["p"], detect_negative=0),
      H.make_node("IsNaN", ["x"], ["n"])],
     [vi("x", TP.FLOAT8E5M2, [8])], [vi("i", TP.BOOL, [8]), vi("p", TP.BOOL, [8]), vi("n", TP.BOOL, [8])],
     {"x": e5}, opset=20)
e4 = np.array([0x7f, 0xff, 0x7e, 0x00, 0x80, 0x01], dtype=np.uint8).view(E4)
case("narrow_isnan_float8e4m3fn", [H.make_node("IsNaN", ["x"], ["n"]), H.make_node("IsInf", ["x"], ["i"])],
     [vi("x", TP.FLOAT8E4M3FN, [6])], [vi("n", TP.BOOL, [6]), vi("i", TP.BOOL, [6])], {"x": e4}, opset=20)
for src, dst, t, lo, hi in ((TP.INT4, TP.UINT4, I4, -8, 8), (TP.UINT4, TP.FLOAT4E2M1, U4, 0, 16),
                            (TP.FLOAT4E2M1, TP.INT4, F4, -6, 6), (TP.INT2, TP.UINT2, I2, -2, 2),
                            (TP.UINT2, TP.INT2, U2, 0, 4), (TP.FLOAT8E4M3FN, TP.UINT8, E4, -100, 100),
                            (TP.INT8, TP.FLOAT8E5M2FNUZ, np.int8, -100, 100)):
    sn, dn = TP.DataType.Name(src).lower(), TP.DataType.Name(dst).lower()
    case(f"narrow_bitcast_{sn}_to_{dn}", [H.make_node("BitCast", ["x"], ["y"], to=dst)],
         [vi("x", src, [7])], [vi("y", dst, [7])], {"x": rand([7], t, lo, hi)}, opset=26)
case("narrow_castlike_int4_to_float8e4m3fnuz", [H.make_node("CastLike", ["x", "like"], ["y"])],
     [vi("x", TP.INT4, [7]), vi("like", TP.FLOAT8E4M3FNUZ, [1])], [vi("y", TP.FLOAT8E4M3FNUZ, [7])],
     {"x": rand([7], I4, -8, 8), "like": np.array([1], dtype=np.float32).astype(E4UZ)})
case("narrow_cast_float8e5m2_to_int4", [H.make_node("Cast", ["x"], ["y"], to=TP.INT4)],
     [vi("x", TP.FLOAT8E5M2, [9])], [vi("y", TP.INT4, [9])],
     {"x": np.array([0.5, -0.75, 3, -7, 7.5, -8, 1.25, 2.5, -2.5], dtype=np.float32).astype(E5)})
case("narrow_dropout_float8e4m3fn", [H.make_node("Dropout", ["x"], ["y"])],
     [vi("x", TP.FLOAT8E4M3FN, [2, 5])], [vi("y", TP.FLOAT8E4M3FN, [2, 5])], {"x": rand([2, 5], E4)}, opset=22)
case("narrow_tensorscatter_int4", [H.make_node("TensorScatter", ["past", "upd", "wi"], ["present"], axis=-2)],
     [vi("past", TP.INT4, [2, 5, 3]), vi("upd", TP.INT4, [2, 2, 3]), vi("wi", TP.INT64, [2])],
     [vi("present", TP.INT4, [2, 5, 3])],
     {"past": rand([2, 5, 3], I4, -8, 8), "upd": rand([2, 2, 3], I4, -8, 8), "wi": np.array([1, 3], dtype=np.int64)},
     opset=24)

# ---- quantization ----
x46 = rng.uniform(-4, 4, [4, 6]).astype(np.float32)
case("narrow_quantizelinear_int4_blocked",
     [H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=3)],
     [vi("x", TP.FLOAT, [4, 6])], [vi("y", TP.INT4, [4, 6])], {"x": x46},
     [nh.from_array(rng.uniform(0.2, 1, [4, 2]).astype(np.float32), "s"),
      nh.from_array(rand([4, 2], I4, -3, 3), "z")])
case("narrow_quantizelinear_float8e4m3fn_axis_nosat",
     [H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0, saturate=0)],
     [vi("x", TP.FLOAT, [3, 4])], [vi("y", TP.FLOAT8E4M3FN, [3, 4])],
     {"x": np.array([[1, 2, 500, -1000], [0.01, -0.3, 7, 449], [np.inf, -np.inf, 3, 0]], dtype=np.float32)},
     [nh.from_array(np.array([1, 0.5, 2], dtype=np.float32), "s"),
      nh.from_array(np.zeros(3, dtype=np.float32).astype(E4), "z")])
case("narrow_quantizelinear_float8e5m2fnuz_sat",
     [H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
     [vi("x", TP.FLOAT, [6])], [vi("y", TP.FLOAT8E5M2FNUZ, [6])],
     {"x": np.array([1e6, -1e6, 0.3, -0.0, 100, np.inf], dtype=np.float32)},
     [nh.from_array(np.array(0.5, dtype=np.float32), "s"),
      nh.from_array(np.array(0, dtype=np.float32).astype(E5UZ), "z")])
case("narrow_quantizelinear_uint2_output_dtype",
     [H.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TP.UINT2)],
     [vi("x", TP.FLOAT, [7])], [vi("y", TP.UINT2, [7])],
     {"x": np.array([-1, 0, 0.4, 0.6, 1.0, 1.6, 9], dtype=np.float32)},
     [nh.from_array(np.array(0.5, dtype=np.float32), "s")])
case("narrow_quantizelinear_float4e2m1_blocked",
     [H.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=0, block_size=2, output_dtype=TP.FLOAT4E2M1)],
     [vi("x", TP.FLOAT, [4, 3])], [vi("y", TP.FLOAT4E2M1, [4, 3])], {"x": rng.uniform(-8, 8, [4, 3]).astype(np.float32)},
     [nh.from_array(np.array([[1, 2, 0.5], [0.25, 1, 4]], dtype=np.float32), "s")])
case("narrow_quantizelinear_precision_float16",
     [H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], precision=TP.FLOAT16)],
     [vi("x", TP.FLOAT, [8])], [vi("y", TP.INT8, [8])],
     {"x": np.array([1.0009765, 2.5, 3.5004883, -7.25, 100.1, 0.333, -0.5, 33.33], dtype=np.float32)},
     [nh.from_array(np.array(0.333, dtype=np.float32), "s"), nh.from_array(np.array(1, dtype=np.int8), "z")])
case("narrow_quantizelinear_int2_axis",
     [H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
     [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.INT2, [2, 3])],
     {"x": np.array([[-3, 0.4, 2], [1, -1, 0]], dtype=np.float32)},
     [nh.from_array(np.array([1, 0.5, 2], dtype=np.float32), "s"),
      nh.from_array(np.array([0, -1, 1], dtype=np.int8).astype(I2), "z")])
case("narrow_dequantizelinear_int4_blocked_float16",
     [H.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=2, output_dtype=TP.FLOAT16)],
     [vi("x", TP.INT4, [3, 5])], [vi("y", TP.FLOAT16, [3, 5])], {"x": rand([3, 5], I4, -8, 8)},
     [nh.from_array(rng.uniform(0.1, 2, [3, 3]).astype(np.float32), "s"), nh.from_array(rand([3, 3], I4, -2, 2), "z")])
case("narrow_dequantizelinear_float8e5m2_e8m0_scale",
     [H.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=0, output_dtype=TP.FLOAT)],
     [vi("x", TP.FLOAT8E5M2, [2, 4])], [vi("y", TP.FLOAT, [2, 4])], {"x": rand([2, 4], E5, -100, 100)},
     [nh.from_array(np.array([0.25, 8], dtype=np.float32).astype(E8), "s")])
case("narrow_dequantizelinear_uint2_axis",
     [H.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0)],
     [vi("x", TP.UINT2, [3, 3])], [vi("y", TP.FLOAT, [3, 3])], {"x": rand([3, 3], U2, 0, 4)},
     [nh.from_array(np.array([0.5, 1, 3], dtype=np.float32), "s"),
      nh.from_array(np.array([1, 0, 2], dtype=np.uint8).astype(U2), "z")])
case("narrow_dequantizelinear_float4e2m1_blocked",
     [H.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
     [vi("x", TP.FLOAT4E2M1, [2, 4])], [vi("y", TP.FLOAT, [2, 4])], {"x": rand([2, 4], F4, -6, 6)},
     [nh.from_array(np.array([[0.5, 3], [2, 0.125]], dtype=np.float32), "s")])
print(len(os.listdir(here)), "cases")
