#!/usr/bin/env python3
"""The model zoo of today's exporters: tiny random-weight models built from
configs (torchvision CNNs, a ViT, BERT, GPT-2, DistilBERT, a T5 encoder, a
Whisper encoder, LSTM/GRU, If/Loop/Scan control flow), each exported with
both torch.onnx exporters (TorchScript: dynamo=False; dynamo: dynamo=True).

Next to each model.onnx it writes torch's references:
  in_<k>.npy    the seeded random inputs (never all-zero)
  out_<k>.npy   torch's outputs
  seed_<k>.npy  a fixed random cotangent per float output: the scalar loss
                is sum_k sum(out_k * seed_k)
  g_<n>.npy     torch autograd's gradient of that loss with respect to every
                parameter (as laid out in the ONNX initializer it became)
                and every float input
  case.txt      which graph input, output and gradient each file belongs to

tests/unit/test_zoo.c runs every case with lantern (no Python needed).
<model>_ts and <model>_dynamo keep every torch parameter an initializer of
its own, so that every parameter's gradient is compared: TorchScript with
do_constant_folding=False, and the dynamo exporter unoptimized where its
default optimizer would fold BatchNormalization into Conv (case.txt says
so). <model>_ts_default and <model>_dynamo_default are the exporters'
defaults (folded BatchNormalization, transposed weights), compared on
outputs, input gradients and the parameters that stay initializers.

Run with a PyPI venv holding torch 2.x, torchvision, transformers,
onnxscript and onnx:  python models/zoo/make_zoo.py [NAME...]
"""
import os
import sys
import shutil
import warnings
import logging

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torchvision
from torchvision.models import resnet, mobilenetv2, mobilenetv3, efficientnet, squeezenet, densenet, shufflenetv2
from torchvision.models.vision_transformer import VisionTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET_TS = 17  # TorchScript exporter (its newest is 20; 17 has LayerNormalization)
OPSET_DYNAMO = 18  # the dynamo exporter's default

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)


def seeded(seed):
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- CNNs
class TinyResNet(resnet.ResNet):
    """torchvision's ResNet forward with narrow stages (8..64 channels)."""

    def __init__(self):
        super().__init__(resnet.BasicBlock, [1, 1, 1, 1], num_classes=10)
        self.inplanes = 8
        self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(resnet.BasicBlock, 8, 1)
        self.layer2 = self._make_layer(resnet.BasicBlock, 16, 1, stride=2)
        self.layer3 = self._make_layer(resnet.Bottleneck, 8, 1, stride=2)
        self.layer4 = self._make_layer(resnet.BasicBlock, 32, 1, stride=2)
        self.fc = nn.Linear(32, 10)


class TinySqueezeNet(squeezenet.SqueezeNet):
    """torchvision's SqueezeNet 1.1 layout with Fire modules a sixteenth wide."""

    def __init__(self):
        super().__init__("1_1", num_classes=10)
        Fire = squeezenet.Fire
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(8, 4, 8, 8), Fire(16, 4, 8, 8),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 6, 12, 12))
        final = nn.Conv2d(24, 10, 1)
        self.classifier = nn.Sequential(nn.Dropout(0.5), final, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))


def make_mobilenet_v3():
    C = mobilenetv3.InvertedResidualConfig
    setting = [C(8, 3, 8, 8, True, "RE", 2, 1, 1.0), C(8, 3, 24, 12, False, "RE", 2, 1, 1.0),
               C(12, 5, 32, 16, True, "HS", 2, 1, 1.0), C(16, 3, 48, 16, True, "HS", 1, 1, 1.0)]
    return mobilenetv3.MobileNetV3(setting, last_channel=64, num_classes=10)


def make_efficientnet():
    M = efficientnet.MBConvConfig
    setting = [M(1, 3, 1, 8, 8, 1, 1.0, 1.0), M(4, 3, 2, 8, 12, 1, 1.0, 1.0),
               M(4, 5, 2, 12, 16, 2, 1.0, 1.0)]
    return efficientnet.EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2, num_classes=10,
                                     last_channel=48)


