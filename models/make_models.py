#!/usr/bin/python3
"""Produces the ONNX models lantern ships (run with Debian's /usr/bin/python3,
which has python3-torch and python3-onnx). The .onnx files it writes are
committed; nothing in the C build or tests runs this script.

  mlp.onnx       784-512-256-10 MLP, input [N,784], trained 1 epoch on Fashion-MNIST
  cnn.onnx       conv5x5 32, pool, conv5x5 64, pool, fc 256, fc 10, input [N,1,28,28], trained 1 epoch
  rnn.onnx       Elman RNN (ONNX RNN op, hidden 128) over the 28 image rows, then fc 10
  rnn_loop.onnx  the same RNN, same weights, written with an ONNX Loop
  lstm.onnx      LSTM (ONNX LSTM op, hidden 128) over the rows, then fc 10
  if_model.onnx  an If whose branches use an outer initializer and one of their own
  squeezenet.onnx a SqueezeNet-style CNN (fire modules: squeeze 1x1, expand 1x1 + 3x3, concat), untrained
"""
import gzip, os, sys
import numpy as np
import torch
import onnx
from onnx import helper, TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)


def idx(name):
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion():
    xtr = idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ytr = idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    xte = idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    yte = idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    return xtr, ytr, xte, yte


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 512)
        self.fc2 = torch.nn.Linear(512, 256)
        self.fc3 = torch.nn.Linear(256, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 32, 5)
        self.c2 = torch.nn.Conv2d(32, 64, 5)
        self.f1 = torch.nn.Linear(64 * 4 * 4, 256)
        self.f2 = torch.nn.Linear(256, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f2(torch.relu(self.f1(x)))


class RowRNN(torch.nn.Module):
    """Reads a [N,28,28] image row by row."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(28, 128, batch_first=True)
        self.fc = torch.nn.Linear(128, 10)

    def forward(self, x):
        _, h = self.rnn(x)
        if isinstance(h, tuple):
            h = h[0]
        return self.fc(h[0])


class Fire(torch.nn.Module):
    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.s = torch.nn.Conv2d(cin, squeeze, 1)
        self.e1 = torch.nn.Conv2d(squeeze, expand, 1)
        self.e3 = torch.nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.s(x))
        return torch.cat([torch.relu(self.e1(x)), torch.relu(self.e3(x))], 1)


class SqueezeNet(torch.nn.Module):
    """SqueezeNet-style: conv, pool, fire, fire, pool, fire, dropout, 1x1 conv, global average pool."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 32, 3, stride=1)
        self.f1, self.f2, self.f3 = Fire(32, 8, 16), Fire(32, 8, 16), Fire(32, 16, 32)
        self.drop = torch.nn.Dropout(0.5)
        self.c2 = torch.nn.Conv2d(64, 10, 1)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(self.f2(self.f1(x)), 2)
        x = self.drop(self.f3(x))
        return torch.flatten(torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.c2(x)), 1), 1)


def squeezenet(path=os.path.join(HERE, "squeezenet.onnx")):
    torch.manual_seed(3)
    export(SqueezeNet(), (1, 28, 28), path)


def train(model, x, y, shape, epochs=1, batch=128, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    n = len(x)
    for _ in range(epochs):
        perm = np.random.permutation(n)
        for i in range(0, n, batch):
            j = perm[i:i + batch]
            xb = torch.from_numpy(x[j]).reshape((len(j),) + shape)
            loss = torch.nn.functional.cross_entropy(model(xb), torch.from_numpy(y[j]))
            opt.zero_grad()
            loss.backward()
            opt.step()


def accuracy(model, x, y, shape):
    with torch.no_grad():
        p = model(torch.from_numpy(x).reshape((len(x),) + shape)).argmax(1).numpy()
    return float((p == y).mean())


def export(model, shape, path, opset=13):
    model.eval()
    dummy = torch.zeros((2,) + shape)
    torch.onnx.export(model, dummy, path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}}, opset_version=opset)
    onnx.checker.check_model(onnx.load(path))


