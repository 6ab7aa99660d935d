"""Test data for what torch's dynamo exporter merges or drops inside
control-flow bodies (ir/split_merged.c, ir/restore_bias.c;
tests/unit/test_split_merged.c).

A torch.cond branch, a while_loop body and a scan combine function become
the If, Loop and Scan bodies of the file. Their nodes have no module path
there, and their torch.fx calls read the body graph's placeholders
(%arg3_1), which stand for the operands of the higher-order op named in
the fx call of the If, Loop or Scan node (%p_ln_scan_weight). Both files
are fresh and exported for a batch of 8 samples of x.npy (make_merged.py's
32 samples of 8 features, labels y.npy 0..3):

  body_ln.onnx     a LayerNorm outside, then a scan whose step, a while_loop
                   whose body and a torch.cond whose true branch each apply
                   a LayerNorm of their own: the optimizer merges all four
                   scales (ones) into ln_in.weight and all four biases
                   (zeros) into ln_in.bias, which every body reads
  body_bias.onnx   Linear layers whose bias starts at zero (as Hugging Face
                   initialises them) in a scan's step, a while_loop's body,
                   both branches of a torch.cond and the head: the
                   optimizer drops each bias (RemoveOptionalBiasFromGemm);
                   the two branches' Gemms have one node name
  NAME_ref/P.npy   parameter P after 3 SGD steps (lr 0.1, batch 8,
                   softmax cross-entropy, in order) on x.npy, y.npy
  NAME_grad/P.npy  the gradient of the sum of the outputs on x[:8] with
                   respect to P, at the fresh weights (zeros for a branch
                   not taken)

PyTorch's reference runs the same module with Python loops and an if in
place of scan, while_loop and cond (the same computation; eager autograd
through while_loop is not what is under test).

Run with a Python that has torch >= 2.9 (higher-order ops scan and
while_loop), onnxscript and onnx >= 1.16; writes new files beside this
script (make_merged.py's x.npy and y.npy are read, not written):
  python make_body_merged.py [OUTDIR]
"""
import os
import sys

import numpy as np
import torch
from torch import nn
from torch._higher_order_ops import scan, while_loop

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else here
x = torch.from_numpy(np.load(os.path.join(here, "x.npy")))
y = torch.from_numpy(np.load(os.path.join(here, "y.npy")))


class BodyLn(nn.Module):
    def __init__(self):
        super().__init__()
        self.hop = True
        self.wx = nn.Linear(8, 16)
        self.ln_in = nn.LayerNorm(16)
        self.V = nn.Parameter(torch.randn(4, 16) * 0.3)
        self.U = nn.Parameter(torch.randn(16, 16) * 0.2)
        self.ln_scan = nn.LayerNorm(16)
        self.fw = nn.Linear(16, 16)
        self.ln_while = nn.LayerNorm(16)
        self.ln_then = nn.LayerNorm(16)
        self.head = nn.Linear(16, 4)

    def step(self, h, ut):
        hn = torch.tanh(self.ln_scan(ut @ self.V + h @ self.U))
        return hn, hn.clone()

    def loop(self, h):
        return torch.tanh(self.ln_while(self.fw(h)))

    def forward(self, x):
        xs = self.ln_in(self.wx(x)).reshape(x.shape[0], 4, 4)
        h = torch.zeros(x.shape[0], 16)
        if self.hop:
            h, _ = scan(self.step, h, xs, dim=1)
            _, h = while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, self.loop(h)),
                              (torch.zeros((), dtype=torch.int64), h))
            h = torch.cond(h.sum() > 0, lambda h: self.ln_then(h) * 2.0, lambda h: h - 1.0, (h,))
        else:
            for t in range(xs.shape[1]):
                h, _ = self.step(h, xs[:, t])
            for _ in range(2):
                h = self.loop(h)
            h = self.ln_then(h) * 2.0 if bool(h.sum() > 0) else h - 1.0
        return self.head(h)


class BodyBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.hop = True
        self.wx = nn.Linear(8, 16)
        self.step_fc = nn.Linear(4, 16)
        self.U = nn.Parameter(torch.randn(16, 16) * 0.2)
        self.fw = nn.Linear(16, 16)
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)
        for layer in (self.step_fc, self.fw, self.a, self.b, self.head):
            nn.init.zeros_(layer.bias)

    def step(self, h, ut):
        hn = torch.tanh(self.step_fc(ut) + h @ self.U)
        return hn, hn.clone()

    def loop(self, h):
        return torch.tanh(self.fw(h)) + h

    def forward(self, x):
        xs = torch.tanh(self.wx(x)).reshape(x.shape[0], 4, 4)
        h = torch.zeros(x.shape[0], 16)
        if self.hop:
            h, _ = scan(self.step, h, xs, dim=1)
            _, h = while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, self.loop(h)),
                              (torch.zeros((), dtype=torch.int64), h))
            h = torch.cond(h.sum() > 0, lambda h: torch.tanh(self.a(h)), lambda h: torch.sigmoid(self.b(h)), (h,))
        else:
            for t in range(xs.shape[1]):
                h, _ = self.step(h, xs[:, t])
            for _ in range(2):
                h = self.loop(h)
            h = torch.tanh(self.a(h)) if bool(h.sum() > 0) else torch.sigmoid(self.b(h))
        return self.head(h)


def make(model, name):
    model.hop = True
    torch.onnx.export(model, (x[:8],), os.path.join(out, name + ".onnx"), dynamo=True, external_data=False)
    model.hop = False
    os.makedirs(os.path.join(out, name + "_grad"), exist_ok=True)
    model.zero_grad()
    model(x[:8]).sum().backward()
    for k, p in model.named_parameters():
        g = p.grad if p.grad is not None else torch.zeros_like(p)  # a branch not taken
        np.save(os.path.join(out, name + "_grad", k + ".npy"), g.numpy())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for s in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[8 * s:8 * s + 8]), y[8 * s:8 * s + 8]).backward()
        opt.step()
    os.makedirs(os.path.join(out, name + "_ref"), exist_ok=True)
    for k, v in model.state_dict().items():
        np.save(os.path.join(out, name + "_ref", k + ".npy"), v.numpy())


torch.manual_seed(11)
make(BodyLn(), "body_ln")
make(BodyBias(), "body_bias")
