"""Writes tests/data/folded/ for tests/unit/test_folded_params.c: small
models laid out as torch's dynamo exporter writes them with its optimizer
on (torch.onnx.export(..., dynamo=True), optimize=True by default), whose
constant folding replaced a parameter by an initializer of its own. Each
file carries the metadata that exporter records: the graph signature
(GraphProto field 16, pkg.torch.export.ExportedProgram.graph_signature),
each node's module path and torch.fx node (NodeProto field 9), and on the
folded initializer's value_info what the optimizer folded it from
(ValueInfoProto field 4, pkg.onnxscript.optimizer.folded_from). The IR 8
schema of onnx 1.12 names none of these fields, so they are written as
raw protobuf fields beside the ones it knows; their keys and text are
those of torch 2.15 / onnxscript 0.7.2 exports of the same modules.

Every model is out = (x @ lin.weight.T + lin.bias) * G, x of [batch, 8],
where G is the folded initializer (8 values):

  rep.onnx        G = neg = -exp(A_log), A_log = log(1..4) twice (Mamba's
                  A_log initialisation): 4 values repeated; folded_from
                  ['A_log', 'exp']. A fold lantern cannot undo.
  exp.onnx        the same with A_log drawn at random: no value repeats.
  norecord.onnx   rep.onnx without the folded_from record (an exporter
                  that does not write it): nothing shows how G was made.
  table.onnx      G = unsqueeze = table[index] of a learned table of 3
                  values through an index buffer (a relative position
                  bias's shape): folded_from names the table, the buffer,
                  the index and view nodes; G trains as the table.
  copy.onnx       G = repeat = a.repeat(2) of a parameter a of 4 values:
                  only copying operations, no gather; G trains as a.
  gathermul.onnx  G = mul_1 = 16 * sigmoid(table[index]) (Swin V2's bias):
                  a gather, then operations that compute new values.
  scale.onnx      G = exp = logit_scale.exp(), one number (CLIP's learned
                  temperature): folded_from ['logit_scale'], the operation
                  in the initializer's own name; G trains as logit_scale.
  view.onnx       G = view = A_log.view(8), A_log as in rep.onnx: a fold
                  that copies each entry once, so its repeated values are
                  A_log's own, each trained apart as PyTorch trains them.
  product.onnx    G = val_12 = the product of a linear(q, attn.in_proj_weight)
                  on a learned query table q expanded over a batch of 2
                  (DETR's first self-attention on its queries), read by the
                  Add of the bias, whose fx call is that linear: the record
                  names both parameters and the copying nodes between, the
                  file has neither. A fold lantern cannot undo.
  cat.onnx        G = val_5 = the concatenation of two biases the file
                  lacks (lstm.bias_ih and lstm.bias_hh, as an LSTM's are
                  joined), read by a product that is no linear: copies of
                  two parameters, each entry once, trained as found.
  posgather.onnx  G = embedding_1 = pos.weight[arange(8) + 2] (GPT-2's
                  position table at an offset): folded_from ['add',
                  'arange', 'pos.weight', 'unsqueeze', 'val_0'], the gather
                  in the initializer's own name, the add on the index: the
                  rows the model reads, each once, trained apart.
  x.npy, y.npy    8 samples of 8 inputs and 8 targets (float32)
  embedding.onnx  not a fold: an nn.Embedding(10, 4, padding_idx=3) whose
                  Gather's fx call records the padding row, with
                  ids.npy (pads in the last two columns) and labels.npy
                  (tests/unit/test_padding_rows.c)

Run with /usr/bin/python3 (onnx 1.12, numpy):
    python3 tests/data/make_folded_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from pb_fields import save_torch_model, with_fields

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "folded")


def signature(params, buffers=()):
    lines = ["", "# inputs"]
    for p in params:
        lines.append("p_%s: PARAMETER target='%s'" % (p.replace(".", "_").lower(), p))
    for b in buffers:
        lines.append("b_%s: BUFFER target='%s' persistent=False" % (b.replace(".", "_").lower(), b))
    lines += ["x: USER_INPUT", "", "# outputs", "mul: USER_OUTPUT", ""]
    return "\n".join(lines)


def fx(name, target, args):
    return "%%%s : [num_users=1] = call_function[target=torch.ops.aten.%s](args = (%s), kwargs = {})" % (
        name, target, ", ".join("%" + a for a in args))


def write(path, g_name, g_values, params, buffers=(), folded_from=None, reader=None):
    rng = np.random.RandomState(3)
    w = (rng.standard_normal((8, 8)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(8) * 0.1).astype(np.float32)
    g = np.asarray(g_values, np.float32)
    g = g.reshape((1, 8) if g_name == "unsqueeze" else (8,) if g.size == 8 else ())
    inits = [numpy_helper.from_array(w, "lin.weight"), numpy_helper.from_array(b, "lin.bias"),
             numpy_helper.from_array(g, g_name)]
    gemm = helper.make_node("Gemm", ["x", "lin.weight", "lin.bias"], ["linear"], name="node_linear", transB=1)
    gemm = with_fields(gemm, 9, [
        ("pkg.torch.onnx.name_scopes", "['', 'lin', 'linear']"),
        ("pkg.torch.onnx.fx_node", fx("linear", "linear.default", ["x", "p_lin_weight", "p_lin_bias"]))])
    mul = helper.make_node("Mul", ["linear", g_name], ["out"], name="node_mul")
    mul = with_fields(mul, 9, [
        ("pkg.torch.onnx.name_scopes", "['', 'mul']"),
        ("pkg.torch.onnx.fx_node", fx("mul", "mul.Tensor", ["linear", g_name]))])
    nodes = [gemm, mul]
    if reader is not None:
        # G read by a node of its own (reader: its scope, fx name, aten
        # target, fx arguments and an initializer added to G) before the Mul
        scope, name, target, args, bias_name, bias = reader
        inits.append(numpy_helper.from_array(bias, bias_name))
        add = helper.make_node("Add", [g_name, bias_name], ["proj"], name="node_" + name)
        add = with_fields(add, 9, [
            ("pkg.torch.onnx.name_scopes", repr(["", scope, name])),
            ("pkg.torch.onnx.fx_node", fx(name, target, args))])
        mul.input[1] = "proj"
        nodes = [gemm, add, mul]
    vi = helper.make_tensor_value_info(g_name, TensorProto.FLOAT, list(g.shape))
    if folded_from is not None:
        vi = with_fields(vi, 4, [("pkg.onnxscript.optimizer.folded_from", repr(sorted(folded_from)))])
    graph = helper.make_graph(
        nodes, "main_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 8])], inits, value_info=[vi])
    graph = with_fields(graph, 16, [
        ("pkg.torch.export.ExportedProgram.graph_signature", signature(params, buffers)),
        ("pkg.torch.export.ExportedProgram.range_constraints", "{}")])
    save_torch_model(graph, os.path.join(OUT, path), 17)


os.makedirs(OUT, exist_ok=True)
rng = np.random.RandomState(5)
np.save(os.path.join(OUT, "x.npy"), rng.standard_normal((8, 8)).astype(np.float32))
np.save(os.path.join(OUT, "y.npy"), rng.standard_normal((8, 8)).astype(np.float32))

a_log = np.tile(np.log(np.arange(1, 5, dtype=np.float32)), 2)
lin = ["lin.weight", "lin.bias"]
write("rep.onnx", "neg", -np.exp(a_log), ["A_log"] + lin, folded_from=["A_log", "exp"])
write("exp.onnx", "neg", -np.exp(rng.standard_normal(8).astype(np.float32) * 0.5), ["A_log"] + lin,
      folded_from=["A_log", "exp"])
write("norecord.onnx", "neg", -np.exp(a_log), ["A_log"] + lin)
table = np.array([0.3125, -0.6875, 1.125], np.float32)
index = np.array([0, 1, 2, 1, 0, 2, 2, 1])
write("table.onnx", "unsqueeze", table[index], ["table"] + lin, ["index_buf"],
      folded_from=["index", "index_buf", "table", "val_1", "val_2", "view"])
write("copy.onnx", "repeat", np.tile(np.array([0.5, -1.5, 2.25, 0.75], np.float32), 2), ["a"] + lin,
      folded_from=["a", "val_0"])
write("gathermul.onnx", "mul_1", 16 / (1 + np.exp(-table[index])), ["table"] + lin, ["index_buf"],
      folded_from=["index", "index_buf", "sigmoid", "table", "val_1", "val_2", "view"])
write("view.onnx", "view", a_log, ["A_log"] + lin, folded_from=["A_log", "val_0"])
write("scale.onnx", "exp", np.exp(np.float32(0.75)), ["logit_scale"] + lin, folded_from=["logit_scale"])
q = np.array([0.5, -0.25, 1.5, 0.75], np.float32)
write("product.onnx", "val_12", np.tile(q, 2), ["query.weight", "attn.in_proj_weight", "attn.in_proj_bias"] + lin,
      folded_from=["attn.in_proj_weight", "expand", "query.weight", "transpose_1", "unsqueeze", "val_10", "val_11"],
      reader=("attn", "linear", "linear.default", ["transpose_1", "p_attn_in_proj_weight", "p_attn_in_proj_bias"],
              "attn.in_proj_bias", np.full(8, 0.125, np.float32)))
write("cat.onnx", "val_5", np.concatenate([q, -q * 0.5]), ["lstm.bias_ih", "lstm.bias_hh"] + lin,
      folded_from=["lstm.bias_hh", "lstm.bias_ih"],
      reader=("lstm", "lstm", "lstm.input", ["x", "p_lstm_bias_ih", "p_lstm_bias_hh"],
              "lstm.shift", np.full(8, 0.125, np.float32)))

# BLOOM's ALiBi slopes: a constant folded from arange and pow, recorded so,
# in a file where a tied embedding's second name (emb.weight) leaves a
# parameter unaccounted for: the slopes stay fixed
write("slopes.onnx", "unsqueeze_1", 2.0 ** -np.arange(1, 9, dtype=np.float32), ["emb.weight"] + lin,
      folded_from=["arange", "full", "pow_1", "val_10"])


def embedding_model(path):
    """embedding.onnx: logits = (emb[ids] summed over the sequence) @ fc.weight.T,
    as dynamo writes nn.Embedding(10, 4, padding_idx=3): the Gather's fx call
    carries padding_idx as its third argument. ids.npy (int64 [8, 5], the last
    two columns the pad id 3) and labels.npy come with it."""
    r = np.random.RandomState(11)
    emb = (r.standard_normal((10, 4)) * 0.5).astype(np.float32)
    fc = (r.standard_normal((3, 4)) * 0.5).astype(np.float32)
    gather = with_fields(helper.make_node("Gather", ["emb.weight", "ids"], ["embedding"], name="node_embedding"), 9, [
        ("pkg.torch.onnx.name_scopes", "['', 'emb', 'embedding']"),
        ("pkg.torch.onnx.fx_node",
         "%embedding : [num_users=1] = call_function[target=torch.ops.aten.embedding.default]"
         "(args = (%p_emb_weight, %ids, 3), kwargs = {})")])
    nodes = [gather, helper.make_node("ReduceSum", ["embedding", "axes"], ["pooled"], keepdims=0),
             helper.make_node("Gemm", ["pooled", "fc.weight"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "main_graph", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 5])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(emb, "emb.weight"), numpy_helper.from_array(fc, "fc.weight"),
         numpy_helper.from_array(np.array([1], np.int64), "axes")])
    graph = with_fields(graph, 16, [
        ("pkg.torch.export.ExportedProgram.graph_signature", signature(["emb.weight", "fc.weight"])),
        ("pkg.torch.export.ExportedProgram.range_constraints", "{}")])
    save_torch_model(graph, os.path.join(OUT, path), 18)
    ids = r.randint(0, 10, (8, 5)).astype(np.int64)
    ids[:, 3:] = 3
    np.save(os.path.join(OUT, "ids.npy"), ids)
    np.save(os.path.join(OUT, "labels.npy"), r.randint(0, 3, 8).astype(np.int64))


embedding_model("embedding.onnx")
# GPT-2's position embedding at arange(T) + 2, folded into embedding_1 (the
# rows the model reads, each once): the record's add and arange made the
# index, the gather is embedding_1's own operation
write("posgather.onnx", "embedding_1", np.array([0.75, -0.5, 1.25, 0.125, -1.0, 0.625, 0.25, -0.375], np.float32),
      ["pos.weight"] + lin, folded_from=["add", "arange", "pos.weight", "unsqueeze", "val_0"])
