#!/usr/bin/env python3
"""Models and data for lantern train's named npz inputs, exported by PyTorch
2.x from PyPI (the checked-in models: torch 2.15's TorchScript exporter,
torch.onnx.export(..., dynamo=False); Debian's torch 1.13 writes the same
graphs). The models are written untrained (PyTorch's own initialisation,
seed 0) and committed; the data is written to the folder given (default:
/tmp/lantern-feed-demos), nothing of it is committed. --dynamo exports the
same two models with torch's dynamo exporter (needs onnxscript) into the data
folder instead (tiny_bert_dynamo.onnx, tm_rnn_dynamo.onnx), leaving the
checked-in ones alone.

  tiny_bert.onnx  a BERT-style token tagger: int64 input_ids and attention_mask
                  [batch, seq] -> token + position embeddings, one post-norm encoder
                  layer (2-head self-attention with the mask as -1e4 on padded keys,
                  GELU feed-forward) -> logits [batch, seq, 2]
  tiny_bert.npz   random sequences of 4..12 tokens padded to 12; a token's label is
                  1 when its id occurs elsewhere in its sequence (attention has to look),
                  -100 on padding (PyTorch's ignore index)
  tm_rnn.onnx     a time-major Elman RNN (nn.RNN's default layout x [T, N, 3], hidden 16)
                  whose last state goes through Linear -> logits [N, 2]
  tm_rnn.npz      x [n, 10, 3] (samples on axis 0, as every npz array) and y [n]:
                  1 when the first feature sums to more than 0 over time

  /tmp/venv-bench/bin/python models/make_feed_demos.py [--dynamo] [DATA_DIR]
  lantern train models/tiny_bert.onnx --data npz=DATA_DIR/tiny_bert.npz --optimizer adam \\
      --lr 0.003 --epochs 6 --batch 32 -o /tmp/tiny_bert_trained.onnx
  lantern train models/tm_rnn.onnx --data npz=DATA_DIR/tm_rnn.npz --optimizer adam \\
      --lr 0.01 --epochs 4 --batch 32 -o /tmp/tm_rnn_trained.onnx
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = [a for a in sys.argv[1:] if a != "--dynamo"]
DYNAMO = "--dynamo" in sys.argv[1:]
OUT = ARGS[0] if ARGS else "/tmp/lantern-feed-demos"
# torch 2.x: the exporter is chosen explicitly (2.9 made dynamo the default)
EXPORTER = {"dynamo": DYNAMO} if int(torch.__version__.split(".")[0]) >= 2 else {}
if DYNAMO:
    EXPORTER["external_data"] = False  # one file, as the TorchScript exporter writes
MODELS = OUT if DYNAMO else HERE
SUFFIX = "_dynamo" if DYNAMO else ""
VOCAB, SEQ, D, HEADS = 24, 12, 32, 2
torch.manual_seed(0)
rng = np.random.default_rng(0)


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(SEQ, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln1 = nn.LayerNorm(D)
        self.ff1 = nn.Linear(D, 2 * D)
        self.ff2 = nn.Linear(2 * D, D)
        self.ln2 = nn.LayerNorm(D)
        self.head = nn.Linear(D, 2)

    def forward(self, input_ids, attention_mask):
        b, t = input_ids.shape
        positions = torch.arange(t).unsqueeze(0)
        h = self.tok(input_ids) + self.pos(positions)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        dh = D // HEADS

        def heads(x):
            return x.reshape(b, t, HEADS, dh).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
        keep = attention_mask.to(torch.float32).unsqueeze(1).unsqueeze(2)
        scores = scores + (1.0 - keep) * -1e4
        a = torch.softmax(scores, dim=-1) @ v
        a = a.transpose(1, 2).reshape(b, t, D)
        h = self.ln1(h + self.proj(a))
        h = self.ln2(h + self.ff2(torch.nn.functional.gelu(self.ff1(h))))
        return self.head(h)


class TimeMajorRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 16)  # batch_first=False: x is [T, N, 3]
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.fc(h[-1])


def bert_data(n):
    ids = np.zeros((n, SEQ), np.int64)
    mask = np.zeros((n, SEQ), np.int64)
    y = np.full((n, SEQ), -100, np.int64)
    for i in range(n):
        length = rng.integers(4, SEQ + 1)
        row = rng.integers(1, VOCAB, length)
        ids[i, :length] = row
        mask[i, :length] = 1
        for t in range(length):
            y[i, t] = int((row == row[t]).sum() > 1)
    return ids, mask, y


def rnn_data(n):
    x = rng.normal(size=(n, 10, 3)).astype(np.float32)
    y = (x[:, :, 0].sum(1) > 0).astype(np.int64)
    return x, y


def main():
    os.makedirs(OUT, exist_ok=True)
    bert = TinyBert().eval()
    ids, mask, y = bert_data(4)
    torch.onnx.export(bert, (torch.from_numpy(ids), torch.from_numpy(mask)), os.path.join(MODELS, "tiny_bert%s.onnx" % SUFFIX),
                      input_names=["input_ids", "attention_mask"], output_names=["logits"], opset_version=14,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}}, **EXPORTER)
    rnn = TimeMajorRNN().eval()
    torch.onnx.export(rnn, (torch.zeros(10, 4, 3),), os.path.join(MODELS, "tm_rnn%s.onnx" % SUFFIX),
                      input_names=["x"], output_names=["logits"], opset_version=14,
                      # dynamo specializes nn.RNN's time axis to the example's: T stays 10 there
                      dynamic_axes={"x": {1: "N"} if DYNAMO else {0: "T", 1: "N"}, "logits": {0: "N"}}, **EXPORTER)
    ids, mask, y = bert_data(1200)
    np.savez(os.path.join(OUT, "tiny_bert.npz"), input_ids=ids[:1000], attention_mask=mask[:1000], y=y[:1000],
             input_ids_test=ids[1000:], attention_mask_test=mask[1000:], y_test=y[1000:])
    x, y = rnn_data(1200)
    np.savez(os.path.join(OUT, "tm_rnn.npz"), x=x[:1000], y=y[:1000], x_test=x[1000:], y_test=y[1000:])
    # inputs for comparing lantern run with onnxruntime (models/check_feed_demos.py)
    np.save(os.path.join(OUT, "bert_ids.npy"), ids[1000:1008])
    np.save(os.path.join(OUT, "bert_mask.npy"), mask[1000:1008])
    np.save(os.path.join(OUT, "rnn_x.npy"), np.ascontiguousarray(x[1000:1008].transpose(1, 0, 2)))
    print("wrote", os.path.join(MODELS, "tiny_bert%s.onnx" % SUFFIX), os.path.join(MODELS, "tm_rnn%s.onnx" % SUFFIX),
          "with torch", torch.__version__, "and data in", OUT)


main()
