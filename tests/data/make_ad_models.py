#!/usr/bin/python3
"""Small models with control flow for the AD's finite-difference tests
(committed; regenerate with Debian's /usr/bin/python3). Every model has one
float input x and float parameters; the gradient tests differentiate the sum
of the first output with respect to every parameter."""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
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


def rnn_step(hin, hout, W, xt=None, prefix="s"):
    """hout = tanh(hin @ W [+ xt])"""
    nodes = [h.make_node("MatMul", [hin, W], [prefix + "_mm"])]
    last = prefix + "_mm"
    if xt:
        nodes.append(h.make_node("Add", [last, xt], [prefix + "_add"]))
        last = prefix + "_add"
    nodes.append(h.make_node("Tanh", [last], [hout]))
    return nodes


# If: each branch, outer captures, an initializer inside a branch
then_g = h.make_graph([h.make_node("MatMul", ["x", "A"], ["xa"]), h.make_node("Relu", ["xa"], ["r"]),
                       h.make_node("Add", ["r", "c"], ["ty"])], "then", [], [vi("ty", [3, 4])])
else_g = h.make_graph([h.make_node("MatMul", ["x", "B"], ["xb"]), h.make_node("Sigmoid", ["xb"], ["ey"])],
                      "else", [], [vi("ey", [3, 4])], initializer=[w("B", 4, 4)])
save("ad_if", [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["p"]),
               h.make_node("If", ["p"], ["y0"], then_branch=then_g, else_branch=else_g),
               h.make_node("Mul", ["y0", "y0"], ["y"])],
     [vi("x", [3, 4])], [vi("y", [3, 4])], [w("A", 4, 4), w("c", 4), nh.from_array(np.array(0, np.float32), "zero")])


def loop_body(name, cond_out_nodes, with_scan=True, extra_nodes=(), inits=()):
    nodes = list(extra_nodes) + rnn_step("h_in", "h_out", "W", "xs", prefix=name) + list(cond_out_nodes)
    outs = [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4])]
    if with_scan:
        nodes.append(h.make_node("Mul", ["h_out", "V"], ["sc"]))
        outs.append(vi("sc", [2, 4]))
    return h.make_graph(nodes, name, [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])], outs,
                        initializer=list(inits))


def loop_model(name, loop_inputs, body, scan=True):
    nodes = [h.make_node("Tanh", ["x"], ["xs"]),
             h.make_node("Loop", loop_inputs, ["hT", "stack"] if scan else ["hT"], body=body)]
    if scan:
        nodes += [h.make_node("ReduceSum", ["stack"], ["ss"], keepdims=0),
                  h.make_node("ReduceSum", ["hT"], ["hs"], keepdims=0), h.make_node("Add", ["ss", "hs"], ["y"])]
    else:
        nodes += [h.make_node("Mul", ["hT", "hT"], ["y"])]
    save(name, nodes, [vi("x", [2, 4])], [vi("y", [] if scan else [2, 4])],
         [w("W", 4, 4), w("V", 2, 4), w("h0", 2, 4), i64("M", 5), nh.from_array(np.array(True), "T")])


identity_cond = [h.make_node("Identity", ["cond_in"], ["cond_out"])]
# trip count only, with a scan output; x and V are captured from outside
loop_model("ad_loop_trip", ["M", "", "h0"], loop_body("trip", identity_cond))
# condition only: stop after iteration 3 (cond_out = it < 3)
less3 = [h.make_node("Less", ["it", "three"], ["cond_out"])]
loop_model("ad_loop_cond", ["", "T", "h0"], loop_body("cond", less3, inits=[i64("three", 3)]))
# both: M = 5 but the condition stops it at 4 iterations
loop_model("ad_loop_both", ["M", "T", "h0"], loop_body("both", less3, inits=[i64("three", 3)]), scan=True)

# Loop in Loop: the inner loop runs twice per outer iteration, uses W from the
# outermost graph and its own initializer U
inner = h.make_graph(
    [h.make_node("MatMul", ["g_in", "U"], ["gu"]), h.make_node("Add", ["gu", "h_in"], ["ga"]),
     h.make_node("Tanh", ["ga"], ["g_out"]), h.make_node("Identity", ["c2_in"], ["c2_out"])],
    "inner", [vi("j", [], TP.INT64), vi("c2_in", [], TP.BOOL), vi("g_in", [2, 4])],
    [vi("c2_out", [], TP.BOOL), vi("g_out", [2, 4])], initializer=[w("U", 4, 4)])
