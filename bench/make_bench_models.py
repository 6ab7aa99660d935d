#!/usr/bin/python3
"""Writes the training-step benchmark's models and data (a benchmark, not a
test; nothing here is committed) into OUT (default build/bench_models):

  bench.txt           one model a line: NAME BATCH OPTIM LR (read by bench_train and torch_bench.py)
  NAME.onnx           the model lantern trains
  NAME.npz            a few batches: x (float32) and y (int64 labels), seeded; for the
                      TreeLSTM ragged words/children/y with their *_splits (one tree a step)
  NAME.pt             the torch state_dict the .onnx was exported from (generated models)

  model        input           batch  optimizer        what
  mlp          784             128    SGD momentum     models/mlp.onnx      (Fashion-MNIST batches)
  cnn          1x28x28         64     SGD momentum     models/cnn.onnx      (Fashion-MNIST)
  rnn_loop     28x28           128    SGD momentum     models/rnn_loop.onnx (Fashion-MNIST)
  lstm         28x28           128    SGD momentum     models/lstm.onnx     (Fashion-MNIST)
  squeezenet   3x32x32         64     SGD momentum     torchvision squeezenet1_1(num_classes=10)
  resnet18     3x32x32         64     SGD momentum     torchvision resnet18(num_classes=10), BatchNorm
                                                       on batch statistics (lantern's train mode)
  resnet50     3x32x32         64     SGD momentum     bench/make_resnet50.py's ResNet-50 with a 10-class
                                                       head (the GPU benchmark's; written only when named)
  transformer  28x28           128    Adam             pre-LN encoder: 28 tokens (image rows) of 28
                                                       features -> d 32, 2 blocks, 4 heads, GELU MLP
                                                       128, final LayerNorm, mean over tokens, fc 10
  video3d      3x8x32x32       16     SGD momentum     Video3D below: three Conv3d+BatchNorm3d+ReLU stages
                                                       with MaxPool3d, mean, fc 10 (written only when named)
  treelstm     one tree        1      Adagrad          models/treelstm.onnx (emb 300, hidden 150) on
                                                       trees of models/make_trees.py (10..30 words)

Exports: eval mode, TrainingMode.PRESERVE (the default EVAL folds each
BatchNormalization into its Conv) and do_constant_folding=False, so a
BatchNormalization stays a node with its running statistics as initializers, which lantern's training
mode (ir/train_mode.c) switches to batch statistics, as torch's train() does.
SqueezeNet's Dropout is exported in training mode (lantern drops too; so
its first-step loss differs from torch's by the dropout masks).
Weights: torch's default initialisation under fixed seeds; the .pt files give
torch_bench.py the same weights under any torch version.

  /usr/bin/python3 bench/make_bench_models.py [--out DIR] [--batches K] [NAME...]

Run it with Debian's python3 (torch 1.13, torchvision, onnx 1.12)."""
import argparse
import copy
import gzip
import inspect
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = os.path.join(ROOT, "models")
FASHION = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
sys.path.insert(0, MODELS)

# name, batch, optimizer, learning rate, per-sample input shape
CASES = [
    ("mlp", 128, "momentum", 0.01, (784,)),
    ("cnn", 64, "momentum", 0.01, (1, 28, 28)),
    ("rnn_loop", 128, "momentum", 0.01, (28, 28)),
    ("lstm", 128, "momentum", 0.01, (28, 28)),
    ("squeezenet", 64, "momentum", 0.01, (3, 32, 32)),
    ("resnet18", 64, "momentum", 0.01, (3, 32, 32)),
    ("resnet50", 64, "momentum", 0.01, (3, 32, 32)),
    ("mobilenet_v2", 64, "momentum", 0.01, (3, 32, 32)),
    ("efficientnet_b0", 64, "momentum", 0.01, (3, 32, 32)),
    ("shufflenet_v2", 64, "momentum", 0.01, (3, 32, 32)),
    ("regnet_x_400mf", 64, "momentum", 0.01, (3, 32, 32)),
    ("densenet121", 64, "momentum", 0.01, (3, 32, 32)),
    ("mobilenet_v3_small", 64, "momentum", 0.01, (3, 32, 32)),
    ("mnasnet0_5", 64, "momentum", 0.01, (3, 32, 32)),
    ("gru", 128, "momentum", 0.01, (28, 28)),
    ("textcls", 32, "adamw", 0.001, (64,)),
    ("vit", 64, "adam", 0.001, (3, 32, 32)),
    ("video3d", 16, "momentum", 0.01, (3, 8, 32, 32)),
    ("transformer", 128, "adam", 0.001, (28, 28)),
    ("treelstm", 1, "adagrad", 0.05, None),
]
SHIPPED = ("mlp", "cnn", "rnn_loop", "lstm", "treelstm")
TORCHVISION = ("mobilenet_v2", "efficientnet_b0", "shufflenet_v2", "regnet_x_400mf", "densenet121",
               "mobilenet_v3_small", "mnasnet0_5")
