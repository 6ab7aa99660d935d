"""Writes tests/data/external/: one small classifier saved by onnx's own
save_model with every initializer as external data, twice: ext.onnx (all
in ext.onnx.data beside it) and sub.onnx (in weights/w.bin, a subfolder);
plain.onnx, the same model with its tensors inline; sparse.onnx (with
sparse.onnx.data), the model with a sparse initializer S added; and d.npz,
32 samples (x float32 [32, 8], y int64 [32] in 0..3) to train them on.

    h = Relu(MatMul(x, W1) + b1)
    y = MatMul(h, W2) + MatMul(h, K) + b2    (sparse.onnx: + MatMul(h, S))

W1 [8, 64] (2048 bytes) and W2 [64, 4] (1024 bytes: the size from which
lantern writes an initializer as external data) are large, b1 [64] (256
bytes) and b2 [4] small; the Constant K [64, 4] is a node attribute,
which stays inline (as onnx's convert_attribute=False keeps it; lantern
refuses an attribute tensor as external data). S [64, 4] is a sparse
initializer (values float32 [256], 1024 bytes; indices int64 [256]),
whose two tensors the script moves to the end of sparse.onnx.data by hand
(onnx's save_model leaves sparse initializers inline; onnx's checker
cannot infer shapes through one, so it has a file of its own).
tests/unit/test_export_external.c reads them.

Run with the onnx the other generators use:
    /usr/bin/python3 tests/data/make_external_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "external")


def model(with_sparse=False):
    rng = np.random.default_rng(7)
    W1 = (rng.standard_normal((8, 64)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(64) * 0.1).astype(np.float32)
    W2 = (rng.standard_normal((64, 4)) * 0.3).astype(np.float32)
    K = (rng.standard_normal((64, 4)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(4) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
        helper.make_node("Relu", ["h1"], ["h"], name="relu"),
        helper.make_node("MatMul", ["h", "W2"], ["y0"], name="mm2"),
        helper.make_node("Constant", [], ["K"], name="k", value=numpy_helper.from_array(K, "K")),
        helper.make_node("MatMul", ["h", "K"], ["y1"], name="mmk"),
        helper.make_node("Add", ["y0", "y1"], ["y2"], name="add2"),
        helper.make_node("Add", ["y2", "b2"], ["y"], name="add3"),
    ]
    if with_sparse:
        nodes[-1:] = [helper.make_node("MatMul", ["h", "S"], ["y3"], name="mms"),
                      helper.make_node("Add", ["y2", "y3"], ["y4"], name="add4"),
                      helper.make_node("Add", ["y4", "b2"], ["y"], name="add3")]
    S = (rng.standard_normal(256) * 0.1).astype(np.float32)
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(S, "S"),
                                       numpy_helper.from_array(np.arange(256, dtype=np.int64), "S_indices"), [64, 4])
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    g = helper.make_graph(nodes, "external", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits,
                          sparse_initializer=[sparse] if with_sparse else None)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_external_models")
    m.ir_version = 7
    return m


def sparse_to_external(path, data):
    """The sparse initializer's values and indices appended to data."""
    m = onnx.load(path, load_external_data=False)
    with open(os.path.join(os.path.dirname(path), data), "ab") as f:
        for t in (m.graph.sparse_initializer[0].values, m.graph.sparse_initializer[0].indices):
            offset = f.tell()
            f.write(t.raw_data)
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", data), ("offset", str(offset)), ("length", str(f.tell() - offset))):
                e = t.external_data.add()
                e.key, e.value = k, v
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def main():
    os.makedirs(os.path.join(OUT, "weights"), exist_ok=True)
    for f in ("ext.onnx", "ext.onnx.data", "sub.onnx", "weights/w.bin", "plain.onnx", "sparse.onnx", "sparse.onnx.data"):
        if os.path.exists(os.path.join(OUT, f)):
            os.remove(os.path.join(OUT, f))  # save_model appends to a data file that exists
    onnx.save_model(model(), os.path.join(OUT, "plain.onnx"))
    onnx.save_model(model(), os.path.join(OUT, "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.onnx.data", size_threshold=0)
    onnx.save_model(model(), os.path.join(OUT, "sub.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights/w.bin", size_threshold=0)
    onnx.save_model(model(True), os.path.join(OUT, "sparse.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="sparse.onnx.data", size_threshold=0)
    sparse_to_external(os.path.join(OUT, "sparse.onnx"), "sparse.onnx.data")
    rng = np.random.default_rng(8)
    np.savez(os.path.join(OUT, "d.npz"), x=rng.standard_normal((32, 8)).astype(np.float32),
             y=rng.integers(0, 4, 32).astype(np.int64))


if __name__ == "__main__":
    main()
