#!/usr/bin/python3
"""Regenerates lantern's malformed-input corpus: broken .onnx models (checked
by `lantern import`), broken .npy/.pb tensor files under inputs/ (checked by
`lantern run inputs/relu.onnx --input X=FILE`) and expected.txt, the manifest
that says which message each file must produce.

The generated files are committed; the build and the tests never run this
script. Run it with Debian's python (it has onnx and numpy):

    /usr/bin/python3 tests/malformed/make_corpus.py

Each case is built from onnx's protobuf classes (onnx.helper only for plain
nodes and value infos, which it does not check), so that it is broken in
exactly one way. Regression
inputs found by the fuzzer (fuzz_*.onnx) are not generated here: they are
kept as they were found and listed in FUZZ_CASES below.
"""
import os
import random
import struct
import sys
import warnings

import numpy as np
from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT

# (file relative to HERE, what the one stderr line must contain); a second
# entry for the same file starting with "stdout:" checks stdout instead.
manifest = []


def write(name, data, *expect):
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not isinstance(data, (bytes, bytearray)):
        data = data.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    for e in expect:
        manifest.append((name, e))


# ---- building blocks ----
def varint(v):
    out = bytearray()
    while True:
        out.append((v & 0x7f) | (0x80 if v > 0x7f else 0))
        v >>= 7
        if not v:
            return bytes(out)


def vi(name, dims=(2, 3), elem=F):
    return helper.make_tensor_value_info(name, elem, list(dims))


def node(op, ins, outs, name, domain=None, **attrs):
    return helper.make_node(op, ins, outs, name=name, domain=domain, **attrs)


def graph(nodes, inputs, outputs, inits=(), name="g", sparse=()):
    g = GraphProto()
    g.name = name
    g.node.extend(nodes)
    g.input.extend(inputs)
    g.output.extend(outputs)
    g.initializer.extend(inits)
    g.sparse_initializer.extend(sparse)
    return g


def model(g, opset=13, ir=8, functions=(), extra_opsets=()):
    m = ModelProto()
    m.ir_version = ir
    m.producer_name = "lantern-malformed"
    m.graph.CopyFrom(g)
    if opset is not None:
        o = m.opset_import.add()
        o.domain = ""
        o.version = opset
    for d, v in extra_opsets:
        o = m.opset_import.add()
        o.domain = d
        o.version = v
    m.functions.extend(functions)
    return m


def relu_model(**kw):
    return model(graph([node("Relu", ["X"], ["Y"], "r")], [vi("X")], [vi("Y")]), **kw)


def tensor(name, dtype, dims, raw=None, floats=None):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def init_model(t, op="Add"):
    """Y = X <op> t: the initializer is used, so nothing drops it."""
    return model(graph([node(op, ["X", t.name], ["Y"], "add")], [vi("X")], [vi("Y")], inits=[t]))


