#!/usr/bin/env python3
"""Runs the models lantern train wrote from models/make_feed_demos.py's data in
onnxruntime and in `lantern run` on the same inputs and compares the outputs.
Needs numpy and onnxruntime (a venv: python3 -m venv /tmp/venv-data &&
/tmp/venv-data/bin/pip install numpy onnxruntime).

  /tmp/venv-data/bin/python models/check_feed_demos.py LANTERN DATA_DIR \\
      /tmp/tiny_bert_trained.onnx /tmp/tm_rnn_trained.onnx
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

lantern, data, bert, rnn = sys.argv[1:5]
cases = [(bert, {"input_ids": "bert_ids.npy", "attention_mask": "bert_mask.npy"}),
         (rnn, {"x": "rnn_x.npy"})]
worst = 0.0
for model, inputs in cases:
    feeds = {k: np.load(os.path.join(data, v)) for k, v in inputs.items()}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with tempfile.TemporaryDirectory() as out:
        cmd = [lantern, "run", model, "--output-dir", out]
        for k, v in inputs.items():
            cmd += ["--input", "%s=%s" % (k, os.path.join(data, v))]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        got = np.load(os.path.join(out, "logits.npy"))
    diff = float(np.max(np.abs(got - want)))
    worst = max(worst, diff)
    print("%s: logits %s, max |lantern - onnxruntime| = %.3g, argmax agree %s" %
          (os.path.basename(model), list(got.shape), diff, bool((got.argmax(-1) == want.argmax(-1)).all())))
sys.exit(0 if worst < 1e-4 else 1)
