#!/usr/bin/python3
"""Writes models/treelstm.onnx: the binary (N-ary, N = 2) Tree-LSTM of Tai,
Socher and Manning 2015 ("Improved Semantic Representations From
Tree-Structured Long Short-Term Memory Networks", section 3.2) over ONE tree,
with a per-node softmax classifier (the sentiment setting of section 4.1).
Run with Debian's /usr/bin/python3 (torch 1.13, onnx 1.12); the .onnx it
writes is committed, nothing in the C build or tests runs this script.

Inputs (no batch axis; n = nodes of the tree):
  words    int64 [n]     word id of a leaf, -1 for an internal node
  children int64 [n, 2]  left and right child of a node, -1 for none
The nodes are numbered in topological order: every child has a smaller
index than its parent (post-order; make_trees.py writes them so). Output:
  logits   float [n, 5]  per-node class scores (softmax-cross-entropy loss)

Per node j with children l, r (a missing child contributes h = c = 0) and
x_j the word embedding of a leaf (0 for an internal node):
  [i; f_l; f_r; o; u] = W x_j + b + U [h_l; h_r]       (W: [emb, 5 hid], U: [2 hid, 5 hid])
  c_j = sigmoid(i) * tanh(u) + sigmoid(f_l) * c_l + sigmoid(f_r) * c_r
  h_j = sigmoid(o) * tanh(c_j)
  logits_j = h_j Wc + bc
As an ONNX graph: the input projection W x + b of all nodes is one MatMul
before the loop; a Loop over t = 0 .. n-1 carries H and C, both
[n + 1, hid] (row n stays zero: a child index -1 becomes n, so a missing
child gathers zeros with no mask inside the loop); each iteration gathers
the node's children's rows of H and C by index, computes the cell and writes
its h and c into row t with ScatterND. The classifier runs on H[0:n] after
the loop.

  /usr/bin/python3 models/make_treelstm.py [--out models/treelstm.onnx] [--check DIR [--lantern BIN]]

--check DIR checks the model at --out (writing it first only when it is
missing) on a random tree of make_trees.py (words.npy, children.npy, y.npy
go into DIR): the torch loop against a numpy float64 forward, the ONNX
model's forward in onnxruntime when it is importable, and with --lantern
`lantern run` (logits) and `lantern grad` (softmax cross-entropy loss and
every parameter's gradient against torch's autograd).
TorchTreeLSTM below is the same network as a per-node torch loop; the
benchmark (bench/torch_bench.py) trains it beside lantern."""
import argparse
import os
import sys

import numpy as np

VOCAB = 200   # words; ids 0 .. VOCAB-1 (see make_trees.py for the lexicon)
EMB = 300
HID = 150
CLASSES = 5
SEED = 12

HERE = os.path.dirname(os.path.abspath(__file__))


def init_params(seed=SEED):
    """Deterministic random weights, float32: embeddings N(0, 0.1^2), the
    cell's matrices and biases uniform(+-1/sqrt(hid)) as torch.nn.LSTM
    initialises them, the classifier uniform(+-1/sqrt(hid)) as nn.Linear."""
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(HID)

    def u(*shape):
        return rng.uniform(-k, k, shape).astype(np.float32)

    return {
        "E": (0.1 * rng.standard_normal((VOCAB, EMB))).astype(np.float32),
        "W": u(EMB, 5 * HID),
        "b": u(5 * HID),
        "U": u(2 * HID, 5 * HID),
        "Wc": u(HID, CLASSES),
        "bc": u(CLASSES),
    }