def image(rng, n=2, s=32):
    return rng.standard_normal((n, 3, s, s)).astype(np.float32)


def cnn_cases():
    yield "resnet", TinyResNet, lambda r: [image(r)]
    yield "mobilenet_v2", lambda: mobilenetv2.MobileNetV2(
        num_classes=10, inverted_residual_setting=[[1, 8, 1, 1], [6, 12, 2, 2], [6, 16, 1, 2]],
        width_mult=1.0, round_nearest=4), lambda r: [image(r)]
    yield "mobilenet_v3", make_mobilenet_v3, lambda r: [image(r)]
    yield "efficientnet", make_efficientnet, lambda r: [image(r)]
    yield "densenet", lambda: densenet.DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8,
                                                bn_size=2, num_classes=10), lambda r: [image(r)]
    yield "shufflenet", lambda: shufflenetv2.ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 64], num_classes=10), \
        lambda r: [image(r)]
    yield "squeezenet", TinySqueezeNet, lambda r: [image(r)]
    yield "vit", lambda: VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                           mlp_dim=32, num_classes=10), lambda r: [image(r)]


# ---------------------------------------------------------------- transformers
class Outs(nn.Module):
    """a transformers model with its float outputs as a plain tuple"""

    def __init__(self, model, keys):
        super().__init__()
        self.model, self.keys = model, keys

    def forward(self, *args):
        out = self.model(**dict(zip(("input_ids", "attention_mask"), args)))
        return tuple(out[k] for k in self.keys)


def hf_cases():
    import transformers as tf

    def ids(r, vocab, n=2, t=8):
        return [r.integers(1, vocab, (n, t)).astype(np.int64)]

    def ids_mask(r, vocab, n=2, t=8):
        m = np.ones((n, t), np.int64)
        m[1, t - 3:] = 0  # a padded second sequence
        return [r.integers(1, vocab, (n, t)).astype(np.int64), m]

    def bert():
        c = tf.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=32, max_position_embeddings=32, type_vocab_size=2)
        return Outs(tf.BertModel(c), ["last_hidden_state", "pooler_output"])

    def gpt2():
        c = tf.GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=2, n_head=2, use_cache=False)
        return Outs(tf.GPT2LMHeadModel(c), ["logits"])

    def distilbert():
        c = tf.DistilBertConfig(vocab_size=64, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                max_position_embeddings=32)
        return Outs(tf.DistilBertModel(c), ["last_hidden_state"])

    def t5():
        c = tf.T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                        relative_attention_num_buckets=8, relative_attention_max_distance=16,
                        feed_forward_proj="gated-gelu", use_cache=False)
        # sdpa's T5 path reshapes a transposed tensor, which torch.export's
        # decomposition then fails to view (dynamo exporter); eager attention
        c._attn_implementation = "eager"
        return Outs(tf.T5EncoderModel(c), ["last_hidden_state"])

    class Whisper(nn.Module):
        def __init__(self):
            super().__init__()
            c = tf.WhisperConfig(vocab_size=64, num_mel_bins=8, encoder_layers=2, encoder_attention_heads=2,
                                 decoder_layers=1, decoder_attention_heads=2, d_model=16, encoder_ffn_dim=32,
                                 decoder_ffn_dim=32, max_source_positions=16, max_target_positions=16,
                                 pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
            self.encoder = tf.WhisperModel(c).get_encoder()

        def forward(self, feats):
            return self.encoder(feats).last_hidden_state

    yield "bert", bert, lambda r: ids_mask(r, 64)
    yield "gpt2", gpt2, lambda r: ids_mask(r, 64)
    yield "distilbert", distilbert, lambda r: ids_mask(r, 64)
    yield "t5_encoder", t5, lambda r: ids_mask(r, 64)
    yield "whisper_encoder", Whisper, lambda r: [r.standard_normal((2, 8, 32)).astype(np.float32)]


# ---------------------------------------------------------------- recurrent and control flow
class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return self.fc(y), h, c


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 6, num_layers=1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x, h0):
        y, h = self.rnn(x, h0)
        return self.fc(y), h


