"""Test data for ir/split_merged.c (tests/unit/test_split_merged.c).

torch's dynamo exporter (torch.onnx.export(..., dynamo=True), the default
since torch 2.9) optimises the graph it writes and merges initializers that
hold equal values. This script exports a freshly initialised network that
way and stores what PyTorch makes of three SGD steps on fixed data, so the
test can check that lantern trains the source module's separate tensors:

  fresh.onnx      the network: two blocks of LayerNorm, Linear, BatchNorm1d
                  (every norm scale and running variance is ones, every norm
                  bias and running mean zeros: all merged), then two
                  deep-copied Linear layers (equal random weights: merged),
                  then a head whose bias starts at zero (the exporter
                  drops it; lantern gives it back)
  x.npy, y.npy    32 samples of 8 features, labels 0..3
  ref/NAME.npy    every parameter and running statistic after 3 steps of
                  SGD (lr 0.1, batch 8, softmax cross-entropy, in order)
  gn.onnx         Conv, GroupNorm, ReLU twice, then a head: the exporter
                  folds each GroupNorm's weight and bias, reshaped to
                  [C, 1, 1], into constants (val_N: ones, zeros) that both
                  GroupNorms read; gn_ref/NAME.npy after 3 SGD steps on
                  gx.npy, gy.npy (16 images of 3x6x6, labels 0..3)
  dec.onnx        a fresh two-layer nn.TransformerDecoder (d 32, 4 heads)
                  on a learned memory: its layers' equal weights and biases
                  merged, one Split of the merged in_proj_bias serving both
                  cross-attentions, out_proj biases dropped; dx.npy, dy.npy
                  (24 sequences of 5 x 32, labels 0..3) and dec_logits.npy,
                  PyTorch's outputs on dx[:8] after 3 SGD steps
  buf.onnx        Linear, times a registered float buffer, RMSNorm (written
                  out as Pow, ReduceMean, Add, Sqrt, Div, Mul by its weight
                  of ones), Linear: the buffer stays fixed in training
  rot.onnx        two layers that scale their output by a cos table computed
                  from a registered inv_freq buffer (a rotary embedding's
                  shape): the exporter folds the table into an initializer
                  both layers' Mul read, which stays fixed
  tie.onnx        a random 4x4 weight two modules of different names read
                  (a tie the source meant: stays one tensor)
  ones_tie.onnx   the same with a weight of ones (split, as a merged one)
  folded.onnx     Conv, BatchNorm2d, ReLU, Linear as the default export
                  writes it: the fresh BatchNorm folded into the Conv (whose
                  own bias the fold keeps) and the zero bias of the Linear
                  dropped: lantern gives both back (named in notes)
  ts_folded.onnx  the same network from the TorchScript exporter in eval
                  mode (its default): the BatchNorm folded into the Conv,
                  whose weight is then onnx::Conv_N (named in a note)
  twonorm.onnx    two blocks that normalise their input three times (three
                  LayerNorms, as GPT-NeoX's parallel block does twice) and a
                  shared context twice (two RMSNorms written out, the second
                  block's normalising the same context again): fresh, the
                  norms of one tensor compute the same thing, and the
                  exporter keeps one node of each that all their readers
                  read; twonorm_ref/NAME.npy after 3 SGD steps on x.npy,
                  y.npy
  fxnames.onnx    modules that read their tensors themselves, in one module
                  path: a GRN (ConvNeXt V2) whose weight and bias both start
                  at zero, and attention written with F.linear over its qkv
                  and proj layers' zero biases; only the nodes' torch.fx
                  calls tell which tensor each node read; fxnames_ref/NAME.npy
                  after 3 SGD steps on x.npy, y.npy
  twice.onnx      a block of two Linear layers applied twice to a sequence
                  (ALBERT's sharing): the exporter folds each product's
                  transpose of a weight into an initializer of its own, two
                  equal copies per weight (of more than 1024 values, which
                  the exporter does not merge), which train as one tensor;
                  twice_logits.npy, PyTorch's outputs on x[:8] after 3 SGD
                  steps on x.npy, y.npy (as sequences of 2 x 4)
  bnfirst.onnx    Conv1d, BatchNorm1d twice: the merged initializers take
                  the first BatchNorm's names (b1.weight holds every scale
                  and running variance, b1.bias every bias and running
                  mean), so that BatchNorm reads one tensor at two inputs;
                  bnfirst_ref/NAME.npy after 3 SGD steps on x.npy, y.npy
                  (as 2 channels of 4)
  relbias.onnx    two attention layers over 4 positions that add a relative
                  position bias: a learned table of 7 distances x 2 heads
                  gathered through a buffer of indices (Swin's, T5's), which
                  the exporter folds into one (1, 2, 4, 4) tensor of copies;
                  relbias_logits.npy, PyTorch's outputs on x[:8] after 3 SGD
                  steps on x.npy, y.npy (as 4 positions of 2), and
                  relbias_table.npy, the first layer's gathered table then
  unfold.onnx     Conv (no bias), BatchNorm2d, ReLU; Conv, BatchNorm2d of
                  eps 1e-3 and momentum 0.01 with a residual; Linear (no
                  bias), BatchNorm1d: exported in training mode, each
                  BatchNorm is folded into the product before it, and
                  lantern gives it back; unfold_ref/NAME.npy after 3 SGD
                  steps on x.npy, y.npy (as 2 x 2 x 2 images)
  bngamma.onnx    Conv (no bias, 16 channels), BatchNorm2d whose scales
                  are drawn from N(0, 0.02) (as Hugging Face's MobileViT
                  draws them): folded, not a fresh BatchNorm, so it stays
                  folded (with a note)
  unfold_bias.onnx  unfold.onnx's network with bias=True on its first Conv
                  and its Linear, exported in eval mode (the fx calls are
                  _native_batch_norm_legit_no_training): the BatchNorms come
                  back all the same; unfold_bias_ref/NAME.npy after 3 SGD
                  steps in training mode
  bnbias_trained.onnx  Conv (bias=True), BatchNorm2d that PyTorch trained
                  for 20 steps, exported in eval mode: stays folded
  clone.onnx      a layer that applies a clone of its bias (Swin V2's qkv
                  bias), exported with optimize=False: the file has an
                  Identity from the bias to the clone, which stays, so the
                  bias trains under its own name; clone_ref/NAME.npy after
                  3 SGD steps on x.npy, y.npy

Run with a Python that has torch >= 2.9, onnxscript and onnx >= 1.16:
  python make_merged.py [OUTDIR]
"""
import copy
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(out, "ref"), exist_ok=True)
torch.manual_seed(7)


