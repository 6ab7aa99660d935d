#!/usr/bin/python3
"""The shipped Loop-written RNN, stretched to T time steps (input [N,T,28]),
for the AD memory benchmark: /usr/bin/python3 bench/make_loop_rnn.py T OUT.onnx"""
import sys
import onnx
from onnx import numpy_helper as nh
import numpy as np

T, out = int(sys.argv[1]), sys.argv[2]
m = onnx.load(__file__.replace("bench/make_loop_rnn.py", "models/rnn_loop.onnx"))
for t in m.graph.initializer:
    if t.name == "T":
        t.CopyFrom(nh.from_array(np.array(T, np.int64), "T"))
m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = T
onnx.save(m, out)