def rnn_as_loop(rnn_model, path):
    """The RowRNN's forward written with Loop over the 28 rows (same weights)."""
    sd = {k: v.detach().numpy() for k, v in rnn_model.state_dict().items()}
    W = sd["rnn.weight_ih_l0"].T.copy()      # [28,128]
    U = sd["rnn.weight_hh_l0"].T.copy()      # [128,128]
    b = (sd["rnn.bias_ih_l0"] + sd["rnn.bias_hh_l0"]).astype(np.float32)
    Wfc, bfc = sd["fc.weight"], sd["fc.bias"]
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "t"], ["xt"], axis=1),
         helper.make_node("MatMul", ["xt", "W"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["s0"]),
         helper.make_node("Add", ["s0", "b"], ["s1"]),
         helper.make_node("Tanh", ["s1"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "rnn_step",
        [helper.make_tensor_value_info("t", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, ["N", 128])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["N", 128])],
        initializer=[numpy_helper.from_array(U, "U")])  # a parameter inside the body
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["xs"]),
         helper.make_node("Gather", ["xs", "zero"], ["n"], axis=0),
         helper.make_node("Concat", ["n", "hidden"], ["hshape"], axis=0),
         helper.make_node("ConstantOfShape", ["hshape"], ["h0"]),
         helper.make_node("Loop", ["T", "", "h0"], ["hT"], body=body),
         helper.make_node("Gemm", ["hT", "Wfc", "bfc"], ["logits"], transB=1)],
        "rnn_loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 28, 28])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=[numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b"),
                     numpy_helper.from_array(Wfc, "Wfc"), numpy_helper.from_array(bfc, "bfc"),
                     numpy_helper.from_array(np.array(28, np.int64), "T"),
                     numpy_helper.from_array(np.array([0], np.int64), "zero"),
                     numpy_helper.from_array(np.array([128], np.int64), "hidden")])
    m = helper.make_model(graph, producer_name="lantern-models", opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def if_model(path):
    """y = If(sum(x) > 0) then relu(x @ A) + c else x @ B (B lives in the branch)."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((8, 4)).astype(np.float32)
    B = rng.standard_normal((8, 4)).astype(np.float32)
    c = rng.standard_normal((4,)).astype(np.float32)
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "A"], ["xa"]), helper.make_node("Relu", ["xa"], ["r"]),
         helper.make_node("Add", ["r", "c"], ["then_y"])],
        "then", [], [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, ["N", 4])])
    else_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "B"], ["else_y"])],
        "else", [], [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, ["N", 4])],
        initializer=[numpy_helper.from_array(B, "B")])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
        "if_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[numpy_helper.from_array(A, "A"), numpy_helper.from_array(c, "c"),
                     numpy_helper.from_array(np.array(0, np.float32), "zero")])
    m = helper.make_model(graph, producer_name="lantern-models", opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    xtr, ytr, xte, yte = fashion()
    xtr_flat, xte_flat = xtr.reshape(-1, 784), xte.reshape(-1, 784)
    mlp = MLP()
    train(mlp, xtr_flat, ytr, (784,))
    print("mlp test accuracy %.4f" % accuracy(mlp, xte_flat, yte, (784,)))
    export(mlp, (784,), os.path.join(HERE, "mlp.onnx"))
    cnn = CNN()
    train(cnn, xtr, ytr, (1, 28, 28), batch=64)
    print("cnn test accuracy %.4f" % accuracy(cnn, xte, yte, (1, 28, 28)))
    export(cnn, (1, 28, 28), os.path.join(HERE, "cnn.onnx"))
    rnn = RowRNN(torch.nn.RNN)
    export(rnn, (28, 28), os.path.join(HERE, "rnn.onnx"))
    rnn_as_loop(rnn, os.path.join(HERE, "rnn_loop.onnx"))
    lstm = RowRNN(torch.nn.LSTM)
    export(lstm, (28, 28), os.path.join(HERE, "lstm.onnx"))
    if_model(os.path.join(HERE, "if_model.onnx"))
    squeezenet()
    # reference outputs for the tests: a few test images through each model
    ref = os.path.join(HERE, "ref")
    os.makedirs(ref, exist_ok=True)
    x8 = xte[:8]
    np.save(os.path.join(ref, "x8_flat.npy"), x8.reshape(8, 784))
    np.save(os.path.join(ref, "x8_img.npy"), x8.reshape(8, 1, 28, 28))
    np.save(os.path.join(ref, "x8_seq.npy"), x8.reshape(8, 28, 28))
    np.save(os.path.join(ref, "y8.npy"), yte[:8])
    with torch.no_grad():
        np.save(os.path.join(ref, "mlp_logits.npy"), mlp(torch.from_numpy(x8.reshape(8, 784))).numpy())
        np.save(os.path.join(ref, "cnn_logits.npy"), cnn(torch.from_numpy(x8.reshape(8, 1, 28, 28))).numpy())
        np.save(os.path.join(ref, "rnn_logits.npy"), rnn(torch.from_numpy(x8)).numpy())
        np.save(os.path.join(ref, "lstm_logits.npy"), lstm(torch.from_numpy(x8)).numpy())
    xi = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    np.save(os.path.join(ref, "if_x.npy"), xi)


if __name__ == "__main__":
    main()
