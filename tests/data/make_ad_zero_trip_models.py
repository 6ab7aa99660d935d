#!/usr/bin/python3
"""Loops and Scans that may run zero times, for tests/unit/test_ad_zero_trip.c
(committed; regenerate with Debian's /usr/bin/python3: writes only the
ad_zt_*.onnx files below). The iteration counts come from the inputs, so
one model runs zero and some iterations: Loop's trip count M and start
condition c are graph inputs, Scan's sequence length is x's first dim, and
the training model's loop condition depends on the batch."""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
F = TP.FLOAT


def w(name, *shape, scale=0.5):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def i64(name, v):
    return nh.from_array(np.array(v, np.int64), name)


def vi(name, shape, t=F):
    return h.make_tensor_value_info(name, t, shape)


def save(name, nodes, inputs, outputs, inits, opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = h.make_model(g, producer_name="lantern-tests", opset_imports=[h.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def fconst(name, v):
    return h.make_node("Constant", [], [name], value=nh.from_array(np.array(v, np.float32), name + "_v"))


def rsum(x, out):
    return h.make_node("ReduceSum", [x], [out], keepdims=0)


# Loop(M, c, h0): h = tanh(h @ W + tanh(x)), scan output h * V, and the body
# stops after iteration 2 (cond_out = it < 2): min(M, 3) iterations when c
# holds, none when it does not or M is 0.
# y = sum(stack * stack) + sum(hT * hT): at zero iterations y = sum(h0 * h0).
def loop_body(name):
    return h.make_graph(
        [h.make_node("MatMul", ["h_in", "W"], ["hw"]), h.make_node("Add", ["hw", "xs"], ["ha"]),
         h.make_node("Tanh", ["ha"], ["h_out"]), h.make_node("Mul", ["h_out", "V"], ["sc"]),
         h.make_node("Less", ["it", "two"], ["cond_out"])],
        name, [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
        [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4]), vi("sc", [2, 4])], initializer=[i64("two", 2)])


def loop_model(name, loop_inputs, inputs):
    save(name,
         [h.make_node("Tanh", ["x"], ["xs"]),
          h.make_node("Loop", loop_inputs, ["hT", "stack"], body=loop_body(name + "_body")),
          h.make_node("Mul", ["stack", "stack"], ["sq"]), h.make_node("Mul", ["hT", "hT"], ["hq"]),
          rsum("sq", "a"), rsum("hq", "b"), h.make_node("Add", ["a", "b"], ["y"])],
         [vi("x", [2, 4])] + inputs, [vi("y", [])], [w("W", 4, 4), w("V", 2, 4), w("h0", 2, 4)])


loop_model("ad_zt_loop", ["M", "c", "h0"], [vi("M", [], TP.INT64), vi("c", [], TP.BOOL)])
# the same without a trip count: the condition alone
loop_model("ad_zt_while", ["", "c", "h0"], [vi("c", [], TP.BOOL)])

# Scan over x [T, 2, 4] (T may be 0): s = tanh(s @ W + x_t); scan outputs
# s * V forward on axis 0 and s reversed on axis 1.
# y = sum(o1 * o1) + sum(o2 * P) + sum(sT * sT): at T = 0 y = sum(s0 * s0).
scan_body = h.make_graph(
    [h.make_node("MatMul", ["s_in", "W"], ["sw"]), h.make_node("Add", ["sw", "xt"], ["sa"]),
     h.make_node("Tanh", ["sa"], ["s_out"]), h.make_node("Mul", ["s_out", "V"], ["o1"]),
     h.make_node("Identity", ["s_out"], ["o2"])],
    "zt_scan_body", [vi("s_in", [2, 4]), vi("xt", [2, 4])], [vi("s_out", [2, 4]), vi("o1", [2, 4]), vi("o2", [2, 4])])
save("ad_zt_scan",
     [h.make_node("Scan", ["s0", "x"], ["sT", "os1", "os2"], body=scan_body, num_scan_inputs=1,
                  scan_output_axes=[0, 1], scan_output_directions=[0, 1]),
      h.make_node("Mul", ["os1", "os1"], ["q1"]), h.make_node("Mul", ["os2", "P"], ["q2"]),
      h.make_node("Mul", ["sT", "sT"], ["q3"]), rsum("q1", "a"), rsum("q2", "b"), rsum("q3", "c"),
      h.make_node("Sum", ["a", "b", "c"], ["y"])],
     [vi("x", ["T", 2, 4])], [vi("y", [])], [w("W", 4, 4), w("V", 2, 4), w("s0", 2, 4), w("P", 2, 1, 4)], opset=16)

# A Loop of three iterations whose body runs an inner Loop M times (M an
# input, 0 included) from the outer state, with a scan output whose sum
# joins the state: g, gs = inner(h); h' = tanh(g @ W + tanh(x)) + sum(gs);
# the inner body g' = tanh(g @ U + h), gs_t = g' * V (U its own, V captured
# from the main graph). The outer loop stacks h'. At M = 0, U and V get no
# gradient.
inner = h.make_graph(
    [h.make_node("MatMul", ["g_in", "U"], ["gu"]), h.make_node("Add", ["gu", "h_in"], ["ga"]),
     h.make_node("Tanh", ["ga"], ["g_out"]), h.make_node("Mul", ["g_out", "V"], ["gs"]),
     h.make_node("Identity", ["c2_in"], ["c2_out"])],
    "zt_inner", [vi("j", [], TP.INT64), vi("c2_in", [], TP.BOOL), vi("g_in", [2, 4])],
    [vi("c2_out", [], TP.BOOL), vi("g_out", [2, 4]), vi("gs", [2, 4])], initializer=[w("U", 4, 4)])
outer = h.make_graph(
    [h.make_node("Loop", ["M", "", "h_in"], ["g", "gstack"], body=inner), rsum("gstack", "gsum"),
     h.make_node("MatMul", ["g", "W"], ["gw"]), h.make_node("Add", ["gw", "xs"], ["oa"]),
     h.make_node("Tanh", ["oa"], ["ot"]), h.make_node("Add", ["ot", "gsum"], ["h_out"]),
     h.make_node("Identity", ["cond_in"], ["cond_out"])],
    "zt_outer", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4]), vi("h_out_s", [2, 4])])
