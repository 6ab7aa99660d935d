#!/usr/bin/python3
"""Training-mode whole-network gradient references (Debian's python3-torch).

Three small networks shaped like the families whose BatchNormalization
gradients matter: a ResNet (stem with max pooling, a plain block and a
downsampling block with a 1x1 projection), a DenseNet (a dense block whose
layers concatenate, a transition), a ShuffleNet (channel split, depthwise
convolutions, channel shuffle, a downsampling unit). Each is exported with
the TorchScript exporter as a user would (eval mode with TrainingMode.PRESERVE so BatchNormalization stays a node, default initialisation,
no constant folding: equal initializers come out merged behind Identity
nodes) and every BatchNormalization is switched to training_mode=1.

For each batch size, the images are N(0,1) with a seed chosen so that no
pre-activation of a ReLU lies within MARGIN of zero and no max-pooling
window with a positive maximum has two values within MARGIN (in float64): a float32 forward then
takes the same branches as the float64 reference, and the gradients can be
compared at 1e-3. The gradient of every parameter, of the batch-mean softmax
cross-entropy in train() mode, in float64, is saved as float32 in
<net>/b<N>/<param>.npy beside x.npy, y.npy and loss.npy, and the running
statistics after that batch in <net>/running_b<N>/.
Run: /usr/bin/python3 tests/data/nets/make_nets.py [--running]"""
import os, re, sys
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = [2, 4, 8, 16, 32]
SIZE = 16
MARGIN = 2e-5


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.layer1 = Basic(8, 8, 1)
        self.layer2 = Basic(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, 2 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(2 * growth)
        self.conv2 = nn.Conv2d(2 * growth, growth, 3, 1, 1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        return self.conv2(F.relu(self.norm2(self.conv1(F.relu(self.norm1(x))))))


class DenseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.norm0 = nn.BatchNorm2d(8)
        self.layers = nn.ModuleList([DenseLayer(8 + 4 * i, 4) for i in range(3)])
        self.tnorm = nn.BatchNorm2d(20)
        self.tconv = nn.Conv2d(20, 10, 1, bias=False)
        self.norm5 = nn.BatchNorm2d(10)
        self.fc = nn.Linear(10, 10)

    def forward(self, x):
        feats = [F.max_pool2d(F.relu(self.norm0(self.conv0(x))), 2)]
        for l in self.layers:
            feats.append(l(feats))
        x = F.avg_pool2d(self.tconv(F.relu(self.tnorm(torch.cat(feats, 1)))), 2)
        x = F.relu(self.norm5(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def shuffle(x, groups):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class Unit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                                         nn.BatchNorm2d(cin), nn.Conv2d(cin, half, 1, bias=False),
                                         nn.BatchNorm2d(half), nn.ReLU())
        bin_ = cin if stride > 1 else half
        self.branch2 = nn.Sequential(nn.Conv2d(bin_, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(),
                                     nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
                                     nn.BatchNorm2d(half), nn.Conv2d(half, half, 1, bias=False),
                                     nn.BatchNorm2d(half), nn.ReLU())

    def forward(self, x):
        if self.stride == 1:
            a, b = x.chunk(2, dim=1)
            y = torch.cat((a, self.branch2(b)), 1)
        else:
            y = torch.cat((self.branch1(x), self.branch2(x)), 1)
        return shuffle(y, 2)


class ShuffleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.stage = nn.Sequential(Unit(8, 16, 2), Unit(16, 16, 1))
        self.conv5 = nn.Sequential(nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU())
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = self.conv5(self.stage(self.conv1(x)))
        return self.fc(x.mean([2, 3]))


def margins(model, x):
    """smallest |ReLU input| and smallest gap between a max-pool window's two largest values, float64"""
    worst = [np.inf]
    orig_relu, orig_mp = F.relu, F.max_pool2d

    def relu(t, inplace=False):
        worst[0] = min(worst[0], t.detach().abs().min().item())
        return orig_relu(t)

    def max_pool2d(t, k, *a, **kw):
        n, c, h, w = t.shape
        win = t.detach().reshape(n, c, h // k, k, w // k, k).permute(0, 1, 2, 4, 3, 5).reshape(-1, k * k)
        top = win.topk(2, dim=1).values
        live = top[:, 0] > 0  # a window of ReLU zeros sends nothing back either way
        if live.any():
            worst[0] = min(worst[0], (top[live, 0] - top[live, 1]).min().item())
        return orig_mp(t, k, *a, **kw)

    F.relu, F.max_pool2d = relu, max_pool2d
    nn.ReLU.forward = lambda self, t: relu(t)
    nn.MaxPool2d.forward = lambda self, t: max_pool2d(t, self.kernel_size)
    try:
        model(x)
    finally:
        F.relu, F.max_pool2d = orig_relu, orig_mp
        nn.ReLU.forward = lambda self, t: orig_relu(t)
        nn.MaxPool2d.forward = lambda self, t: orig_mp(t, self.kernel_size)
    return worst[0]


def export(model, path):
    model.eval()
    torch.onnx.export(model, torch.randn(2, 3, SIZE, SIZE), path, do_constant_folding=False, opset_version=15,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    mo = onnx.load(path)
    for n in mo.graph.node:
        if n.op_type == "BatchNormalization":
            for a in n.attribute:
                if a.name == "training_mode":
                    a.i = 1
            if not any(a.name == "training_mode" for a in n.attribute):
                n.attribute.append(onnx.helper.make_attribute("training_mode", 1))
    mo.producer_name = "make_nets.py"
    onnx.save(mo, path)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def running_stats(name, cls, seed):
    """<net>/running_b<N>/<module>.running_mean.npy and .running_var.npy: the
    running statistics after one train() forward in float64 of the freshly
    initialised network on b<N>/x.npy (PyTorch's momentum 0.1, unbiased batch
    variance for running_var)"""
    for b in BATCHES:
        torch.manual_seed(seed)
        net = cls().double().train()
        x = torch.from_numpy(np.load(os.path.join(HERE, name, "b%d" % b, "x.npy"))).double()
        with torch.no_grad():
            net(x)
        out = os.path.join(HERE, name, "running_b%d" % b)
        os.makedirs(out, exist_ok=True)
        for k, v in net.named_buffers():
            if k.endswith(".running_mean") or k.endswith(".running_var"):
                np.save(os.path.join(out, sanitize(k) + ".npy"), v.float().numpy())


def main():
    if "--running" in sys.argv:  # only the running statistics, from the saved inputs
        for name, cls, seed in (("resnet", ResNet, 1), ("densenet", DenseNet, 2), ("shufflenet", ShuffleNet, 3)):
            running_stats(name, cls, seed)
        return
    for name, cls, seed in (("resnet", ResNet, 1), ("densenet", DenseNet, 2), ("shufflenet", ShuffleNet, 3)):
        torch.manual_seed(seed)
        model = cls()
        ref = cls()
        ref.load_state_dict(model.state_dict())
        export(model, os.path.join(HERE, name + ".onnx"))
        ref = ref.double().train()
        for b in BATCHES:
            out = os.path.join(HERE, name, "b%d" % b)
            os.makedirs(out, exist_ok=True)
            for trial in range(5000):
                g = torch.Generator().manual_seed(1000 * b + trial)
                x = torch.randn(b, 3, SIZE, SIZE, generator=g, dtype=torch.float64).float().double()
                if margins(ref, x) > MARGIN:
                    break
            else:
                raise SystemExit("%s b%d: no input with a margin of %g" % (name, b, MARGIN))
            y = torch.randint(0, 10, (b,), generator=g)
            ref.zero_grad()
            loss = F.cross_entropy(ref(x), y)
            loss.backward()
            np.save(os.path.join(out, "x.npy"), x.float().numpy())
            np.save(os.path.join(out, "y.npy"), y.numpy())
            np.save(os.path.join(out, "loss.npy"), np.array(loss.item()))
            for k, p in ref.named_parameters():
                np.save(os.path.join(out, sanitize(k) + ".npy"), p.grad.float().numpy())
            print(name, b, "trial", trial, "loss", loss.item())
        running_stats(name, cls, seed)


if __name__ == "__main__":
    main()