def build_onnx(p):
    from onnx import TensorProto, helper, numpy_helper
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    body = helper.make_graph(
        [helper.make_node("Gather", ["cidx", "t"], ["ch"], axis=0),          # [2]
         helper.make_node("Gather", ["H_in", "ch"], ["hc"], axis=0),         # [2, hid]
         helper.make_node("Gather", ["C_in", "ch"], ["cc"], axis=0),
         helper.make_node("Reshape", ["hc", "row2"], ["hflat"]),             # [1, 2 hid]
         helper.make_node("Reshape", ["cc", "row2"], ["cflat"]),
         helper.make_node("MatMul", ["hflat", "U"], ["hu"]),                 # [1, 5 hid]
         helper.make_node("Gather", ["XW", "t"], ["xw_t"], axis=0),          # [5 hid]
         helper.make_node("Add", ["hu", "xw_t"], ["g"]),
         helper.make_node("Split", ["g", "gate_split"], ["i_pre", "f_pre", "o_pre", "u_pre"], axis=1),
         helper.make_node("Sigmoid", ["i_pre"], ["i"]),
         helper.make_node("Sigmoid", ["f_pre"], ["f"]),                      # [1, 2 hid]: f_l, f_r
         helper.make_node("Sigmoid", ["o_pre"], ["o"]),
         helper.make_node("Tanh", ["u_pre"], ["u"]),
         helper.make_node("Mul", ["f", "cflat"], ["fc"]),
         helper.make_node("Split", ["fc", "half_split"], ["fc_l", "fc_r"], axis=1),
         helper.make_node("Mul", ["i", "u"], ["iu"]),
         helper.make_node("Add", ["iu", "fc_l"], ["c0"]),
         helper.make_node("Add", ["c0", "fc_r"], ["c"]),                     # [1, hid]
         helper.make_node("Tanh", ["c"], ["tc"]),
         helper.make_node("Mul", ["o", "tc"], ["h"]),
         helper.make_node("Reshape", ["t", "one_one"], ["tidx"]),            # [1, 1]
         helper.make_node("ScatterND", ["H_in", "tidx", "h"], ["H_out"]),
         helper.make_node("ScatterND", ["C_in", "tidx", "c"], ["C_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "treelstm_node",
        [helper.make_tensor_value_info("t", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("H_in", TensorProto.FLOAT, ["n1", HID]),
         helper.make_tensor_value_info("C_in", TensorProto.FLOAT, ["n1", HID])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("H_out", TensorProto.FLOAT, ["n1", HID]),
         helper.make_tensor_value_info("C_out", TensorProto.FLOAT, ["n1", HID])])
    zero_state = helper.make_tensor("zero_f", TensorProto.FLOAT, [1], [0.0])
    graph = helper.make_graph(
        [helper.make_node("Shape", ["words"], ["nvec"]),                     # [1]
         helper.make_node("Squeeze", ["nvec", "axis0"], ["M"]),              # scalar trip count
         # leaves look their word up; internal nodes (-1) get a zero input
         helper.make_node("Greater", ["words", "minus_one"], ["is_leaf"]),
         helper.make_node("Where", ["is_leaf", "words", "zero"], ["wid"]),
         helper.make_node("Gather", ["E", "wid"], ["emb"], axis=0),          # [n, emb]
         helper.make_node("Cast", ["is_leaf"], ["leaf_f"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["leaf_f", "axis1"], ["leaf_col"]),   # [n, 1]
         helper.make_node("Mul", ["emb", "leaf_col"], ["x"]),
         helper.make_node("MatMul", ["x", "W"], ["xw0"]),
         helper.make_node("Add", ["xw0", "b"], ["XW"]),                      # [n, 5 hid]
         # a missing child (-1) reads the zero row n of the states
         helper.make_node("Less", ["children", "zero"], ["no_child"]),
         helper.make_node("Where", ["no_child", "nvec", "children"], ["cidx"]),
         helper.make_node("Add", ["nvec", "one"], ["n1"]),
         helper.make_node("Concat", ["n1", "hid"], ["state_shape"], axis=0),
         helper.make_node("ConstantOfShape", ["state_shape"], ["H0"], value=zero_state),
         helper.make_node("ConstantOfShape", ["state_shape"], ["C0"], value=zero_state),
         helper.make_node("Loop", ["M", "", "H0", "C0"], ["HT", "CT"], body=body),
         helper.make_node("Slice", ["HT", "zero", "nvec", "zero"], ["Hn"]),  # [n, hid]
         helper.make_node("MatMul", ["Hn", "Wc"], ["lg"]),
         helper.make_node("Add", ["lg", "bc"], ["logits"])],
        "treelstm",
        [helper.make_tensor_value_info("words", TensorProto.INT64, ["n"]),
         helper.make_tensor_value_info("children", TensorProto.INT64, ["n", 2])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", CLASSES])],
        initializer=[numpy_helper.from_array(p[k], k) for k in ("E", "W", "b", "U", "Wc", "bc")] +
        [i64("minus_one", [-1]), i64("zero", [0]), i64("one", [1]), i64("axis0", [0]), i64("axis1", [1]),
         i64("hid", [HID]), i64("row2", [1, 2 * HID]), i64("one_one", [1, 1]),
         i64("gate_split", [HID, 2 * HID, HID, HID]), i64("half_split", [HID, HID])])
    m = helper.make_model(graph, producer_name="lantern-models", opset_imports=[helper.make_opsetid("", 13)])
    m.doc_string = ("Binary Tree-LSTM (Tai et al. 2015) over one tree: words int64 [n] (-1: internal node), "
                    "children int64 [n,2] (-1: none), nodes in topological order; logits [n,5]")
    return m


def torch_module(params=None):
    """The same network as a torch.nn.Module, a per-node loop (one tree per
    call). Imported by bench/torch_bench.py."""
    import torch

    class TorchTreeLSTM(torch.nn.Module):
        def __init__(self, p):
            super().__init__()
            for k, v in p.items():
                setattr(self, k, torch.nn.Parameter(torch.from_numpy(v.copy())))

        def forward(self, words, children):
            n = words.shape[0]
            leaf = words >= 0
            x = self.E[words.clamp(min=0)] * leaf.unsqueeze(1).to(self.E.dtype)
            xw = x @ self.W + self.b
            zero = xw.new_zeros(HID)
            hs, cs = [], []
            ch = children.tolist()
            for j in range(n):
                lft, rgt = ch[j]
                hl, cl = (hs[lft], cs[lft]) if lft >= 0 else (zero, zero)
                hr, cr = (hs[rgt], cs[rgt]) if rgt >= 0 else (zero, zero)
                g = xw[j] + torch.cat([hl, hr]) @ self.U
                i, fl, fr, o, u = g.split(HID)
                c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cl + torch.sigmoid(fr) * cr
                hs.append(torch.sigmoid(o) * torch.tanh(c))
                cs.append(c)
            return torch.stack(hs) @ self.Wc + self.bc

    return TorchTreeLSTM(params if params is not None else init_params())


def numpy_forward(p, words, children):
    """The network in plain numpy (float64), independent of torch."""
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    P = {k: v.astype(np.float64) for k, v in p.items()}
    n = len(words)
    H, C = np.zeros((n, HID)), np.zeros((n, HID))
    for j in range(n):
        x = P["E"][words[j]] if words[j] >= 0 else np.zeros(EMB)
        hcat = np.concatenate([H[k] if k >= 0 else np.zeros(HID) for k in children[j]])
        g = x @ P["W"] + P["b"] + hcat @ P["U"]
        i, fl, fr, o, u = np.split(g, 5)
        cl = C[children[j][0]] if children[j][0] >= 0 else 0
        cr = C[children[j][1]] if children[j][1] >= 0 else 0
        C[j] = sig(i) * np.tanh(u) + sig(fl) * cl + sig(fr) * cr
        H[j] = sig(o) * np.tanh(C[j])
    return H @ P["Wc"] + P["bc"]


def check(model_path, d, p, lantern):
    sys.path.insert(0, HERE)
    import subprocess
    import make_trees
    import torch
    rng = np.random.default_rng(5)
    lex = make_trees.lexicon(VOCAB, seed=make_trees.SEED)
    words, children, y = make_trees.random_tree(rng, lex, 11)
    os.makedirs(d, exist_ok=True)
    for k, v in (("words", words), ("children", children), ("y", y)):
        np.save(os.path.join(d, k + ".npy"), v)
    ref = numpy_forward(p, words, children)
    model = torch_module(p)
    tl = model(torch.from_numpy(words), torch.from_numpy(children))
    loss = torch.nn.functional.cross_entropy(tl, torch.from_numpy(y))
    loss.backward()
    np.save(os.path.join(d, "logits.npy"), tl.detach().numpy())
    print("tree of %d nodes; torch loop vs numpy float64: max |logit diff| %.3g"
          % (len(words), np.abs(tl.detach().numpy() - ref).max()))
    try:
        import onnxruntime as ort
        s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        out = s.run(None, {"words": words, "children": children})[0]
        print("onnxruntime %s vs numpy float64: max |logit diff| %.3g" % (ort.__version__, np.abs(out - ref).max()))
    except ImportError:
        print("onnxruntime not importable here: its forward not checked (run with a venv that has it)")
    if not lantern:
        return
    inputs = ["--input", "words=" + os.path.join(d, "words.npy"), "--input", "children=" + os.path.join(d, "children.npy")]
    subprocess.run([lantern, "run", model_path] + inputs + ["--output-dir", os.path.join(d, "run")], check=True,
                   stdout=subprocess.DEVNULL)
    out = np.load(os.path.join(d, "run", "logits.npy"))
    print("lantern run vs numpy float64: max |logit diff| %.3g" % np.abs(out - ref).max())
    r = subprocess.run([lantern, "grad", model_path] + inputs +
                       ["--loss", "softmax-cross-entropy", "--labels", os.path.join(d, "y.npy"),
                        "--output-dir", os.path.join(d, "grad")], check=True, capture_output=True, text=True)
    lt_loss = float(r.stdout.split("loss:")[1].split()[0])
    print("lantern grad loss %.7f, torch %.7f" % (lt_loss, loss.item()))
    for k, prm in model.named_parameters():
        g = np.load(os.path.join(d, "grad", k + ".npy"))
        t = prm.grad.numpy()
        print("  d%-3s max |lantern - torch| / max |torch| = %.2e" % (k, np.abs(g - t).max() / np.abs(t).max()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "treelstm.onnx"))
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--lantern", metavar="BIN", help="with --check: also compare lantern run and lantern grad")
    a = ap.parse_args()
    p = init_params()
    if not a.check or not os.path.exists(a.out):
        import onnx
        m = build_onnx(p)
        onnx.checker.check_model(m)
        onnx.save(m, a.out)
        print("wrote %s (%d bytes)" % (a.out, os.path.getsize(a.out)))
    if a.check:
        check(a.out, a.check, p, a.lantern)


if __name__ == "__main__":
    main()