# the outer scan output is h_out itself: an Identity names it apart
outer.node.append(h.make_node("Identity", ["h_out"], ["h_out_s"]))
save("ad_zt_nested",
     [h.make_node("Tanh", ["x"], ["xs"]), h.make_node("Loop", ["three", "", "h0"], ["hT", "ostack"], body=outer),
      h.make_node("Mul", ["ostack", "ostack"], ["sq"]), h.make_node("Mul", ["hT", "hT"], ["hq"]),
      rsum("sq", "a"), rsum("hq", "b"), h.make_node("Add", ["a", "b"], ["y"])],
     [vi("x", [2, 4]), vi("M", [], TP.INT64)], [vi("y", [])],
     [w("W", 4, 4), w("V", 2, 4), w("h0", 2, 4), i64("three", 3)])

# For lt_trainer_step: a batch whose mean |x| is 1 or more makes the loop run
# no iteration (as torch's exporter writes `while h.abs().mean() < 1`, capped
# at 4 iterations): h = h + 0.5 * tanh(h @ W + b), scan output the row sums
# of h. y = hT @ O, the output the loss is on; ysum (the scan output summed
# over the iterations) is a second output.
train_body = h.make_graph(
    [fconst("half", 0.5), fconst("thr_in", 1.0),
     h.make_node("MatMul", ["h_in", "W"], ["hw"]), h.make_node("Add", ["hw", "b"], ["hb"]),
     h.make_node("Tanh", ["hb"], ["ht"]), h.make_node("Mul", ["ht", "half"], ["hh"]),
     h.make_node("Add", ["h_in", "hh"], ["h_out"]), h.make_node("Abs", ["h_out"], ["ab"]),
     h.make_node("ReduceMean", ["ab"], ["mn"], keepdims=0), h.make_node("Less", ["mn", "thr_in"], ["cond_out"]),
     h.make_node("ReduceSum", ["h_out", "one"], ["rs"], keepdims=0)],
    "zt_train_body", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", ["N", 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", ["N", 4]), vi("rs", ["N"])],
    initializer=[i64("one", [1])])
save("ad_zt_train",
     [fconst("thr", 1.0), h.make_node("Abs", ["x"], ["ax"]), h.make_node("ReduceMean", ["ax"], ["m0"], keepdims=0),
      h.make_node("Less", ["m0", "thr"], ["c0"]),
      h.make_node("Loop", ["four", "c0", "x"], ["hT", "ys"], body=train_body),
      h.make_node("MatMul", ["hT", "O"], ["y"]), h.make_node("ReduceSum", ["ys", "zero"], ["ysum"], keepdims=0)],
     [vi("x", ["N", 4])], [vi("y", ["N", 3]), vi("ysum", ["S"])],
     [w("W", 4, 4), w("b", 4), w("O", 4, 3), i64("four", 4), i64("zero", [0])])