class IfNet(nn.Module):
    """a data-dependent branch (torch.jit.script): an If node"""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 5)
        self.b = nn.Linear(5, 5)

    def forward(self, x):
        if bool(x.sum() > 0):
            y = torch.tanh(self.a(x))
        else:
            y = self.b(x) * 2.0
        return y


class CondNet(IfNet):
    """the same branch as torch.cond: an If node from the dynamo exporter"""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: torch.tanh(self.a(x)), lambda x: self.b(x) * 2.0, (x,))


class LoopNet(nn.Module):
    """a recurrence over a data-dependent trip count (torch.jit.script): a Loop"""

    def __init__(self):
        super().__init__()
        self.w = nn.Linear(5, 5)

    def forward(self, x, steps):
        h = x
        for _ in range(int(steps)):
            h = torch.tanh(self.w(h)) + x
        return h


class WhileNet(nn.Module):
    """torch's while_loop higher-order op: a Loop from the dynamo exporter"""

    def __init__(self):
        super().__init__()
        self.w = nn.Linear(5, 5)

    def forward(self, x, steps):
        from torch._higher_order_ops.while_loop import while_loop

        def cond(i, h):
            return i < steps

        def body(i, h):
            return i + 1, torch.tanh(self.w(h)) + x

        # fresh carries: while_loop refuses carries that alias the inputs
        _, h = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x.clone()))
        return h


class ScanLoopNet(nn.Module):
    """a recurrence over the sequence axis (torch.jit.script): a Loop with
    a scan output"""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4) * 0.4)

    def forward(self, xs, h0):
        h = h0
        ys = []
        for t in range(xs.shape[0]):
            h = torch.tanh(h @ self.w + xs[t])
            ys.append(h)
        return h, torch.stack(ys)


class ScanNet(ScanLoopNet):
    """the same recurrence through torch's scan higher-order op: Scan from
    the dynamo exporter"""

    def forward(self, xs, h0):
        from torch._higher_order_ops.scan import scan

        def step(h, x):
            h2 = torch.tanh(h @ self.w + x)
            return h2, h2.clone()

        return scan(step, h0, xs)


def rnn_cases():
    yield "lstm", LSTMNet, lambda r: [r.standard_normal((2, 5, 4)).astype(np.float32)]
    yield "gru", GRUNet, lambda r: [r.standard_normal((5, 2, 4)).astype(np.float32),
                                    r.standard_normal((1, 2, 6)).astype(np.float32) * 0.5]


def flow_cases():
    x35 = lambda r: [r.standard_normal((3, 5)).astype(np.float32) + 0.3]
    loop_in = lambda r: [r.standard_normal((3, 5)).astype(np.float32), np.array(3, np.int64)]
    scan_in = lambda r: [r.standard_normal((6, 2, 4)).astype(np.float32), r.standard_normal((2, 4)).astype(np.float32)]
    yield "if", "ts", IfNet, x35
    yield "if", "dynamo", CondNet, x35
    yield "loop", "ts", LoopNet, loop_in
    yield "loop", "dynamo", WhileNet, loop_in
    yield "scan", "ts", ScanLoopNet, scan_in
    yield "scan", "dynamo", ScanNet, scan_in


# ---------------------------------------------------------------- export and references
def onnx_name_map(proto, named_params):
    """torch parameter name -> (initializer name, transposed) for each
    parameter the exported graph holds as one initializer (a tied one that
    folding copied into several, such as GPT-2's embedding and its
    transposed head, has no per-initializer gradient in torch)"""
    inits = {i.name: i for i in proto.graph.initializer}
    arrays = {}
    out = {}
    for pname, p in named_params:
        cands = [pname, pname.replace("model.", "", 1), pname.replace("encoder.", "", 1)]
        v = p.detach().numpy()
        if not arrays:
            arrays = {n: numpy_helper.to_array(i) for n, i in inits.items()}
        copies = [n for n, a in arrays.items() if (a.shape == v.shape and np.array_equal(a, v)) or
                  (v.ndim == 2 and a.shape == v.T.shape and np.array_equal(a, v.T))]
        if len(copies) > 1:
            continue
        hit = next((c for c in cands if c in inits and np.array_equal(arrays[c], v)), None)
        if hit is not None:
            out[pname] = (hit, False)
            continue
        for n, a in arrays.items():
            if a.shape == v.shape and np.array_equal(a, v):
                out[pname] = (n, False)
                break
            if v.ndim == 2 and a.shape == v.T.shape and np.array_equal(a, v.T):
                out[pname] = (n, True)
                break
    return out