outer = h.make_graph(
    [h.make_node("Loop", ["two", "", "h_in"], ["g"], body=inner)] + rnn_step("g", "h_out", "W", "xs", prefix="o")
    + identity_cond,
    "outer", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4])], initializer=[i64("two", 2)])
save("ad_loop_nested", [h.make_node("Tanh", ["x"], ["xs"]), h.make_node("Loop", ["M", "", "h0"], ["hT"], body=outer),
                        h.make_node("Mul", ["hT", "hT"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [2, 4])], [w("W", 4, 4), w("h0", 2, 4), i64("M", 3)])

# If in Loop: even iterations multiply by W1 elementwise, odd ones run tanh(h @ W2)
even_g = h.make_graph([h.make_node("Mul", ["h_in", "W1"], ["ev"])], "even", [], [vi("ev", [2, 4])])
odd_g = h.make_graph(rnn_step("h_in", "od", "W2", prefix="od"), "odd", [], [vi("od", [2, 4])])
body = h.make_graph(
    [h.make_node("Mod", ["it", "two"], ["r"]), h.make_node("Equal", ["r", "zero"], ["is_even"]),
     h.make_node("If", ["is_even"], ["h_out"], then_branch=even_g, else_branch=odd_g)] + identity_cond,
    "ifloop", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4])], initializer=[i64("two", 2), i64("zero", 0)])
save("ad_if_in_loop", [h.make_node("Loop", ["M", "", "x"], ["hT"], body=body), h.make_node("Mul", ["hT", "hT"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [2, 4])], [w("W1", 2, 4), w("W2", 4, 4), i64("M", 4)])


def scan_model(name, x_shape, in_axis, in_dir, out_axis, out_dir, out_shape):
    body = h.make_graph(
        [h.make_node("MatMul", ["s_in", "W"], ["sw"]), h.make_node("Add", ["sw", "xt"], ["sa"]),
         h.make_node("Tanh", ["sa"], ["s_out"]), h.make_node("Mul", ["s_out", "V"], ["o"])],
        name + "_body", [vi("s_in", [2, 4]), vi("xt", [2, 4])], [vi("s_out", [2, 4]), vi("o", [2, 4])])
    save(name, [h.make_node("Scan", ["s0", "x"], ["sT", "os"], body=body, num_scan_inputs=1,
                            scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir]),
                h.make_node("Mul", ["os", "P"], ["y"])],
         [vi("x", x_shape)], [vi("y", out_shape)], [w("W", 4, 4), w("V", 2, 4), w("s0", 2, 4), w("P", 1)], opset=16)


scan_model("ad_scan_fwd", [3, 2, 4], 0, 0, 0, 0, [3, 2, 4])
scan_model("ad_scan_rev_axis1", [2, 3, 4], 1, 1, 2, 1, [2, 4, 3])


# Sequences: SplitToSequence read by SequenceAt (torch.split / chunk / unbind
# as the dynamo exporter writes them): equal chunks with a shorter last one,
# listed sizes, chunks of one without keepdims; negative and int32 positions
def seq_at(seq, pos, out):
    return h.make_node("SequenceAt", [seq, pos], [out])


def rsum(x, out):
    return h.make_node("ReduceSum", [x], [out], keepdims=0)


save("ad_seq_split",
     [h.make_node("Mul", ["x", "P"], ["y0"]),
      h.make_node("SplitToSequence", ["y0", "three"], ["s1"], axis=1),
      seq_at("s1", "i0", "a"), seq_at("s1", "im1", "b"), seq_at("s1", "i1", "c"),
      h.make_node("SplitToSequence", ["y0", "sizes"], ["s2"], axis=0),
      seq_at("s2", "i1", "d"), seq_at("s2", "im2", "e"),
      h.make_node("SplitToSequence", ["y0"], ["s3"], axis=-1, keepdims=0),
      seq_at("s3", "i4", "f"), seq_at("s3", "im7_32", "g"),
      h.make_node("Mul", ["a", "c"], ["ac"]), h.make_node("Tanh", ["b"], ["tb"]), h.make_node("Mul", ["d", "d"], ["dd"]),
      h.make_node("Sin", ["e"], ["se"]), h.make_node("Mul", ["f", "g"], ["fg"]),
      rsum("ac", "r1"), rsum("tb", "r2"), rsum("dd", "r3"), rsum("se", "r4"), rsum("fg", "r5"),
      h.make_node("Sum", ["r1", "r2", "r3", "r4", "r5"], ["y"])],
     [vi("x", [3, 7])], [vi("y", [])],
     [w("P", 3, 7, scale=1.0), i64("three", 3), i64("sizes", [1, 2]), i64("i0", 0), i64("i1", 1), i64("im1", -1),
      i64("im2", -2), i64("i4", 4), nh.from_array(np.array(-7, np.int32), "im7_32")])

