"""Writes tests/data/tied/: a small language-model head whose output
projection is tied to its embedding table (one tensor in PyTorch),
exported by torch's dynamo exporter, which folds the projection's
transpose of the table into an initializer of its own; three batches of
32 token sequences with labels, and PyTorch's parameters after 3 steps of
SGD with momentum 0.9 at lr 0.1 on them (sgd/, by the exported names of
the table and of the other parameters, in the file's layout); names.txt
says which initializer is the table and which its folded copy.

Needs torch 2.x with onnxscript (a venv from PyPI):
    /tmp/venv-bench/bin/python tests/data/make_tied_model.py
"""
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tied")
V, D, B, T = 50, 16, 32, 8


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.mix = nn.Linear(D, D)
        self.out = nn.Linear(D, V, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, ids):
        h = torch.tanh(self.mix(self.emb(ids)))
        return self.out(h).mean(dim=1)  # per-token logits [B, T, V]: a MatMul of the table's transpose


def export(m, path, ids):
    torch.onnx.export(m, (torch.from_numpy(ids),), path, input_names=["ids"], output_names=["logits"], dynamo=True,
                      dynamic_shapes={"ids": {0: torch.export.Dim("batch")}})
    model = onnx.load(path)
    # one file, no external data
    onnx.save(model, path)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def main():
    torch.manual_seed(3)
    rng = np.random.default_rng(4)
    os.makedirs(os.path.join(OUT, "sgd"), exist_ok=True)
    batches = [(rng.integers(0, V, size=(B, T)).astype(np.int64), rng.integers(0, V, size=(B,)).astype(np.int64))
               for _ in range(3)]
    m = Head()
    inits = export(m, os.path.join(OUT, "tied.onnx"), batches[0][0])
    # the exported name of each torch parameter: the initializer holding its values
    # (the exporter may store a Linear's weight transposed: then so is the file)
    names, transposed = {}, {}
    for n, p in m.named_parameters():
        v = p.detach().numpy()
        hit = [k for k, a in inits.items() if a.shape == v.shape and np.array_equal(a, v)]
        if len(hit) != 1 and v.ndim == 2:
            hit = [k for k, a in inits.items() if a.shape == v.T.shape and np.array_equal(a, v.T)]
            transposed[n] = True
        assert len(hit) == 1, (n, hit)
        names[n] = hit[0]
    copies = [k for k, a in inits.items() if a.shape == (D, V) and np.array_equal(a, inits[names["emb.weight"]].T)]
    assert len(copies) == 1, "expected the exporter's folded transpose of the table"
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for s, (ids, y) in enumerate(batches):
        np.save(os.path.join(OUT, "sgd", "ids%d.npy" % s), ids)
        np.save(os.path.join(OUT, "sgd", "y%d.npy" % s), y)
        opt.zero_grad()
        nn.functional.cross_entropy(m(torch.from_numpy(ids)), torch.from_numpy(y)).backward()
        opt.step()
    for n, p in m.named_parameters():
        v = p.detach().numpy().astype(np.float32)
        np.save(os.path.join(OUT, "sgd", names[n] + ".npy"), v.T.copy() if transposed.get(n) else v)
    with open(os.path.join(OUT, "names.txt"), "w") as f:
        f.write("table %s\ncopy %s\n" % (names["emb.weight"], copies[0]))
    print("wrote", OUT, names, copies)


if __name__ == "__main__":
    main()