def sgd3(model, x, y, b):
    """Three SGD steps (lr 0.1, softmax cross-entropy) on x, y in order, b a step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for s in range(3):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x[b * s:b * s + b]), y[b * s:b * s + b]).backward()
        opt.step()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 8)
        self.bn = torch.nn.BatchNorm1d(8)

    def forward(self, x):
        return self.bn(torch.relu(self.fc(self.ln(x))))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.h = torch.nn.ModuleList([Block(), Block()])
        one = torch.nn.Linear(8, 8)
        self.c = torch.nn.ModuleList([copy.deepcopy(one) for _ in range(2)])
        self.head = torch.nn.Linear(8, 4)
        torch.nn.init.zeros_(self.head.bias)  # dropped by the exporter's optimizer

    def forward(self, x):
        for b in self.h:
            x = b(x)
        for c in self.c:
            x = torch.tanh(c(x))
        return self.head(x)


net = Net().train()
x = torch.randn(32, 8)
y = torch.randint(0, 4, (32,))
np.save(os.path.join(out, "x.npy"), x.numpy())
np.save(os.path.join(out, "y.npy"), y.numpy())
torch.onnx.export(net, (x[:8],), os.path.join(out, "fresh.onnx"), dynamo=True, external_data=False,
                  training=torch.onnx.TrainingMode.TRAINING,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
sgd3(net, x, y, 8)
for k, v in net.state_dict().items():
    if "num_batches" not in k:
        np.save(os.path.join(out, "ref", k + ".npy"), v.numpy())


def tie_model(path, w):
    """y = x @ a.weight + x @ a.weight read by nodes of modules a and b."""
    sig = ("\n# inputs\np_a_weight: PARAMETER target='a.weight'\n"
           "p_b_weight: PARAMETER target='b.weight'\nx: USER_INPUT\n\n# outputs\nadd: USER_OUTPUT\n")
    nodes = []
    for i, mod in enumerate(["a", "b"]):
        n = helper.make_node("MatMul", ["x", "a.weight"], ["m%d" % i], name="node_mm_%d" % i)
        e = n.metadata_props.add()
        e.key, e.value = "pkg.torch.onnx.name_scopes", "['', '%s', 'linear_%d']" % (mod, i)
        nodes.append(n)
    nodes.append(helper.make_node("Add", ["m0", "m1"], ["add"], name="node_add"))
    g = helper.make_graph(nodes, "tie", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("add", TensorProto.FLOAT, [2, 4])],
                          [onnx.numpy_helper.from_array(w, "a.weight")])
    e = g.metadata_props.add()
    e.key, e.value = "pkg.torch.export.ExportedProgram.graph_signature", sig
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    onnx.checker.check_model(m)
    onnx.save(m, path)


tie_model(os.path.join(out, "tie.onnx"), np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32))
tie_model(os.path.join(out, "ones_tie.onnx"), np.ones((4, 4), np.float32))


class Folded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 2)
        torch.nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


torch.onnx.export(Folded().train(), (torch.randn(2, 3, 6, 6),), os.path.join(out, "folded.onnx"), dynamo=True,
                  external_data=False, training=torch.onnx.TrainingMode.TRAINING,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
torch.onnx.export(Folded().eval(), (torch.randn(2, 3, 6, 6),), os.path.join(out, "ts_folded.onnx"), dynamo=False,
                  input_names=["x"], dynamic_axes={"x": {0: "batch"}})


class GN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.gn1 = torch.nn.GroupNorm(2, 8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.gn2 = torch.nn.GroupNorm(2, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.gn1(self.c1(x)))
        h = torch.relu(self.gn2(self.c2(h)))
        return self.head(h.mean((2, 3)))


gn = GN()
gx = torch.randn(16, 3, 6, 6)
gy = torch.randint(0, 4, (16,))
np.save(os.path.join(out, "gx.npy"), gx.numpy())
np.save(os.path.join(out, "gy.npy"), gy.numpy())
torch.onnx.export(gn, (gx[:4],), os.path.join(out, "gn.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
sgd3(gn, gx, gy, 4)
os.makedirs(os.path.join(out, "gn_ref"), exist_ok=True)
for k, v in gn.state_dict().items():
    np.save(os.path.join(out, "gn_ref", k + ".npy"), v.numpy())


class Dec(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.dec = torch.nn.TransformerDecoder(layer, 2)
        self.mem = torch.nn.Parameter(torch.randn(1, 3, 32) * 0.5)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.dec(x, self.mem.expand(x.shape[0], -1, -1)).mean(1))


dec = Dec()
dx = torch.randn(24, 5, 32)
dy = torch.randint(0, 4, (24,))
np.save(os.path.join(out, "dx.npy"), dx.numpy())
np.save(os.path.join(out, "dy.npy"), dy.numpy())
torch.onnx.export(dec, (dx[:8],), os.path.join(out, "dec.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
sgd3(dec, dx, dy, 8)
with torch.no_grad():
    np.save(os.path.join(out, "dec_logits.npy"), dec(dx[:8]).numpy())


class Buf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.register_buffer("scale", torch.rand(8) + 0.5)
        self.norm = torch.nn.RMSNorm(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.norm(self.a(x) * self.scale))


torch.onnx.export(Buf(), (x[:8],), os.path.join(out, "buf.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))


class RotLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x, cos):
        return x + self.fc(x) * cos


class Rot(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([RotLayer(), RotLayer()])
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)), persistent=False)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        freqs = torch.outer(torch.arange(6).float(), self.inv_freq)
        cos = torch.cat([freqs, freqs], -1).cos()
        for layer in self.layers:
            x = layer(x, cos)
        return self.head(x.mean(1))


torch.onnx.export(Rot(), (torch.randn(2, 6, 8),), os.path.join(out, "rot.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))


def export_trained(model, name, optimize=True, eval_mode=False):
    """Exports a fresh model as name.onnx (in eval mode if asked), trains it
    three steps on x, y and stores its tensors as name_ref/NAME.npy."""
    model.train(not eval_mode)
    torch.onnx.export(model, (x[:8],), os.path.join(out, name + ".onnx"), dynamo=True, external_data=False,
                      optimize=optimize, dynamic_shapes=({0: torch.export.Dim("batch")},))
    model.train()
    sgd3(model, x, y, 8)
    os.makedirs(os.path.join(out, name + "_ref"), exist_ok=True)
    for k, v in model.state_dict().items():
        if "num_batches" not in k:
            np.save(os.path.join(out, name + "_ref", k + ".npy"), v.detach().numpy())


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class ThreeNorms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_a, self.ln_b, self.ln_c = (torch.nn.LayerNorm(8) for _ in range(3))
        self.r1, self.r2 = RMSNorm(8), RMSNorm(8)
        self.fa, self.fb, self.fc, self.g1, self.g2 = (torch.nn.Linear(8, 8) for _ in range(5))

    def forward(self, x, ctx):
        h = x + self.fa(self.ln_a(x)) + self.fb(torch.relu(self.ln_b(x))) + torch.tanh(self.fc(self.ln_c(x)))
        return h + self.g1(self.r1(ctx)) * torch.sigmoid(self.g2(self.r2(ctx)))


class TwoNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.ctx = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        self.blocks = torch.nn.ModuleList([ThreeNorms(), ThreeNorms()])
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        h, c = self.inp(x), self.ctx(x)
        for b in self.blocks:
            h = b(h, c)
        return self.head(h)


tn = TwoNorm()
export_trained(tn, "twonorm")


class GRN(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(d))
        self.bias = torch.nn.Parameter(torch.zeros(d))

    def forward(self, x):
        g = x.norm(dim=-1, keepdim=True)
        return self.weight * (x * g / (g.mean(dim=0, keepdim=True) + 1e-6)) + self.bias + x


class FunctionalAttn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.proj = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        torch.nn.init.zeros_(self.qkv.bias)
        torch.nn.init.zeros_(self.proj.bias)

    def forward(self, x):
        f = torch.nn.functional.linear
        return f(torch.relu(f(x, self.qkv.weight, self.qkv.bias)), self.proj.weight, self.proj.bias)


class FxNames(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 8)
        self.grn = GRN(8)
        self.a1, self.a2 = FunctionalAttn(), FunctionalAttn()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = self.grn(self.inp(x))
        h = h + self.a1(h)
        return self.head(h + self.a2(h))


fx = FxNames()
export_trained(fx, "fxnames")


class CloneBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        b = self.lin.bias.clone()
        return self.head(torch.relu(torch.nn.functional.linear(x, self.lin.weight, b)))


cb = CloneBias()
export_trained(cb, "clone", optimize=False)


class Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.head = torch.nn.Linear(4, 32), torch.nn.Linear(32, 4)
        self.ffn, self.out = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32)

    def forward(self, x):
        h = self.emb(x.reshape(x.shape[0], 2, 4))
        for _ in range(2):
            h = h + self.out(torch.nn.functional.gelu(self.ffn(h)))
        return self.head(h.mean(1))


tw = Twice()
torch.onnx.export(tw, (x[:8],), os.path.join(out, "twice.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
sgd3(tw, x, y, 8)
with torch.no_grad():
    np.save(os.path.join(out, "twice_logits.npy"), tw(x[:8]).numpy())


class BnFirst(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv1d(2, 8, 3, padding=1), torch.nn.BatchNorm1d(8)
        self.c2, self.b2 = torch.nn.Conv1d(8, 8, 3, padding=1), torch.nn.BatchNorm1d(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = self.b1(torch.relu(self.c1(x.reshape(x.shape[0], 2, 4))))
        return self.head(self.b2(torch.relu(self.c2(h))).mean(2))


bf = BnFirst()
export_trained(bf, "bnfirst")


class RelBiasAttn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.proj = torch.nn.Linear(2, 12), torch.nn.Linear(4, 2)
        self.table = torch.nn.Parameter(torch.randn(7, 2) * 0.5)
        pos = torch.arange(4)
        self.register_buffer("index", (pos[:, None] - pos[None, :] + 3).reshape(-1), persistent=False)

    def bias(self):
        return self.table[self.index].reshape(4, 4, 2).permute(2, 0, 1).unsqueeze(0)

    def forward(self, h):
        q, k, v = self.qkv(h).reshape(h.shape[0], 4, 3, 2, 2).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) + self.bias(), -1)
        return h + self.proj((a @ v).transpose(1, 2).reshape(h.shape[0], 4, 4))


class RelBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([RelBiasAttn(), RelBiasAttn()])
        self.head = torch.nn.Linear(2, 4)

    def forward(self, x):
        h = x.reshape(x.shape[0], 4, 2)
        for layer in self.layers:
            h = layer(h)
        return self.head(h.mean(1))


rb = RelBias()
torch.onnx.export(rb, (x[:8],), os.path.join(out, "relbias.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
sgd3(rb, x, y, 8)
with torch.no_grad():
    np.save(os.path.join(out, "relbias_logits.npy"), rb(x[:8]).numpy())
    np.save(os.path.join(out, "relbias_table.npy"), rb.layers[0].bias().numpy())


class Unfold(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(2, 6, 3, padding=1, bias=False), torch.nn.BatchNorm2d(6)
        self.c2 = torch.nn.Conv2d(6, 6, 3, padding=1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(6, eps=1e-3, momentum=0.01)
        self.fc, self.b3 = torch.nn.Linear(6, 8, bias=False), torch.nn.BatchNorm1d(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x.reshape(x.shape[0], 2, 2, 2))))
        h = torch.relu(self.b2(self.c2(h)) + h)
        return self.head(torch.relu(self.b3(self.fc(h.mean((2, 3))))))


export_trained(Unfold(), "unfold")


class BnGamma(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.b = torch.nn.Conv2d(2, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16)
        torch.nn.init.normal_(self.b.weight, std=0.02)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.b(self.c(x.reshape(x.shape[0], 2, 2, 2)))).mean((2, 3)))


torch.onnx.export(BnGamma(), (x[:8],), os.path.join(out, "bngamma.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))


class UnfoldBias(Unfold):
    """Unfold whose first Conv and whose Linear are made with bias=True."""

    def __init__(self):
        super().__init__()
        self.c1, self.fc = torch.nn.Conv2d(2, 6, 3, padding=1), torch.nn.Linear(6, 8)


export_trained(UnfoldBias(), "unfold_bias", eval_mode=True)


class BnTrained(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.b = torch.nn.Conv2d(2, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.b(self.c(x.reshape(x.shape[0], 2, 2, 2)))).mean((2, 3)))


bt = BnTrained()
opt = torch.optim.SGD(bt.parameters(), lr=0.1)
for s in range(20):
    opt.zero_grad()
    xs = torch.randn(16, 8) * 2 + 1
    torch.nn.functional.cross_entropy(bt(xs), torch.randint(0, 4, (16,))).backward()
    opt.step()
bt.eval()
torch.onnx.export(bt, (x[:8],), os.path.join(out, "bnbias_trained.onnx"), dynamo=True, external_data=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