# A list a Loop appends to, stacked after it on the first and on the last
# axis (TorchScript's list.append and torch.stack in a scripted loop)
list_body = h.make_graph(
    rnn_step("h_in", "h_out", "W", "x", prefix="l") +
    [h.make_node("Mul", ["h_out", "V"], ["hv"]), h.make_node("SequenceInsert", ["l_in", "hv"], ["l_out"]),
     h.make_node("Identity", ["cond_in"], ["cond_out"])],
    "list_body", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4]),
                  h.make_tensor_sequence_value_info("l_in", F, [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4]), h.make_tensor_sequence_value_info("l_out", F, [2, 4])])
save("ad_loop_list",
     [h.make_node("SequenceEmpty", [], ["l0"], dtype=F),
      h.make_node("Loop", ["M", "", "h0", "l0"], ["hT", "lT"], body=list_body),
      h.make_node("ConcatFromSequence", ["lT"], ["st0"], axis=0, new_axis=1),
      h.make_node("ConcatFromSequence", ["lT"], ["st2"], axis=-1, new_axis=1),
      h.make_node("Mul", ["st0", "st0"], ["q0"]), h.make_node("Mul", ["st2", "R"], ["q2"]),
      rsum("q0", "r0"), rsum("q2", "r2"), rsum("hT", "rh"), h.make_node("Sum", ["r0", "r2", "rh"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [])], [w("W", 4, 4), w("V", 2, 4), w("h0", 2, 4), w("R", 2, 4, 3), i64("M", 3)])

# A sequence the AD cannot follow (SequenceConstruct to ConcatFromSequence):
# its gradient is refused, not silently left out
save("ad_seq_refused",
     [h.make_node("Mul", ["x", "P"], ["xp"]), h.make_node("SequenceConstruct", ["xp", "x"], ["sq"]),
      h.make_node("ConcatFromSequence", ["sq"], ["cat"], axis=0), h.make_node("Add", ["cat", "Q"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [4, 4])], [w("P", 2, 4), w("Q", 4, 4)])

# A scan output made by an If in the body (the If's branches hold the rest
# of the iteration, the recursion included): even iterations h * W1, odd
# ones tanh(h @ W2); the scan output is h * V
sbody = h.make_graph(
    [h.make_node("Mod", ["it", "two"], ["r"]), h.make_node("Equal", ["r", "zero"], ["is_even"]),
     h.make_node("If", ["is_even"], ["h_out"], then_branch=even_g, else_branch=odd_g),
     h.make_node("Mul", ["h_out", "V"], ["sc"])] + identity_cond,
    "ifscan", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4]), vi("sc", [2, 4])], initializer=[i64("two", 2), i64("zero", 0)])
save("ad_if_in_loop_scan",
     [h.make_node("Loop", ["M", "", "x"], ["hT", "stack"], body=sbody),
      h.make_node("ReduceSum", ["stack"], ["ss"], keepdims=0), h.make_node("ReduceSum", ["hT"], ["hs"], keepdims=0),
      h.make_node("Add", ["ss", "hs"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [])], [w("W1", 2, 4), w("W2", 4, 4), w("V", 2, 4), i64("M", 4)])

# A scan output of an outer loop whose body runs an inner loop
outer_scan = h.make_graph(
    [h.make_node("Loop", ["two", "", "h_in"], ["g"], body=inner)] + rnn_step("g", "h_out", "W", "xs", prefix="o")
    + [h.make_node("Mul", ["h_out", "V"], ["sc"])] + identity_cond,
    "outer_scan", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("h_in", [2, 4])],
    [vi("cond_out", [], TP.BOOL), vi("h_out", [2, 4]), vi("sc", [2, 4])], initializer=[i64("two", 2)])