def strip_metadata(path):
    """drops the dynamo exporter's per-node provenance (module paths, FX
    node text: most of a tiny model's bytes); the graph is unchanged"""
    m = onnx.load(path)

    def walk(g):
        for n in g.node:
            del n.metadata_props[:]
            n.doc_string = ""
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
        for v in list(g.value_info) + list(g.input) + list(g.output):
            del v.metadata_props[:]
        for t in g.initializer:
            del t.metadata_props[:]
    walk(m.graph)
    del m.metadata_props[:]
    onnx.save(m, path)


def export(model, args, path, dynamo, in_names, nout, optimize=True, fold=False):
    out_names = ["out%d" % k for k in range(nout)]
    if dynamo:
        prog = torch.onnx.export(model, tuple(args), dynamo=True, opset_version=OPSET_DYNAMO,
                                 input_names=in_names, output_names=out_names, verbose=False,
                                 external_data=False, optimize=optimize)
        prog.save(path, external_data=False)
        strip_metadata(path)
    else:
        target = torch.jit.script(model) if type(model) in (IfNet, LoopNet, ScanLoopNet) else model
        torch.onnx.export(target, tuple(args), path, dynamo=False, opset_version=OPSET_TS,
                          input_names=in_names, output_names=out_names, do_constant_folding=fold)