def ext_tensor(name, dims, **kv):
    t = tensor(name, F, dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in kv.items():
        e = t.external_data.add()
        e.key = k
        e.value = v
    return t


def attr(name, kind=None, **fields):
    a = AttributeProto()
    a.name = name
    if kind is not None:
        a.type = kind
    for k, v in fields.items():
        if k in ("t", "g", "sparse_tensor"):
            getattr(a, k).CopyFrom(v)
        elif k in ("ints", "floats", "strings", "graphs"):
            getattr(a, k).extend(v)
        else:
            setattr(a, k, v)
    return a


def bool_branch(name, out="b"):
    """A subgraph returning one bool computed from the captured 'c'."""
    return graph([node("Not", ["c"], [out], name + "_not")], [], [vi(out, (), TensorProto.BOOL)], name=name)


def if_model(then_g, else_g=None, extra=(), outs=("o",)):
    n = node("If", ["c"], list(outs), "if")
    n.attribute.append(attr("then_branch", AttributeProto.GRAPH, g=then_g))
    if else_g is not None:
        n.attribute.append(attr("else_branch", AttributeProto.GRAPH, g=else_g))
    n.attribute.extend(extra)
    return model(graph([n], [vi("c", (), TensorProto.BOOL)], [vi(o, (), TensorProto.BOOL) for o in outs]))


# ---- files that are not models at all ----
def not_models():
    write("empty.onnx", b"", "the file is empty")
    write("text.onnx", b"this is not an onnx model, just some text\n", "not an ONNX model")
    rng = random.Random(20240601)
    for i, size in enumerate((1, 17, 256, 4096)):
        while True:  # keep only bytes that no protobuf parser accepts
            data = bytes(rng.randrange(256) for _ in range(size))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    ModelProto().ParseFromString(data)
            except Exception:
                break
        write("random_%d.onnx" % i, data, "not an ONNX model")
    npy = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" + b" " * 51 + b"\n"
    write("npy_renamed.onnx", npy + b"\0" * 8, "not an ONNX model")


def truncated():
    rng = np.random.default_rng(7)
    w = tensor("W", F, [16, 16], raw=rng.standard_normal((16, 16)).astype(np.float32).tobytes())
    full = init_model(w, "MatMul")
    full.graph.input[0].CopyFrom(vi("X", (4, 16)))
    full.graph.output[0].CopyFrom(vi("Y", (4, 16)))
    data = full.SerializeToString()
    cuts = [1, 3, 12, len(data) // 4, len(data) // 2, (3 * len(data)) // 4, len(data) - 40, len(data) - 3]
    for c in cuts:
        try:
            ModelProto().ParseFromString(data[:c])
            sys.exit("cut %d of %d still parses: choose another" % (c, len(data)))
        except Exception:
            pass
        write("truncated_%d.onnx" % c, data[:c], "not an ONNX model")
    # the cut that leaves a well-formed prefix: the graph is gone
    head = ModelProto()
    head.CopyFrom(full)
    head.ClearField("graph")
    head.ClearField("opset_import")
    head = head.SerializeToString()
    assert data.startswith(head)
    write("truncated_before_graph.onnx", head, "the model has no graph")


# ---- the model envelope ----
def envelope():
    write("ir_version_0.onnx", relu_model(ir=0), "IR version 0 is outside")
    write("ir_version_99.onnx", relu_model(ir=99), "IR version 99 is outside")
    write("ir_version_negative.onnx", relu_model(ir=-5), "IR version -5 is outside")
    m = relu_model()
    m.ClearField("graph")
    write("no_graph.onnx", m, "the model has no graph")
    write("no_opset_import.onnx", relu_model(opset=None),
          "node 'r' (Relu): the model does not import an opset for domain 'ai.onnx'")
    write("opset_version_0.onnx", relu_model(opset=0), "opset import for domain 'ai.onnx' has version 0")
    write("opset_version_huge.onnx", relu_model(extra_opsets=[("com.example", 1 << 40)]),
          "opset import for domain 'com.example' has version 1099511627776")
    write("opset_newer_than_known.onnx", relu_model(opset=29),
          "the model imports ai.onnx opset 29")
    write("opset_ml_newer_than_known.onnx", relu_model(extra_opsets=[("ai.onnx.ml", 6)]),
          "the model imports ai.onnx.ml opset 6")


# ---- tensors: initializers, attribute tensors, declared types ----
def tensors():
    raw = lambda n: bytes(range(n))
    write("raw_data_short.onnx", init_model(tensor("W", F, [2, 3], raw=raw(20))),
          "initializer 'W': raw_data has 20 bytes, its dims need 24")
    write("raw_data_long.onnx", init_model(tensor("W", F, [2, 3], raw=raw(28))),
          "initializer 'W': raw_data has 28 bytes, its dims need 24")
    write("dims_overflow.onnx", init_model(tensor("W", F, [1 << 40, 1 << 40], raw=raw(4))),
          "initializer 'W': element count overflows")
    write("dims_overflow_many.onnx", init_model(tensor("W", F, [65536] * 5, raw=raw(4))),
          "initializer 'W': element count overflows")
    write("dims_int64_max.onnx", init_model(tensor("W", F, [(1 << 63) - 1, 2], raw=raw(4))),
          "initializer 'W': element count overflows")
    write("dims_overflow_bytes.onnx", init_model(tensor("W", F, [1 << 62], raw=raw(4))),
          "initializer 'W': 4611686018427387904 elements are too many bytes")
    write("negative_dim_initializer.onnx", init_model(tensor("W", F, [-1, 3], raw=raw(12))),
          "initializer 'W' has negative dim -1")
    m = relu_model()
    m.graph.input[0].CopyFrom(vi("X", (2, -3)))
    write("negative_dim_input.onnx", m, "input 'X' has negative dim -3")
    # 4 GiB declared, nothing stored: must fail before allocating anything
    write("huge_no_data.onnx", init_model(tensor("W", F, [1 << 20, 1 << 10])),
          "initializer 'W' holds 0 values but its dims need 1073741824")
    write("huge_raw_data_short.onnx", init_model(tensor("W", F, [1 << 31], raw=raw(8))),
          "initializer 'W': raw_data has 8 bytes, its dims need 8589934592")
    write("typed_count_mismatch.onnx", init_model(tensor("W", F, [2, 3], floats=[1, 2, 3, 4, 5])),
          "initializer 'W' holds 5 values but its dims need 6")
    t = tensor("W", TensorProto.INT64, [4])
    t.int64_data.extend([1, 2, 3])
    write("int64_count_mismatch.onnx", init_model(t), "initializer 'W' holds 3 values but its dims need 4")
    # string tensors: their elements are pointers once loaded, so raw bytes
    # must never be taken for them
    t = tensor("W", TensorProto.STRING, [2], raw=raw(16))
    write("string_raw_data.onnx", init_model(t, "Concat"), "initializer 'W': string tensors keep their data in string_data")
    m = init_model(ext_tensor("W", [2], location="ext_data.bin"))
    m.graph.initializer[0].data_type = TensorProto.STRING
    write("string_external.onnx", m, "initializer 'W': string tensors keep their data in string_data")
    t = tensor("W", TensorProto.STRING, [3])
    t.string_data.extend([b"a", b"b"])
    write("string_count_mismatch.onnx", init_model(t), "initializer 'W' holds 2 values but its dims need 3")
    t = tensor("W", TensorProto.STRING, [2])
    t.string_data.extend([b"ok", b"nul\0inside"])
    write("string_nul_byte.onnx", init_model(t), "initializer 'W': string 1 holds a NUL byte")
    write("dtype_unknown.onnx", init_model(tensor("W", 99, [2], raw=raw(8))), "initializer 'W' has element type 99")
    write("dtype_undefined.onnx", init_model(tensor("W", 0, [2], raw=raw(8))), "initializer 'W' has element type 0")
    write("rank9_initializer.onnx", init_model(tensor("W", F, [1] * 9, raw=raw(4))),
          "initializer 'W' has rank 9, more than lantern's 8")
    m = relu_model()
    m.graph.input[0].CopyFrom(vi("X", [1] * 9))
    write("rank9_input.onnx", m, "input 'X' has rank 9, more than lantern's 8")
    m = relu_model()
    m.graph.input[0].type.tensor_type.elem_type = 77
    write("input_elem_type_bad.onnx", m, "input 'X' has element type 77")
    m = relu_model()
    m.graph.input[0].type.map_type.key_type = TensorProto.INT64
    m.graph.input[0].type.map_type.value_type.tensor_type.elem_type = F
    write("input_map_type.onnx", m, "input 'X': map and sparse tensor types are not supported")
    m = relu_model()
    vinfo = m.graph.value_info.add()
    vinfo.CopyFrom(vi("Y", [1] * 9))
    write("value_info_rank9.onnx", m, "value_info 'Y' has rank 9")
    t = tensor("W", F, [2], raw=raw(8))
    t.segment.begin = 0
    t.segment.end = 1
    write("segmented_initializer.onnx", init_model(t), "initializer 'W' is segmented")
    t = tensor("", F, [2], raw=raw(8))
    write("initializer_no_name.onnx", init_model(t), "graph 'g': initializer 0 has no name")
    m = init_model(tensor("W", F, [2, 3], raw=raw(24)))
    m.graph.initializer.append(tensor("W", F, [2, 3], raw=raw(24)))
    write("duplicate_initializer.onnx", m, "value 'W' is defined twice in graph 'g'")

    # attribute tensors: node-level messages
    c = node("Constant", [], ["Y"], "c")
    c.attribute.append(attr("value", AttributeProto.TENSOR, t=tensor("v", F, [2, 3], raw=raw(7))))
    write("attr_tensor_bad_raw.onnx", model(graph([c], [], [vi("Y")])),
          "attribute 'value' of node 'c' (Constant): raw_data has 7 bytes, its dims need 24")
    c = node("Constant", [], ["Y"], "c")
    c.attribute.append(attr("value", AttributeProto.TENSOR, t=ext_tensor("v", [2, 3], location="ext_data.bin")))
    write("attr_tensor_external.onnx", model(graph([c], [], [vi("Y")])),
          "attribute 'value' of node 'c' (Constant): external data is not allowed here")
    c = node("Constant", [], ["Y"], "c")
    c.attribute.append(attr("value", AttributeProto.TENSOR, t=tensor("v", F, [-2, 3])))
    write("attr_tensor_negative_dim.onnx", model(graph([c], [], [vi("Y")])),
          "attribute 'value' of node 'c' (Constant) has negative dim -2")


# ---- external data (ext_data.bin: 16 bytes next to the models) ----
def external():
    with open(os.path.join(HERE, "ext_data.bin"), "wb") as f:
        f.write(struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))

    def case(name, expect, dims=(4,), **kv):
        write(name, init_model(ext_tensor("W", list(dims), **kv)), expect)

    case("ext_parent_dir.onnx", "initializer 'W': external data location '../ext_data.bin' leaves the model's folder",
         location="../ext_data.bin")
    case("ext_nested_parent.onnx", "external data location 'sub/../../x.bin' leaves the model's folder",
         location="sub/../../x.bin")
    case("ext_absolute.onnx", "external data location '/etc/passwd' leaves the model's folder",
         location="/etc/passwd")
    case("ext_folder_itself.onnx", "external data '.' resolves outside the model's folder", location=".")
    case("ext_past_end.onnx", "external data 'ext_data.bin' ends before offset 0 + 32 bytes", dims=(8,),
         location="ext_data.bin")
    case("ext_offset_past_end.onnx", "external data 'ext_data.bin' ends before offset 12 + 8 bytes", dims=(2,),
         location="ext_data.bin", offset="12")
    case("ext_offset_int64_max.onnx", "ends before offset 9223372036854775807 + 8 bytes", dims=(2,),
         location="ext_data.bin", offset=str((1 << 63) - 1))
    case("ext_negative_offset.onnx", "initializer 'W': bad external data offset '-4'", location="ext_data.bin",
         offset="-4")
    case("ext_overflow_offset.onnx", "bad external data offset '18446744073709551616'", location="ext_data.bin",
         offset=str(1 << 64))
    case("ext_garbage_offset.onnx", "bad external data offset '4x'", location="ext_data.bin", offset="4x")
    case("ext_negative_length.onnx", "bad external data length '-1'", location="ext_data.bin", length="-1")
    case("ext_overflow_length.onnx", "bad external data length '99999999999999999999'", location="ext_data.bin",
         length="99999999999999999999")
    case("ext_length_mismatch.onnx", "external data length 4, but the tensor needs 16 bytes",
         location="ext_data.bin", length="4")
    case("ext_missing_file.onnx", "cannot open external data 'no_such_file.bin'", location="no_such_file.bin")
    case("ext_no_location.onnx", "initializer 'W': external data without a location", offset="0")
    # 16 GiB declared, 16 bytes on disk: must fail before allocating
    case("ext_huge.onnx", "external data 'ext_data.bin' ends before offset 0 + 17179869184 bytes",
         dims=(1 << 30, 4), location="ext_data.bin")


# ---- sparse initializers ----
def sparse():
    def sp(dims, values, indices, idims=None, idtype=TensorProto.INT64, name="S"):
        s = helper.make_sparse_tensor(
            tensor(name, F, [len(values)], raw=np.array(values, np.float32).tobytes()),
            tensor("", idtype, idims or [len(indices)], raw=np.array(indices, np.int64).tobytes()),
            dims)
        return s

    def case(name, s, expect):
        m = model(graph([node("Add", ["X", "S"], ["Y"], "add")], [vi("X", (10,))], [vi("Y", (10,))], sparse=[s]))
        write(name, m, expect)

    case("sparse_index_out_of_range.onnx", sp([10], [1, 2], [3, 12]),
         "sparse initializer 'S': sparse index 1 out of range")
    case("sparse_index_negative.onnx", sp([10], [1, 2], [-1, 2]),
         "sparse initializer 'S': sparse index 0 out of range")
    case("sparse_coo_out_of_range.onnx", sp([2, 5], [1, 2], [0, 1, 2, 0], idims=[2, 2]),
         "sparse initializer 'S': sparse index 1 out of range")
    case("sparse_indices_wrong_shape.onnx", sp([10], [1, 2], [1, 2, 3]),
         "sparse initializer 'S': sparse indices have the wrong shape")
    case("sparse_expansion_bomb.onnx", sp([1 << 31], [1], [0]),
         "sparse initializer 'S': 8589934592 dense bytes from 12 stored is more expansion than lantern allows")
    case("sparse_huge_dense.onnx", sp([1 << 40], [1], [0]), "sparse initializer 'S': 1099511627776 elements are too many bytes")
    s = sp([10], [1, 2], [1, 2])
    s.values.CopyFrom(tensor("S", TensorProto.STRING, [2]))
    s.values.string_data.extend([b"a", b"b"])
    case("sparse_strings.onnx", s, "sparse initializer 'S': sparse string tensors are not supported")
    s = sp([10], [1, 2], [1, 2])
    s.indices.CopyFrom(tensor("", F, [2], raw=np.array([1, 2], np.float32).tobytes()))
    case("sparse_indices_float.onnx", s, "sparse values must be 1-D and indices int64")
    case("sparse_no_name.onnx", sp([10], [1], [1], name=""), "sparse initializer 0 has no name")


# ---- graph structure ----
def structure():
    def m1(nodes, outputs=("Y",), inputs=("X",)):
        return model(graph(nodes, [vi(i) for i in inputs], [vi(o) for o in outputs]))

    write("cycle.onnx", m1([node("Relu", ["b"], ["a"], "A"), node("Relu", ["a"], ["b"], "B"),
                            node("Add", ["X", "a"], ["Y"], "C")]),
          "graph 'g': nodes 'A' (Relu), 'B' (Relu), 'C' (Add) form a cycle")
    write("self_cycle.onnx", m1([node("Add", ["X", "Y"], ["Y"], "loopy")]), "nodes 'loopy' (Add) form a cycle")
    write("dangling_input.onnx", m1([node("Relu", ["nope"], ["Y"], "r")]),
          "node 'r' (Relu): input 'nope' is not defined")
    write("output_never_defined.onnx", m1([node("Relu", ["X"], ["Y"], "r")], outputs=("Y", "Z")),
          "graph 'g': output 'Z' is never defined")
    write("duplicate_output.onnx", m1([node("Relu", ["X"], ["T"], "r1"), node("Relu", ["X"], ["T"], "r2"),
                                       node("Relu", ["T"], ["Y"], "r3")]),
          "node 'r2' (Relu): output 'T' is defined twice in its graph")
    const = node("Constant", [], ["X"], "dup")
    const.attribute.append(attr("value", AttributeProto.TENSOR, t=tensor("v", F, [2, 3], floats=range(6))))
    write("output_shadows_input.onnx", m1([const, node("Relu", ["X"], ["Y"], "r")]),
          "node 'dup' (Constant): output 'X' is defined twice in its graph")
    m = m1([node("Relu", ["X"], ["Y"], "r")])
    m.graph.input.append(vi("X"))
    write("duplicate_input.onnx", m, "value 'X' is defined twice in graph 'g'")
    write("node_no_op_type.onnx", m1([node("", ["X"], ["Y"], "n0")]), "node 'n0' (<no op_type>): node has no op_type")
    n = node("Relu", ["X"], ["Y"], "n1")
    n.ClearField("op_type")
    write("node_op_type_absent.onnx", m1([n]), "node 'n1' (<no op_type>): node has no op_type")
    write("node_name_newline.onnx", m1([node("Relu", ["nope"], ["Y"], "evil\nname\r")]),
          "node 'evil?name?' (Relu): input 'nope' is not defined")
    m = relu_model()
    m.graph.input[0].name = ""
    write("input_no_name.onnx", m, "graph 'g': input 0 has no name")
    m = relu_model()
    m.graph.output[0].name = ""
    write("output_no_name.onnx", m, "graph 'g': output 0 has no name")
    write("node_too_many_inputs.onnx", m1([node("Sum", ["X"] * 5000, ["Y"], "sum")]),
          "node 'sum' (Sum): implausible number of inputs, outputs or attributes")
    # arity against the op's schema at the model's opset (13 here)
    write("node_no_outputs.onnx", m1([node("Relu", ["X"], ["Y"], "r"), node("Identity", ["Y"], [], "lost")]),
          "node 'lost' (Identity): takes 1 output at opset 13")
    write("node_no_inputs.onnx", m1([node("Neg", ["X"], ["T"], "neg"), node("Identity", [], ["Y"], "id")]),
          "node 'id' (Identity): takes 1 input at opset 13")
    write("node_required_input_empty.onnx", m1([node("Sub", ["", "X"], ["Y"], "sub")]),
          "node 'sub' (Sub): input 0 is required and the node leaves it empty")
    write("node_extra_input.onnx", m1([node("Transpose", ["X", "X"], ["Y"], "t")]),
          "node 't' (Transpose): takes 1 input at opset 13")
    write("node_extra_output.onnx", m1([node("Relu", ["X"], ["Y", "Z"], "r")]),
          "node 'r' (Relu): takes 1 output at opset 13")


# ---- attributes ----
def attributes():
    def one(op, a, ins=("X",), name="n"):
        n = node(op, list(ins), ["Y"], name)
        n.attribute.append(a)
        return model(graph([n], [vi("X")], [vi("Y")]))

    write("attr_axis_float.onnx", one("Softmax", attr("axis", AttributeProto.FLOAT, f=1.5), name="s"),
          "node 's' (Softmax): attribute 'axis' has the wrong kind")
    write("attr_perm_string.onnx", one("Transpose", attr("perm", AttributeProto.STRING, s=b"1,0"), name="t"),
          "node 't' (Transpose): attribute 'perm' has the wrong kind")
    write("attr_axis_untyped_float.onnx", one("Softmax", attr("axis", f=1.0), name="s"),
          "node 's' (Softmax): attribute 'axis' has the wrong kind")
    n = node("If", ["c"], ["o"], "if")
    n.attribute.append(attr("then_branch", AttributeProto.INT, i=1))
    n.attribute.append(attr("else_branch", AttributeProto.GRAPH, g=bool_branch("else")))
    write("attr_then_branch_int.onnx", model(graph([n], [vi("c", (), TensorProto.BOOL)],
                                                   [vi("o", (), TensorProto.BOOL)])),
          "node 'if' (If): attribute 'then_branch' has the wrong kind")
    write("attr_no_name.onnx", one("LeakyRelu", attr("", AttributeProto.FLOAT, f=0.1), name="lr"),
          "node 'lr' (LeakyRelu): an attribute has no name")
    write("attr_no_type_no_value.onnx", one("LeakyRelu", attr("alpha"), name="lr"),
          "node 'lr' (LeakyRelu): attribute 'alpha' has no type and no value")
    # AttributeType 99 does not exist, so the enum cannot hold it: patch the bytes
    data = one("LeakyRelu", attr("alpha", AttributeProto.FLOAT, f=0.1), name="lr").SerializeToString()
    type_float = b"\xa0\x01\x01"  # field 20 (type), varint 1
    assert data.count(type_float) == 1
    write("attr_kind_unknown.onnx", data.replace(type_float, b"\xa0\x01\x63"),
          "node 'lr' (LeakyRelu): attribute 'alpha' has a kind lantern does not support")
    write("attr_graphs.onnx", one("Relu", attr("gs", AttributeProto.GRAPHS, graphs=[bool_branch("x")]), name="r"),
          "node 'r' (Relu): attribute 'gs' has a kind lantern does not support")
    write("attr_tensor_missing.onnx", one("Constant", attr("value", AttributeProto.TENSOR), ins=(), name="c"),
          "node 'c' (Constant): attribute 'value' has no tensor")
    write("attr_sparse_missing.onnx", one("Constant", attr("sparse_value", AttributeProto.SPARSE_TENSOR), ins=(),
                                          name="c"),
          "node 'c' (Constant): attribute 'sparse_value' has no sparse tensor")
    write("attr_graph_missing.onnx", if_model(bool_branch("then"), None,
                                              extra=[attr("else_branch", AttributeProto.GRAPH)]),
          "node 'if' (If): attribute 'else_branch' has no graph")
    # graphs whose kind is left for the importer to infer (type present but
    # 0): each must still get a region of its own (the second once wrote past
    # the node's region array); the second body is then broken
    good = graph([node("Relu", ["X"], ["z"], "fine")], [], [vi("z")], name="sub1")
    bad = graph([node("Relu", ["nope"], ["z"], "inner")], [], [vi("z")], name="sub2")
    m = one("Relu", attr("sub1", 0, g=good), name="r")
    m.graph.node[0].attribute.append(attr("sub2", 0, g=bad))
    write("attr_graph_type0.onnx", m, "node 'inner' (Relu): input 'nope' is not defined")


# ---- control flow ----
def control():
    # If inside If: 1000 deep is refused before protobuf-c's recursive
    # unpacking (which has no limit of its own), 70 deep by the importer
    sys.setrecursionlimit(20000)
    for depth, expect in ((1000, "protobuf messages are nested more than 256 deep"),
                          (70, "node 'if64' (If): subgraphs are nested deeper than 64 levels")):
        g = bool_branch("leaf")
        for d in range(depth):
            n = node("If", ["c"], ["b"], "if%d" % (depth - 1 - d))
            n.attribute.append(attr("then_branch", AttributeProto.GRAPH, g=g))
            n.attribute.append(attr("else_branch", AttributeProto.GRAPH, g=bool_branch("e%d" % d)))
            g = graph([n], [], [vi("b", (), TensorProto.BOOL)], name="lvl%d" % d)
        write("nested_if_%d.onnx" % depth, model(graph(list(g.node), [vi("c", (), TensorProto.BOOL)],
                                                       [vi("b", (), TensorProto.BOOL)])), expect)
    # an input typed seq(seq(...(float))) 100000 deep: 400 KB of file, far
    # more recursion than a stack holds; written by hand (protobuf's own
    # serializer would recurse as deep)
    def ld(field, payload):
        return varint(field << 3 | 2) + varint(len(payload)) + payload
    t = ld(1, varint(1 << 3) + varint(F))  # TypeProto.tensor_type { elem_type: FLOAT }
    for _ in range(100000):
        t = ld(4, ld(1, t))  # TypeProto.sequence_type { elem_type: t }
    g = ld(1, node("Identity", ["X"], ["Y"], "id").SerializeToString()) + ld(2, b"g") + \
        ld(11, ld(1, b"X") + ld(2, t)) + ld(12, vi("Y").SerializeToString())
    write("deep_type_nesting.onnx", varint(1 << 3) + varint(8) + ld(7, g) + ld(8, varint(2 << 3) + varint(13)),
          "protobuf messages are nested more than 256 deep")

    def loop_model(body, ins=("M", "cond", "v0"), outs=("vN",)):
        n = node("Loop", list(ins), list(outs), "loop")
        if body is not None:
            n.attribute.append(attr("body", AttributeProto.GRAPH, g=body))
        return model(graph([n], [vi("M", (), TensorProto.INT64), vi("cond", (), TensorProto.BOOL), vi("v0")],
                           [vi(o) for o in outs]))

    def body(n_in, n_out):
        ins = [vi("i", (), TensorProto.INT64), vi("ci", (), TensorProto.BOOL), vi("v")][:n_in]
        nodes = [node("Identity", ["cond"], ["co"], "b_cond"), node("Relu", ["v0"], ["vo"], "b_relu")]
        outs = [vi("co", (), TensorProto.BOOL), vi("vo"), vi("vo")][:n_out]
        return graph(nodes, ins, outs, name="body")

    write("loop_body_too_few_inputs.onnx", loop_model(body(2, 2)),
          "node 'loop' (Loop): the body takes 2 inputs, but the node's 1 loop-carried value(s) need 3")
    write("loop_body_too_many_inputs.onnx", loop_model(body(3, 2), ins=("M", "cond")),
          "node 'loop' (Loop): the body takes 3 inputs, but the node's 0 loop-carried value(s) need 2")
    write("loop_body_too_few_outputs.onnx", loop_model(body(3, 1)),
          "node 'loop' (Loop): the body returns 1 values, fewer than the 2 its condition and loop-carried values need")
    write("loop_too_many_outputs.onnx", loop_model(body(3, 2), outs=("vN", "extra")),
          "node 'loop' (Loop): the node has 2 outputs, but its body returns 1 after the condition")
    write("loop_no_body.onnx", loop_model(None), "node 'loop' (Loop): needs a graph attribute 'body'")
    write("if_missing_else.onnx", if_model(bool_branch("then")), "node 'if' (If): needs a graph attribute 'else_branch'")
    two = graph([node("Not", ["c"], ["b1"], "n1"), node("Not", ["c"], ["b2"], "n2")], [],
                [vi("b1", (), TensorProto.BOOL), vi("b2", (), TensorProto.BOOL)], name="then")
    write("if_branch_outputs.onnx", if_model(two, bool_branch("else")),
          "node 'if' (If): branch 'then_branch' returns 2 values, the node has 1 outputs")
    write("if_extra_graph.onnx", if_model(bool_branch("then"), bool_branch("else"),
                                          extra=[attr("body", AttributeProto.GRAPH, g=bool_branch("x"))]),
          "node 'if' (If): attribute 'body' is a graph, but If takes only then_branch and else_branch")
    n = node("Scan", ["s0", "xs"], ["sN", "ys"], "scan", num_scan_inputs=1)
    b = graph([node("Identity", ["s"], ["so"], "acc"), node("Identity", ["s"], ["y"], "id")],
              [vi("s", (3,))], [vi("so", (3,)), vi("y", (3,))], name="body")
    n.attribute.append(attr("body", AttributeProto.GRAPH, g=b))
    write("scan_body_inputs.onnx", model(graph([n], [vi("s0", (3,)), vi("xs", (4, 3))],
                                               [vi("sN", (3,)), vi("ys", (4, 3))])),
          "node 'scan' (Scan): the body takes 1 inputs, but the node's 1 state and 1 scan input(s) need 2")
    n = node("Scan", ["s0", "xs"], ["sN", "ys"], "scan")
    n.attribute.append(attr("body", AttributeProto.GRAPH, g=b))
    write("scan_no_num_scan_inputs.onnx", model(graph([n], [vi("s0", (3,)), vi("xs", (4, 3))],
                                                      [vi("sN", (3,)), vi("ys", (4, 3))])),
          "node 'scan' (Scan): num_scan_inputs -1 does not fit the node's 2 inputs")
    write("loop_one_input.onnx", loop_model(body(2, 1), ins=("M",), outs=()),
          "node 'loop' (Loop): takes at least 2 inputs at opset 13")
    write("loop_state_empty.onnx", loop_model(body(3, 2), ins=("M", "cond", ""), outs=("vN",)),
          "node 'loop' (Loop): input 2 is one of a variadic list and cannot be empty")
    with_in = graph([node("Not", ["x"], ["b"], "n")], [vi("x", (), TensorProto.BOOL)], [vi("b", (), TensorProto.BOOL)],
                    name="then")
    write("if_branch_with_inputs.onnx", if_model(with_in, bool_branch("else")),
          "node 'if' (If): branch 'then_branch' takes 1 inputs, If branches take none")
    inner = graph([node("Relu", ["nope"], ["b"], "inner")], [], [vi("b", (), TensorProto.BOOL)], name="then")
    write("subgraph_dangling.onnx", if_model(inner, bool_branch("else")),
          "node 'inner' (Relu): input 'nope' is not defined")
    # the If's branch captures 'late', which is computed from the If's output
    then = graph([node("Not", ["late"], ["b"], "cap")], [], [vi("b", (), TensorProto.BOOL)], name="then")
    n = node("If", ["c"], ["o"], "if")
    n.attribute.append(attr("then_branch", AttributeProto.GRAPH, g=then))
    n.attribute.append(attr("else_branch", AttributeProto.GRAPH, g=bool_branch("else")))
    write("subgraph_capture_cycle.onnx",
          model(graph([n, node("Not", ["o"], ["late"], "after")], [vi("c", (), TensorProto.BOOL)],
                      [vi("late", (), TensorProto.BOOL)])),
          "nodes 'if' (If), 'after' (Not) form a cycle")


# ---- model-local functions ----
def functions():
    def fn(name, nodes, ins=("x",), outs=("y",)):
        f = FunctionProto()
        f.name = name
        f.domain = "local"
        f.input.extend(ins)
        f.output.extend(outs)
        f.node.extend(nodes)
        o = f.opset_import.add()
        o.domain = ""
        o.version = 13
        return f

    def call(fname, name="call"):
        return model(graph([node(fname, ["X"], ["Y"], name, domain="local")], [vi("X")], [vi("Y")]),
                     functions=fs, extra_opsets=[("local", 1)])

    fs = [fn("F", [node("F", ["x"], ["y"], "again", domain="local")])]
    write("function_recursive.onnx", call("F"), "functions call each other deeper than 64 levels")
    fs = [fn("F", [node("G", ["x"], ["y"], "f2g", domain="local")]),
          fn("G", [node("F", ["x"], ["y"], "g2f", domain="local")])]
    write("function_mutual_recursion.onnx", call("F"), "functions call each other deeper than 64 levels")
    # F_k calls F_{k-1} twice: 2^40 nodes once inlined
    fs = [fn("F0", [node("Relu", ["x"], ["y"], "r")])]
    for k in range(1, 41):
        fs.append(fn("F%d" % k, [node("F%d" % (k - 1), ["x"], ["t"], "a", domain="local"),
                                  node("F%d" % (k - 1), ["t"], ["y"], "b", domain="local")]))
    write("function_expansion_bomb.onnx", call("F40"),
          "node 'call' (F40): functions expand to more than 1048576 nodes")
    fs = [fn("F", [node("Relu", ["x"], ["t"], "r")])]
    write("function_output_undefined.onnx", call("F"), "node 'call' (F): function output F is never defined")
    fs = [fn("F", [node("Relu", ["nope"], ["y"], "r")])]
    write("function_dangling_input.onnx", call("F"), "node 'r' (Relu): input 'nope' is not defined")
    fs = [fn("F", [node("Relu", ["x"], ["y"], "r")], ins=())]
    write("function_too_many_inputs.onnx", call("F"), "node 'call' (F): more inputs than function 'F' takes")
    fs = [fn("F", [node("Relu", ["x"], ["y"], "r")])]
    fs[0].opset_import[0].version = 29
    write("function_opset_newer_than_known.onnx", call("F"),
          "function 'F' imports ai.onnx opset 29")


# ---- valid models with ops lantern does not know: import lists them, exits 2 ----
def unsupported():
    m = model(graph([node("FooBarOp", ["X"], ["Y"], "f")], [vi("X")], [vi("Y")]))
    write("unknown_op.onnx", m, "1 node(s) use ops lantern cannot run",
          "stdout:FooBarOp (domain ai.onnx, node 'f'): not an op lantern knows")
    m = model(graph([node("Relu", ["X"], ["T"], "r"), node("Relu", ["T"], ["Y"], "x", domain="com.example")],
                    [vi("X")], [vi("Y")]), extra_opsets=[("com.example", 1)])
    write("unknown_domain.onnx", m, "1 node(s) use ops lantern cannot run",
          "stdout:Relu (domain com.example, node 'x'): not an op lantern knows")
    then = graph([node("Frobnicate", ["c"], ["b"], "deep")], [], [vi("b", (), TensorProto.BOOL)], name="then")
    write("unknown_op_in_subgraph.onnx", if_model(then, bool_branch("else")), "1 node(s) use ops lantern cannot run",
          "stdout:Frobnicate (domain ai.onnx, node 'deep')")


# ---- tensor files for `lantern run inputs/relu.onnx --input X=FILE` ----
def npy(header, data=b"", version=1):
    h = header.encode()
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<H", len(h)) + h + data


def inputs():
    write("inputs/relu.onnx", relu_model())
    good = np.arange(6, dtype=np.float32).tobytes()
    raw8 = bytes(range(8))
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }"
    full = npy(hdr % "2, 3", good)
    write("inputs/npy_truncated_header.npy", full[:40], "truncated .npy header")
    write("inputs/npy_short_data.npy", npy(hdr % "2, 3", good[:12]), ".npy data has 12 bytes, its shape needs 24")
    write("inputs/npy_long_data.npy", npy(hdr % "2, 3", good + b"xx"), ".npy data has 26 bytes, its shape needs 24")
    write("inputs/npy_empty.npy", b"", "not a .npy file (bad magic)")
    write("inputs/npy_bad_magic.npy", b"PK\x03\x04" + full[4:], "not a .npy file (bad magic)")
    write("inputs/npy_bad_version.npy", full[:6] + b"\x09" + full[7:], "unknown .npy version 9")
    write("inputs/npy_shape_overflow.npy", npy(hdr % "4294967296, 4294967296, 4294967296"),
          ".npy shape overflows")
    write("inputs/npy_huge_shape_no_data.npy", npy(hdr % "100000, 100000"),
          ".npy data has 0 bytes, its shape needs 40000000000")
    write("inputs/npy_bad_shape.npy", npy(hdr % "2, x", good), "bad .npy shape")
    write("inputs/npy_negative_dim.npy", npy(hdr % "-2, 3", good), "bad .npy shape")
    write("inputs/npy_rank9.npy", npy(hdr % "1, 1, 1, 1, 1, 1, 1, 1, 1", good[:4]), "bad .npy shape")
    write("inputs/npy_no_shape.npy", npy("{'descr': '<f4', 'fortran_order': False, }", good),
          "bad .npy header (no shape)")
    write("inputs/npy_unicode.npy", npy("{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 32),
          ".npy element type '<U4' is not supported")
    t = tensor("X", F, [2, 3], raw=good).SerializeToString()
    write("inputs/pb_truncated.pb", t[:len(t) - 5], "not an ONNX TensorProto")
    write("inputs/pb_raw_short.pb", tensor("X", F, [2, 3], raw=good[:20]), "tensor: raw_data has 20 bytes")
    write("inputs/pb_negative_dim.pb", tensor("X", F, [-2, 3], raw=good), "tensor has negative dim -2")
    write("inputs/pb_external.pb", ext_tensor("X", [2, 3], location="x.bin"), "tensor: external data is not allowed here")
    write("inputs/pb_string_raw.pb", tensor("X", TensorProto.STRING, [1], raw=raw8),
          "tensor: string tensors keep their data in string_data")
    write("inputs/pb_huge_no_data.pb", tensor("X", F, [1 << 31]), "tensor holds 0 values but its dims need 2147483648")


# ---- valid models for the fuzzer's seed corpus (tests/fuzz/seeds): features
# the ONNX test data does not use ----
def fuzz_seeds():
    seeds = os.path.join(HERE, "..", "fuzz", "seeds")
    f = FunctionProto()
    f.name, f.domain = "Shifted", "local"
    f.input.extend(["x", "b"])
    f.output.append("y")
    f.attribute.append("alpha")
    lr = node("LeakyRelu", ["x"], ["t"], "lr")
    lr.attribute.append(attr("alpha", AttributeProto.FLOAT, ref_attr_name="alpha"))
    f.node.extend([lr, node("Add", ["t", "b"], ["y"], "add")])
    o = f.opset_import.add()
    o.version = 13
    call1 = node("Shifted", ["X", "B"], ["T"], "call1", domain="local", alpha=0.5)
    call2 = node("Shifted", ["T", "B"], ["Y"], "call2", domain="local", alpha=0.25)
    b = tensor("B", F, [3], floats=[0.5, -1.0, 2.0])
    m = model(graph([call1, call2], [vi("X")], [vi("Y")], inits=[b]), functions=[f], extra_opsets=[("local", 1)])
    write("../fuzz/seeds/lantern_function.onnx", m)
    s = helper.make_sparse_tensor(tensor("S", F, [2], floats=[1.5, -2.0]), tensor("", TensorProto.INT64, [2, 2],
                                  raw=np.array([0, 1, 1, 2], np.int64).tobytes()), [2, 3])
    m = model(graph([node("Add", ["X", "S"], ["Y"], "add")], [vi("X")], [vi("Y")], sparse=[s]))
    write("../fuzz/seeds/lantern_sparse.onnx", m)
    t = tensor("names", TensorProto.STRING, [2])
    t.string_data.extend([b"alpha", b"beta"])
    c = node("Constant", [], ["Y"], "c")
    c.attribute.append(attr("value", AttributeProto.TENSOR, t=t))
    write("../fuzz/seeds/lantern_strings.onnx", model(graph([c], [], [vi("Y", (2,), TensorProto.STRING)])))


# Inputs the fuzzer found (tests/fuzz): kept byte for byte; listed here so
# that the manifest keeps their expectations.
FUZZ_CASES = [
]


def main():
    not_models()
    truncated()
    envelope()
    tensors()
    external()
    sparse()
    structure()
    attributes()
    control()
    functions()
    unsupported()
    inputs()
    fuzz_seeds()
    for name, expect in FUZZ_CASES:
        if not os.path.exists(os.path.join(HERE, name)):
            sys.exit("missing fuzz regression input " + name)
        manifest.append((name, expect))
    names = [n for n, _ in manifest]
    for name, expect in manifest:  # run.cmake reads the manifest as CMake strings
        assert not set(";[]\\$\"") & set(expect), (name, expect)
    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        f.write("# Generated by make_corpus.py: FILE  TEXT\n"
                "# `lantern import FILE` (FILE.onnx) or `lantern run inputs/relu.onnx --input X=FILE`\n"
                "# (inputs/*.npy, *.pb) must exit 2 with one stderr line naming FILE and holding TEXT;\n"
                "# TEXT starting with stdout: is looked for on stdout instead.\n")
        for name, expect in manifest:
            f.write("%s  %s\n" % (name, expect))
    print("%d files, %d expectations" % (len(set(names)), len(manifest)))


if __name__ == "__main__":
    main()