save("ad_loop_in_loop_scan",
     [h.make_node("Tanh", ["x"], ["xs"]), h.make_node("Loop", ["M", "", "h0"], ["hT", "stack"], body=outer_scan),
      h.make_node("ReduceSum", ["stack"], ["ss"], keepdims=0), h.make_node("ReduceSum", ["hT"], ["hs"], keepdims=0),
      h.make_node("Add", ["ss", "hs"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [])], [w("W", 4, 4), w("V", 2, 4), w("h0", 2, 4), i64("M", 3)])

# A while loop (no trip count) appending an If's result to a list that is
# then concatenated on axis 0 and on axis 1 (torch's dynamo exporter writes
# EmbeddingBag so): iteration 1 appends tanh(x * P), the others x * P * i
cat_then = h.make_graph([h.make_node("Mul", ["x", "P"], ["xp1"]), h.make_node("Tanh", ["xp1"], ["e1"])], "one", [],
                        [vi("e1", [2, 4])])
cat_else = h.make_graph([h.make_node("Mul", ["x", "P"], ["xp2"]), h.make_node("Cast", ["i"], ["fi"], to=F),
                         h.make_node("Mul", ["xp2", "fi"], ["e2"])], "other", [], [vi("e2", [2, 4])])
cat_body = h.make_graph(
    [h.make_node("Equal", ["i", "one"], ["is_one"]),
     h.make_node("If", ["is_one"], ["e"], then_branch=cat_then, else_branch=cat_else),
     h.make_node("SequenceInsert", ["l_in", "e"], ["l_out"]), h.make_node("Add", ["i", "one"], ["i2"]),
     h.make_node("Less", ["i2", "three"], ["cond_out"])],
    "cat_body", [vi("it", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("i", [], TP.INT64),
                 h.make_tensor_sequence_value_info("l_in", F, None)],
    [vi("cond_out", [], TP.BOOL), vi("i2", [], TP.INT64), h.make_tensor_sequence_value_info("l_out", F, None)])
save("ad_loop_concat",
     [h.make_node("SequenceEmpty", [], ["l0"], dtype=F),
      h.make_node("Loop", ["", "T", "zero_i", "l0"], ["iT", "l"], body=cat_body),
      h.make_node("ConcatFromSequence", ["l"], ["c0"], axis=0), h.make_node("ConcatFromSequence", ["l"], ["c1"], axis=-1),
      h.make_node("Mul", ["c0", "c0"], ["c0sq"]), h.make_node("Sin", ["c1"], ["c1s"]),
      h.make_node("ReduceSum", ["c0sq"], ["a"], keepdims=0), h.make_node("ReduceSum", ["c1s"], ["b"], keepdims=0),
      h.make_node("Add", ["a", "b"], ["y"])],
     [vi("x", [2, 4])], [vi("y", [])],
     [w("P", 2, 4, scale=1.0), nh.from_array(np.array(True), "T"), i64("zero_i", 0), i64("one", 1), i64("three", 3)])

# torch's TorchScript unbind loop (for xt in x.unbind(0)) as its exporter
# writes it: SplitToSequence with a scalar split of 1 and keepdims=0, whose
# pieces drop the axis as onnxruntime makes them (the spec ignores keepdims
# when split is given); a scalar split of 2 keeps it. Concat along axis 0
# of a piece and itself is [14] only when the axis was dropped, which the
# Mul by V [14] needs.
save("ad_seq_unbind",
     [h.make_node("Mul", ["x", "P"], ["y0"]),
      h.make_node("SplitToSequence", ["y0", "one"], ["s1"], axis=0, keepdims=0),
      seq_at("s1", "i1", "a"), h.make_node("Concat", ["a", "a"], ["aa"], axis=0),
      h.make_node("Mul", ["aa", "V"], ["av"]), h.make_node("Tanh", ["av"], ["ta"]),
      h.make_node("SplitToSequence", ["y0", "two"], ["s2"], axis=0, keepdims=0),
      seq_at("s2", "i0", "b"), h.make_node("Mul", ["b", "b"], ["bb"]),
      rsum("ta", "r1"), rsum("bb", "r2"), h.make_node("Add", ["r1", "r2"], ["y"])],
     [vi("x", [3, 7])], [vi("y", [])],
     [w("P", 3, 7, scale=1.0), w("V", 14, scale=1.0), i64("one", 1), i64("two", 2), i64("i0", 0), i64("i1", 1)])

# TorchScript's `for xt in x.unbind(0): h = tanh(xt @ W + h @ U)` as its
# exporter writes it: the pieces of a scalar split of 1 (keepdims=0) read by
# SequenceAt inside a Loop, with value_info declaring rank 3 for the values
# made from a piece and for the state the body returns (the exporter assumes
# the axis kept; the state it takes in is declared rank 2, as the exporter
# writes it): the ranks lantern infers
# replace the declared ones, so the MatMul on a piece is differentiated.
def unbind_loop(name, body_name, h_in_rank):
    """the unbind loop described above; the state the body takes in declared of rank h_in_rank"""
    body = h.make_graph(
        [h.make_node("SequenceAt", ["xs", "it"], ["xt"]), h.make_node("MatMul", ["xt", "W"], ["xw"]),
         h.make_node("MatMul", ["h_in", "U"], ["hu"]), h.make_node("Add", ["xw", "hu"], ["s"]),
         h.make_node("Tanh", ["s"], ["h_out"]), h.make_node("Identity", ["c_in"], ["c_out"])],
        body_name, [vi("it", [], TP.INT64), vi("c_in", [], TP.BOOL), vi("h_in", [None] * h_in_rank)],
        [vi("c_out", [], TP.BOOL), vi("h_out", [None, None, None])],
        value_info=[vi("xt", [None, None, None]), vi("xw", [None, None, None]), vi("s", [None, None, None])])
    save(name,
         [h.make_node("SplitToSequence", ["x", "one"], ["xs"], axis=0, keepdims=0),
          h.make_node("SequenceLength", ["xs"], ["T"]),
          h.make_node("Loop", ["T", "", "h0"], ["hT"], body=body),
          h.make_node("Mul", ["hT", "hT"], ["sq"]), rsum("sq", "y")],
         [vi("x", [4, 2, 3])], [vi("y", [])],
         [w("W", 3, 5, scale=1.0), w("U", 5, 5, scale=0.5), w("h0", 2, 5, scale=0.5), i64("one", 1)])


unbind_loop("ad_unbind_loop", "unbind_body", 2)
# The same with the state the body takes in declared rank 3 as well (the
# exporter does so for a second loop after the first): the start's rank,
# 2, is the one the body gets.
unbind_loop("ad_unbind_loop_in3", "unbind_body3", 3)
# A Scan RNN whose body declares its state and its slice of rank 3 where
# the state starting it and the slices of x are of rank 2 (as a TorchScript
# export may declare them): the starts' ranks are the ones the body gets.
scan_body = h.make_graph(
    [h.make_node("MatMul", ["x_t", "W"], ["xw"]), h.make_node("MatMul", ["h_in", "U"], ["hu"]),
     h.make_node("Add", ["xw", "hu"], ["s"]), h.make_node("Tanh", ["s"], ["h_out"]),
     h.make_node("Identity", ["h_out"], ["y_t"])],
    "scan_rank_body", [vi("h_in", [None, None, None]), vi("x_t", [None, None, None])],
    [vi("h_out", [None, None, None]), vi("y_t", [None, None, None])])
save("ad_scan_declared_rank",
     [h.make_node("Scan", ["h0", "x"], ["hT", "ys"], body=scan_body, num_scan_inputs=1),
      h.make_node("Mul", ["ys", "ys"], ["sq"]), h.make_node("Mul", ["hT", "hT"], ["hq"]),
      rsum("sq", "a"), rsum("hq", "b"), h.make_node("Add", ["a", "b"], ["y"])],
     [vi("x", [4, 2, 3])], [vi("y", [])],
     [w("W", 3, 5, scale=1.0), w("U", 5, 5, scale=0.5), w("h0", 2, 5, scale=0.5)])
# LayerNormalization whose Mean and InvStdDev outputs the loss reads as well
# as Y: W's gradient goes through all three.
save("ad_ln_stats",
     [h.make_node("MatMul", ["x", "W"], ["z"]),
      h.make_node("LayerNormalization", ["z", "g", "b"], ["y", "mu", "inv"], axis=-1, epsilon=1e-3),
      h.make_node("Mul", ["y", "y"], ["y2"]), rsum("y2", "a"), h.make_node("Mul", ["mu", "mu"], ["mu2"]),
      rsum("mu2", "c"), rsum("inv", "d"), h.make_node("Sum", ["a", "c", "d"], ["loss"])],
     [vi("x", [3, 4])], [vi("loss", [])],
     [w("W", 4, 5, scale=1.0), w("g", 5, scale=1.0), w("b", 5, scale=0.5)], opset=17)
# The same with the Mean output not asked for: InvStdDev's gradient takes
# the mean from z again.
save("ad_ln_inv_only",
     [h.make_node("MatMul", ["x", "W"], ["z"]),
      h.make_node("LayerNormalization", ["z", "g", "b"], ["y", "", "inv"], axis=-1, epsilon=1e-3),
      h.make_node("Mul", ["y", "y"], ["y2"]), rsum("y2", "a"), rsum("inv", "d"),
      h.make_node("Add", ["a", "d"], ["loss"])],
     [vi("x", [3, 4])], [vi("loss", [])],
     [w("W", 4, 5, scale=1.0), w("g", 5, scale=1.0), w("b", 5, scale=0.5)], opset=17)
# A Loop and a Scan whose bodies declare their carried values and outputs
# with an element type but no shape, as some exporters write them: the
# state's rank comes from the value it starts from (ir/shape_control.c), so
# the MatMuls in the body and after the loop can be differentiated.
def nos(name):
    return h.make_tensor_value_info(name, F, None)


und_body = h.make_graph(
    [h.make_node("Gather", ["x", "it"], ["xt"], axis=0), h.make_node("MatMul", ["xt", "W"], ["xw"]),
     h.make_node("MatMul", ["h_in", "U"], ["hu"]), h.make_node("Add", ["xw", "hu"], ["s"]),
     h.make_node("Tanh", ["s"], ["h_out"]), h.make_node("Identity", ["h_out"], ["y_t"]),
     h.make_node("Identity", ["c_in"], ["c_out"])],
    "und_body", [vi("it", [], TP.INT64), vi("c_in", [], TP.BOOL), nos("h_in")],
    [vi("c_out", [], TP.BOOL), nos("h_out"), nos("y_t")])
save("ad_loop_undeclared",
     [h.make_node("Loop", ["T", "", "h0"], ["hT", "ys"], body=und_body),
      h.make_node("MatMul", ["hT", "O"], ["z"]), h.make_node("Mul", ["z", "z"], ["zq"]),
      h.make_node("Mul", ["ys", "ys"], ["yq"]), rsum("zq", "a"), rsum("yq", "b"), h.make_node("Add", ["a", "b"], ["y"])],
     [vi("x", [4, 2, 3])], [vi("y", [])],
     [w("W", 3, 5, scale=1.0), w("U", 5, 5, scale=0.5), w("h0", 2, 5, scale=0.5), w("O", 5, 3), i64("T", 4)])
und_scan = h.make_graph(
    [h.make_node("MatMul", ["x_t", "W"], ["xw"]), h.make_node("MatMul", ["h_in", "U"], ["hu"]),
     h.make_node("Add", ["xw", "hu"], ["s"]), h.make_node("Tanh", ["s"], ["h_out"]),
     h.make_node("Identity", ["h_out"], ["y_t"])],
    "und_scan", [nos("h_in"), nos("x_t")], [nos("h_out"), nos("y_t")])
save("ad_scan_undeclared",
     [h.make_node("Scan", ["h0", "x"], ["hT", "ys"], body=und_scan, num_scan_inputs=1),
      h.make_node("MatMul", ["hT", "O"], ["z"]), h.make_node("Mul", ["z", "z"], ["zq"]),
      h.make_node("Mul", ["ys", "ys"], ["yq"]), rsum("zq", "a"), rsum("yq", "b"), h.make_node("Add", ["a", "b"], ["y"])],
     [vi("x", [4, 2, 3])], [vi("y", [])],
     [w("W", 3, 5, scale=1.0), w("U", 5, 5, scale=0.5), w("h0", 2, 5, scale=0.5), w("O", 5, 3)])
# torch.stack of a TorchScript loop's states, as its exporter writes it: the
# states go into a sequence (SequenceEmpty, SequenceInsert), stacked by
# ConcatFromSequence(new_axis=1), and the output is declared with one rank
# too many (rank 4 for what is [N, T, 3]). The rank comes from the inserted
# states (ir/shape_control.c), so a seed or target of the true shape fits.
stack_body = h.make_graph(
    [h.make_node("SequenceAt", ["xs", "it"], ["xt"]), h.make_node("MatMul", ["xt", "W"], ["xw"]),
     h.make_node("MatMul", ["h_in", "U"], ["hu"]), h.make_node("Add", ["xw", "hu"], ["s"]),
     h.make_node("Tanh", ["s"], ["h_out"]), h.make_node("SequenceInsert", ["seq_in", "h_out"], ["seq_out"]),
     h.make_node("Identity", ["c_in"], ["c_out"])],
    "stack_body", [vi("it", [], TP.INT64), vi("c_in", [], TP.BOOL), vi("h_in", [2, 5]),
                   h.make_tensor_sequence_value_info("seq_in", F, None)],
    [vi("c_out", [], TP.BOOL), vi("h_out", [2, 5]), h.make_tensor_sequence_value_info("seq_out", F, None)])
save("ad_loop_stack_declared",
     [h.make_node("SplitToSequence", ["x", "one"], ["xs"], axis=1, keepdims=0),
      h.make_node("SequenceLength", ["xs"], ["T"]), h.make_node("SequenceEmpty", [], ["seq0"], dtype=F),
      h.make_node("Loop", ["T", "true", "h0", "seq0"], ["hT", "hs"], body=stack_body),
      h.make_node("ConcatFromSequence", ["hs"], ["st"], axis=1, new_axis=1),
      h.make_node("MatMul", ["st", "O"], ["y"])],
     [vi("x", [2, 4, 3])], [vi("y", ["a", "b", "c", 3])],
     [w("W", 3, 5, scale=1.0), w("U", 5, 5, scale=0.5), w("h0", 2, 5, scale=0.5), w("O", 5, 3), i64("one", 1),
      nh.from_array(np.array(True), "true")])
# Relu at its kink: W[0] + x = 0 for x = 0, where central differences see a
# slope of 1/2 and the gradient takes 0 (grad --check must fail on it)
save("ad_relu_kink", [h.make_node("Add", ["x", "W"], ["s"]), h.make_node("Relu", ["s"], ["y"])],
     [vi("x", [3])], [vi("y", [3])], [nh.from_array(np.array([0.0, 0.5, -0.5], np.float32), "W")])
# A Loop's per-iteration outputs as the model's output, [N, 2 * 4] with no
# dim known to shape inference: mse and bce-logits targets are compared in
# the shape the run computes, and targets of another size are refused
out_body = h.make_graph(
    [h.make_node("MatMul", ["h_in", "W"], ["hw"]), h.make_node("Tanh", ["hw"], ["h_out"]),
     h.make_node("Identity", ["h_out"], ["y_t"]), h.make_node("Identity", ["c_in"], ["c_out"])],
    "out_body", [vi("it", [], TP.INT64), vi("c_in", [], TP.BOOL), vi("h_in", None)],
    [vi("c_out", [], TP.BOOL), vi("h_out", None), vi("y_t", None)])
save("ad_loop_out_unknown",
     [h.make_node("Loop", ["two", "true", "x"], ["hT", "ys"], body=out_body),
      h.make_node("Transpose", ["ys"], ["yt"], perm=[1, 0, 2]), h.make_node("Flatten", ["yt"], ["y"], axis=1)],
     [vi("x", ["N", 4])], [vi("y", ["N", "k"])],
     [w("W", 4, 4), i64("two", 2), nh.from_array(np.array(True), "true")])
# Boxes that reach RoiAlign's rois (an input it takes no gradient for, as
# torch's roi_align) through a Mul: grad --check excepts both factors
save("ad_roi_scaled",
     [h.make_node("Conv", ["x", "Wc"], ["c"]), h.make_node("Mul", ["B", "S"], ["rois"]),
      h.make_node("RoiAlign", ["c", "rois", "bi"], ["y"], output_height=2, output_width=2, sampling_ratio=2)],
     [vi("x", [1, 1, 5, 5])], [vi("y", [1, 2, 2, 2])],
     [nh.from_array(np.array([[0.3, 0.4, 2.6, 2.9]], np.float32), "B"), w("Wc", 2, 1, 1, 1),
      nh.from_array(np.array([1.25], np.float32), "S"), i64("bi", [0])], opset=16)
# TorchScript's constant folding names what it computes onnx::OP_N: a norm
# scale stored as 1 + weight (onnx::Mul_7) trains unlike the module's (the
# trainer notes it); a Linear's transposed weight (onnx::MatMul_8) trains as
# the weight would (not noted)
save("ts_fold_names",
     [h.make_node("Mul", ["x", "onnx::Mul_7"], ["s"]), h.make_node("MatMul", ["s", "onnx::MatMul_8"], ["y"])],
     [vi("x", ["N", 4])], [vi("y", ["N", 3])],
     [nh.from_array((1 + rng.standard_normal(4) * 0.1).astype(np.float32), "onnx::Mul_7"), w("onnx::MatMul_8", 4, 3)])
# tf2onnx's names: an attention scale ".../Mul/y:0" and LayerNormalization's
# ".../ones/Const:0" are constants train keeps fixed; a Keras variable read
# (".../ReadVariableOp:0", here a bias of zeros) trains
save("tf_consts",
     [h.make_node("MatMul", ["x", "model/dense/MatMul/ReadVariableOp:0"], ["z"]),
      h.make_node("Add", ["z", "model/dense/BiasAdd/ReadVariableOp:0"], ["zb"]),
      h.make_node("Mul", ["zb", "model/mha/Mul/y:0"], ["zs"]),
      h.make_node("Mul", ["zs", "model/ln/ones/Const:0"], ["logits"])],
     [vi("x", ["N", 4])], [vi("logits", ["N", 3])],
     [w("model/dense/MatMul/ReadVariableOp:0", 4, 3), nh.from_array(np.zeros(3, np.float32), "model/dense/BiasAdd/ReadVariableOp:0"),
      nh.from_array(np.array(0.5, np.float32), "model/mha/Mul/y:0"), nh.from_array(np.ones(3, np.float32), "model/ln/ones/Const:0")])
# BatchNormalization in inference form whose mean and variance are computed
# from its input, as tf2onnx writes Keras's LayerNormalization: the
# gradient flows through them too (grad --check holds it to finite
# differences)
save("ad_bn_computed_stats",
     [h.make_node("Mul", ["x", "p"], ["hh"]),
      h.make_node("ReduceMean", ["hh"], ["mean4"], axes=[0, 2, 3], keepdims=1),
      h.make_node("Sub", ["hh", "mean4"], ["d"]), h.make_node("Mul", ["d", "d"], ["d2"]),
      h.make_node("ReduceMean", ["d2"], ["var4"], axes=[0, 2, 3], keepdims=1),
      h.make_node("Reshape", ["mean4", "shp1"], ["mean"]), h.make_node("Reshape", ["var4", "shp1"], ["var"]),
      h.make_node("BatchNormalization", ["hh", "scale", "bias", "mean", "var"], ["y4"], epsilon=1e-3),
      h.make_node("Reshape", ["y4", "shp2"], ["yf"]), h.make_node("MatMul", ["yf", "Wo"], ["y"])],
     [vi("x", [6, 3, 4, 1])], [vi("y", [6, 2])],
     [nh.from_array((rng.standard_normal((1, 3, 4, 1)) * 0.5 + 1).astype(np.float32), "p"), w("Wo", 12, 2),
      nh.from_array(np.ones(3, np.float32), "scale"), nh.from_array(np.zeros(3, np.float32), "bias"),
      i64("shp1", [3]), i64("shp2", [-1, 12])])
# tf2onnx folds a BatchNorm into the Conv before it, naming the products
# NAME_weights_fused_bn and NAME_bias_fused_bn: the trainer notes them
save("tf_fused_bn",
     [h.make_node("Conv", ["x", "seq/conv2d/BiasAdd_weights_fused_bn", "seq/conv2d/BiasAdd_bias_fused_bn"], ["y"])],
     [vi("x", ["N", 2, 5, 5])], [vi("y", ["N", 3, 5, 5])],
     [w("seq/conv2d/BiasAdd_weights_fused_bn", 3, 2, 1, 1), nh.from_array(np.zeros(3, np.float32) + 0.1, "seq/conv2d/BiasAdd_bias_fused_bn")])