def make_case(name, exporter, build, inputs, seed):
    dyn = exporter.startswith("dynamo")
    default = exporter.endswith("_default")
    d = os.path.join(HERE, "%s_%s" % (name, exporter))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rng = seeded(seed)
    model = build()
    model.eval()
    with torch.no_grad():  # every weight visible: default inits leave some constant (zero heads, unit norms)
        for pn, p in model.named_parameters():
            if p.numel() > 1 and torch.all(p == p.flatten()[0]):
                p.add_(torch.randn(p.shape) * (0.1 if p.dim() == 1 else 0.3 / p.shape[-1] ** 0.5))
        for bn, b in model.named_buffers():
            if "running_mean" in bn:
                b.copy_(torch.randn(b.shape) * 0.1)
            elif "running_var" in bn:
                b.copy_(torch.rand(b.shape) * 0.5 + 0.75)
    xs = inputs(rng)
    targs = [torch.from_numpy(x.copy()) for x in xs]
    in_names = ["in%d" % k for k in range(len(xs))]
    # torch's reference: outputs, then the gradients of sum(out * seed)
    gin = [t.clone().requires_grad_(t.is_floating_point()) for t in targs]
    outs = model(*gin)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    seeds = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in outs]
    loss = sum((o * torch.from_numpy(s)).sum() for o, s in zip(outs, seeds))
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, [p for _, p in params] + [g for g in gin if g.requires_grad],
                                allow_unused=True)
    path = os.path.join(d, "model.onnx")
    try:
        export(model, targs, path, dyn, in_names, len(outs), fold=default)
    except Exception as e:  # noqa: BLE001 (the exporter's own limits are reported, not hidden)
        shutil.rmtree(d)
        msg = [l for l in str(e).splitlines() if "Error" in l or "error" in l] or str(e).splitlines()[:1]
        print("%-22s export failed: %s" % (name + "_" + exporter, msg[-1][:300]))
        return
    proto = onnx.load(path)
    names = onnx_name_map(proto, params)
    note = ""
    names0 = names
    if default:
        if len(names) == len(params) and dyn:
            shutil.rmtree(d)
            print("%-22s the same as %s_dynamo" % (name + "_" + exporter, name))
            return
        if len(names) < len(params):
            note = "# the exporter's defaults fold %d of the %d torch parameters into constants or other " \
                "initializers; their gradients are not compared: %s\n" % \
                (len(params) - len(names), len(params), ", ".join(p for p, _ in params if p not in names)[:300])
    elif dyn and len(names) < len(params):
        # the default optimizer folds BatchNormalization into Conv weights
        # (keeping the Conv weight's name): export unoptimized so that the
        # initializers are the parameters whose gradients torch gives
        export(model, targs, path, dyn, in_names, len(outs), optimize=False)
        proto = onnx.load(path)
        names = onnx_name_map(proto, params)
        note = "# exported with optimize=False: the default optimizer folds or renames parameters (%s)\n" % \
            ", ".join(p for p, _ in params if p not in names0)[:200]
    graph_inputs = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    lines = []
    for k, x in enumerate(xs):
        np.save(os.path.join(d, "in_%d.npy" % k), x)
        if in_names[k] in graph_inputs:
            lines.append("input %s in_%d.npy" % (in_names[k], k))
    graph_outputs = [o.name for o in proto.graph.output]
    assert len(graph_outputs) == len(outs), (graph_outputs, len(outs))
    for k, (o, s) in enumerate(zip(outs, seeds)):
        np.save(os.path.join(d, "out_%d.npy" % k), o.detach().numpy())
        np.save(os.path.join(d, "seed_%d.npy" % k), s)
        lines.append("output %s out_%d.npy seed_%d.npy" % (graph_outputs[k], k, k))
    gi = 0
    missing = []
    for (pn, p), g in zip(params, grads[:len(params)]):
        if pn not in names:
            missing.append(pn)
            continue
        onm, tr = names[pn]
        g = torch.zeros_like(p) if g is None else g
        a = g.detach().numpy()
        np.save(os.path.join(d, "g_%d.npy" % gi), a.T.copy() if tr else a)
        lines.append("grad %s g_%d.npy" % (onm, gi))
        gi += 1
    for k, g in zip([k for k, t in enumerate(gin) if t.requires_grad], grads[len(params):]):
        if in_names[k] not in graph_inputs or g is None:
            continue
        np.save(os.path.join(d, "g_%d.npy" % gi), g.detach().numpy())
        lines.append("grad %s g_%d.npy" % (in_names[k], gi))
        gi += 1
    if missing and not default:
        raise SystemExit("%s_%s: parameters with no initializer in the export: %s" % (name, exporter, missing))
    with open(os.path.join(d, "case.txt"), "w") as f:
        f.write(note + "\n".join(lines) + "\n")
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print("%-22s %3d gradients, %6.1f KB" % (name + "_" + exporter, gi, size / 1024))


DEFAULTS = ("resnet", "mobilenet_v3", "efficientnet", "densenet", "bert", "gpt2", "lstm")


def all_cases():
    for name, build, inputs in list(cnn_cases()) + list(hf_cases()) + list(rnn_cases()):
        for ex in ("ts", "dynamo"):
            yield name, ex, build, inputs
    for name, ex, build, inputs in flow_cases():
        yield name, ex, build, inputs
    # the exporters' defaults (TorchScript's constant folding, the dynamo
    # optimizer), which fold BatchNormalization into Conv and transpose
    # weights: outputs, input gradients and the gradients of the parameters
    # that are still initializers of their own
    for name, build, inputs in list(cnn_cases()) + list(hf_cases()) + list(rnn_cases()):
        if name in DEFAULTS:
            for ex in ("ts_default", "dynamo_default"):
                yield name, ex, build, inputs


def main():
    want = set(sys.argv[1:])
    for i, (name, ex, build, inputs) in enumerate(all_cases()):
        if want and name not in want and "%s_%s" % (name, ex) not in want:
            continue
        make_case(name, ex, build, inputs, 1000 + 17 * i)


if __name__ == "__main__":
    main()