ON_REQUEST = ("resnet50", "gru", "vit", "textcls", "video3d") + TORCHVISION  # big: written (and listed in bench.txt) only when named
TREE_LEN = (10, 30)  # words per benchmark sentence (SST's sentences average about 19)


class Video3D(torch.nn.Module):
    """A small C3D-style clip classifier: three 3x3x3 Conv3d + BatchNorm3d +
    ReLU stages with max-pooling, global average, fc 10."""

    def __init__(self):
        super().__init__()
        nn = torch.nn

        def stage(ci, co, pool):
            layers = [nn.Conv3d(ci, co, 3, padding=1), nn.BatchNorm3d(co), nn.ReLU()]
            return nn.Sequential(*layers, nn.MaxPool3d(pool)) if pool else nn.Sequential(*layers)

        self.features = nn.Sequential(stage(3, 16, (1, 2, 2)), stage(16, 32, 2), stage(32, 64, None))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3, 4)))


class Block(torch.nn.Module):
    """Pre-LN transformer encoder block: x + attn(LN(x)), x + mlp(LN(x))."""

    def __init__(self, tokens, d, heads, ff):
        super().__init__()
        self.t, self.d, self.heads = tokens, d, heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, ff)
        self.fc2 = torch.nn.Linear(ff, d)

    def forward(self, x):
        t, d = self.t, self.d  # Python ints: constants in the export
        dh = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).reshape(-1, t, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * (1.0 / dh ** 0.5), dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(-1, t, d)
        x = x + self.proj(o)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TinyTransformer(torch.nn.Module):
    """28 tokens (the rows of a 28x28 image) of 28 features."""

    def __init__(self, tokens=28, feat=28, d=32, heads=4, blocks=2, ff=128, classes=10):
        super().__init__()
        self.inp = torch.nn.Linear(feat, d)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(tokens, d))
        self.blocks = torch.nn.ModuleList([Block(tokens, d, heads, ff) for _ in range(blocks)])
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        h = self.inp(x) + self.pos
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h).mean(dim=1))


class TinyViT(torch.nn.Module):
    """A small vision transformer: 4x4 patches of a 3x32x32 image (64
    tokens), d 64, 4 pre-LN blocks of 4 heads, mean-pooled."""

    def __init__(self, d=64, heads=4, blocks=4, ff=256, classes=10):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, d, 4, stride=4)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(64, d))
        self.blocks = torch.nn.ModuleList([Block(64, d, heads, ff) for _ in range(blocks)])
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h).mean(dim=1))


