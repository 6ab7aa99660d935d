"""Writes tests/data/padding/: a token classifier with two embeddings that
have padding rows (PyTorch's padding_idx), one of them tied to the output
projection, exported by the TorchScript exporter; a batch of 32 token
sequences (padding tokens at both padding rows, many of them) with labels;
PyTorch's gradients of the batch-mean softmax cross-entropy (grads/), and
its parameters after 3 steps of SGD with momentum 0.9 and weight decay 0.01
at lr 0.1 on three such batches (sgd/). Every array is float32 or int64.
Also loop_embed.onnx (below): a table looked up inside a Loop body.

Run with Debian's python3 (torch 1.13, onnx 1.12):
    /usr/bin/python3 tests/data/make_padding_model.py
"""
import os

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "padding")
V, D, B, T = 40, 16, 32, 10


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D, padding_idx=0)
        self.aux = nn.Embedding(V, D, padding_idx=-1)  # row V-1
        self.mix = nn.Linear(D, D)

    def forward(self, ids):
        h = torch.tanh(self.mix(self.tok(ids) + self.aux(ids)))
        h = h.mean(dim=1)
        return h @ self.tok.weight.t()  # the output projection is tok's table


def batch(rng):
    ids = rng.integers(0, V, size=(B, T))
    ids[rng.random((B, T)) < 0.25] = 0
    ids[rng.random((B, T)) < 0.15] = V - 1
    y = rng.integers(0, V, size=(B,))
    return ids.astype(np.int64), y.astype(np.int64)


def main():
    torch.manual_seed(7)
    rng = np.random.default_rng(11)
    m = Tagger()
    with torch.no_grad():  # padding rows that are not zero, as after training
        m.tok.weight[0].uniform_(-0.5, 0.5)
        m.aux.weight[V - 1].uniform_(-0.5, 0.5)
    os.makedirs(os.path.join(OUT, "grads"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "sgd"), exist_ok=True)
    ids, y = batch(rng)
    torch.onnx.export(m, (torch.from_numpy(ids),), os.path.join(OUT, "tagger.onnx"), input_names=["ids"],
                      output_names=["logits"], dynamic_axes={"ids": {0: "batch", 1: "len"}}, opset_version=13,
                      do_constant_folding=False)
    np.save(os.path.join(OUT, "ids.npy"), ids)
    np.save(os.path.join(OUT, "y.npy"), y)
    loss = nn.functional.cross_entropy(m(torch.from_numpy(ids)), torch.from_numpy(y))
    m.zero_grad()
    loss.backward()
    np.save(os.path.join(OUT, "grads", "loss.npy"), np.array(loss.item(), dtype=np.float32))
    for name, p in m.named_parameters():
        np.save(os.path.join(OUT, "grads", name + ".npy"), p.grad.numpy().astype(np.float32))
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    for s in range(3):
        ids, y = batch(rng)
        np.save(os.path.join(OUT, "sgd", "ids%d.npy" % s), ids)
        np.save(os.path.join(OUT, "sgd", "y%d.npy" % s), y)
        opt.zero_grad()
        nn.functional.cross_entropy(m(torch.from_numpy(ids)), torch.from_numpy(y)).backward()
        opt.step()
    for name, p in m.named_parameters():
        np.save(os.path.join(OUT, "sgd", name + ".npy"), p.detach().numpy().astype(np.float32))
    loop_model()
    print("wrote", OUT)


def loop_model():
    """loop_embed.onnx: an embedding looked up inside a Loop body, one token
    a step: y = sum over t of tanh(E[ids[t]] * w); E [V, 6] float32, ids
    int64 [n]. The gradient of the table comes from the body's Gather."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    e = numpy_helper.from_array(rng.uniform(-1, 1, (V, 6)).astype(np.float32), "E")
    w = numpy_helper.from_array(rng.uniform(-1, 1, (6,)).astype(np.float32), "w")
    body = helper.make_graph(
        [helper.make_node("Gather", ["ids", "t"], ["tok"], axis=0),
         helper.make_node("Gather", ["E", "tok"], ["row"], axis=0),
         helper.make_node("Mul", ["row", "w"], ["rw"]),
         helper.make_node("Tanh", ["rw"], ["th"]),
         helper.make_node("Add", ["acc_in", "th"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("t", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [6])])
    zero = numpy_helper.from_array(np.zeros(6, np.float32), "zero")
    graph = helper.make_graph(
        [helper.make_node("Shape", ["ids"], ["n"]),
         helper.make_node("Squeeze", ["n"], ["n0"]),
         helper.make_node("Constant", [], ["yes"], value=helper.make_tensor("yes", TensorProto.BOOL, [], [True])),
         helper.make_node("Loop", ["n0", "yes", "zero"], ["acc"], body=body)],
        "loop_embed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [6])],
        [e, w, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lantern-tests")
    import onnx
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, "loop_embed.onnx"))
    ids = rng.integers(0, V, size=(24,))
    ids[::3] = 0
    np.save(os.path.join(OUT, "loop_ids.npy"), ids.astype(np.int64))


if __name__ == "__main__":
    main()