class TextClassifier(torch.nn.Module):
    """A small BERT-like sentence classifier: int64 token ids and an int64
    attention mask ([N, 64] each), token and position embeddings, two post-LN
    nn.TransformerEncoder layers (d 128, 4 heads, GELU MLP 512, no dropout)
    with the mask as the key padding mask, a mean over the unmasked tokens, and
    a 2-class head."""

    def __init__(self, vocab=8000, tokens=64, d=128, heads=4, layers=2, ff=512, classes=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(tokens, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.tok(input_ids) + self.pos(pos)
        h = self.enc(h, src_key_padding_mask=attention_mask == 0)
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(dim=1) / m.sum(dim=1))


def text_batches(n, tokens=64, vocab=8000, seed=31):
    """n seeded sentences of 8..tokens word ids (zero padding after them, mask 0
    there) and labels 0/1 that depend on the words (the mean id above or below
    the middle of the vocabulary)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((n, tokens), np.int64)
    mask = np.zeros((n, tokens), np.int64)
    y = np.zeros(n, np.int64)
    for i in range(n):
        k = int(rng.integers(8, tokens + 1))
        ids[i, :k] = rng.integers(1, vocab, k)
        mask[i, :k] = 1
        y[i] = int(ids[i, :k].mean() > vocab / 2)
    return ids, mask, y


def build(name):
    """The torch module of a benchmark model, default-initialised under a
    fixed seed (torch_bench.py then loads NAME.pt into it where there is one)."""
    torch.manual_seed(1234)
    if name in ("squeezenet", "resnet18") or name in TORCHVISION:
        import torchvision
    if name == "shufflenet_v2":
        return torchvision.models.shufflenet_v2_x1_0(num_classes=10)
    if name in TORCHVISION:
        return getattr(torchvision.models, name)(num_classes=10)
    if name == "vit":
        return TinyViT()
    if name == "video3d":
        return Video3D()
    if name == "textcls":
        return TextClassifier()
    if name == "squeezenet":
        return torchvision.models.squeezenet1_1(num_classes=10)
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=10)
    if name == "resnet50":
        import make_resnet50
        m = make_resnet50.ResNet50()
        m.fc = torch.nn.Linear(2048, 10)
        return m
    if name == "transformer":
        return TinyTransformer()
    import make_models as mm  # the shipped models' classes
    if name == "mlp":
        return mm.MLP()
    if name == "cnn":
        return mm.CNN()
    if name == "rnn_loop":  # torch.nn.RNN stands in for the ONNX Loop
        return mm.RowRNN(torch.nn.RNN)
    if name == "lstm":
        return mm.RowRNN(torch.nn.LSTM)
    if name == "gru":
        return mm.RowRNN(torch.nn.GRU)
    if name == "treelstm":
        import make_treelstm
        return make_treelstm.torch_module()
    raise KeyError(name)


def idx_images(n):
    """n Fashion-MNIST training images and labels; seeded uniform images and
    random labels where the dataset is not installed (a GPU machine)."""
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        rng = np.random.default_rng(7)
        return (rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n).astype(np.int64))
    with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
        raw = f.read()
    x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28)[:n].astype(np.float32) / 255.0
    with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)[:n].astype(np.int64)
    return x, y


def export(model, shape, path, opset, train_mode=False):
    import onnx
    m = copy.deepcopy(model)
    m.train(train_mode)
    # PRESERVE: the default (EVAL) folds each BatchNormalization into its Conv
    # torch 2.x: the TorchScript exporter, which takes these arguments
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(m, torch.zeros((2,) + shape), path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}}, opset_version=opset,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE, **kw)
    onnx.checker.check_model(onnx.load(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench_models"))
    ap.add_argument("--batches", type=int, default=4, help="distinct batches (trees: 4x as many) per model")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or [c[0] for c in CASES]
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(2)
    lines = ["# NAME BATCH OPTIM LR (written by bench/make_bench_models.py)"]
    for name, batch, optim, lr, shape in CASES:
        if name in ON_REQUEST and name not in a.names and not os.path.exists(os.path.join(a.out, name + ".onnx")):
            continue
        lines.append("%s %d %s %g" % (name, batch, optim, lr))
        if name not in names:
            continue
        onnx_path = os.path.join(a.out, name + ".onnx")
        npz_path = os.path.join(a.out, name + ".npz")
        if name == "treelstm":
            import make_trees
            shutil.copyfile(os.path.join(MODELS, "treelstm.onnx"), onnx_path)
            make_trees.write(npz_path, 4 * a.batches, 0, seed=11, min_len=TREE_LEN[0], max_len=TREE_LEN[1])
        elif name in SHIPPED:
            shutil.copyfile(os.path.join(MODELS, name + ".onnx"), onnx_path)
            x, y = idx_images(60000)
            # the consecutive training samples the former bench_train used
            starts = [(b * batch) % (len(x) - batch) for b in range(a.batches)]
            xb = np.concatenate([x[s:s + batch] for s in starts]).reshape((-1,) + shape)
            yb = np.concatenate([y[s:s + batch] for s in starts])
            np.savez(npz_path, x=np.ascontiguousarray(xb), y=yb)
        else:
            model = build(name)
            torch.save(model.state_dict(), os.path.join(a.out, name + ".pt"))
            if name in ("transformer", "gru"):
                export(model, shape, onnx_path, 17 if name == "transformer" else 13)
                x, y = idx_images(a.batches * batch)
            elif name == "textcls":
                m = copy.deepcopy(model).eval()
                ids, mask, y = text_batches(a.batches * batch)
                kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
                torch.onnx.export(m, (torch.from_numpy(ids[:2]), torch.from_numpy(mask[:2])), onnx_path,
                                  input_names=["input_ids", "attention_mask"], output_names=["logits"],
                                  dynamic_axes={"input_ids": {0: "N"}, "attention_mask": {0: "N"}, "logits": {0: "N"}},
                                  opset_version=17, do_constant_folding=False, **kw)
                np.savez(npz_path, input_ids=ids, attention_mask=mask, y=y)
                print("wrote %s, %s" % (onnx_path, npz_path))
                continue
            elif name == "vit":
                export(model, shape, onnx_path, 17)
                rng = np.random.default_rng(23)
                x = rng.standard_normal((a.batches * batch,) + shape).astype(np.float32)
                y = rng.integers(0, 10, a.batches * batch).astype(np.int64)
            else:
                export(model, shape, onnx_path, 13, train_mode=(name == "squeezenet"))
                rng = np.random.default_rng(20 + len(name))  # N(0,1) images, random labels
                x = rng.standard_normal((a.batches * batch,) + shape).astype(np.float32)
                y = rng.integers(0, 10, a.batches * batch).astype(np.int64)
            np.savez(npz_path, x=x.reshape((-1,) + shape), y=y)
        print("wrote %s, %s" % (onnx_path, npz_path))
    with open(os.path.join(a.out, "bench.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
