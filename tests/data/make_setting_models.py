"""Writes tests/data/settings/ for tests/unit/test_op_settings.c: small
models whose float initializers are not all weights.

  resize.onnx     out = Conv(Resize(x, scales=val_3), w, b), x of
                  [batch, 2, 2, 2] upsampled by 2 (scales [1, 1, 2, 2], a
                  float initializer, as torch's dynamo exporter writes
                  nn.Upsample), w [3, 2, 1, 1]: the scales are the Resize's
                  setting, no weight. No torch metadata.
  fused_bn.onnx   out = Conv(x, conv.weight, conv.weight_bias) of
                  [batch, 2, 2, 2], laid out as torch's dynamo exporter
                  writes a Conv with an eval-mode BatchNorm its optimizer
                  folded in (onnxscript's FuseBatchNormIntoConv): the node
                  carries the BatchNorm's torch.fx call and the rule, the
                  fused bias (beta - mean * gamma / sqrt(var + eps)) is an
                  initializer the graph signature does not name, and every
                  parameter of the signature is in the file or named by
                  that call. The metadata are raw protobuf fields as in
                  make_folded_models.py (onnx 1.12's schema lacks them).
  x.npy           8 samples of [2, 2, 2] (float32)
  y_resize.npy    8 targets of [3, 4, 4]
  y_bn.npy        8 targets of [3, 2, 2]

Run with /usr/bin/python3 (onnx 1.12, numpy):
    python3 tests/data/make_setting_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from pb_fields import save_torch_model, with_fields

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings")


def save(graph, name):
    save_torch_model(graph, os.path.join(OUT, name), 17)


os.makedirs(OUT, exist_ok=True)
rng = np.random.RandomState(11)
w = (rng.standard_normal((3, 2, 1, 1)) * 0.5).astype(np.float32)
b = (rng.standard_normal(3) * 0.1).astype(np.float32)
np.save(os.path.join(OUT, "x.npy"), rng.standard_normal((8, 2, 2, 2)).astype(np.float32))
np.save(os.path.join(OUT, "y_resize.npy"), rng.standard_normal((8, 3, 4, 4)).astype(np.float32))
np.save(os.path.join(OUT, "y_bn.npy"), rng.standard_normal((8, 3, 2, 2)).astype(np.float32))

x_in = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 2, 2])

resize = helper.make_node("Resize", ["x", "", "val_3"], ["up"], name="node_upsample_nearest2d", mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")
conv = helper.make_node("Conv", ["up", "w", "b"], ["out"], name="node_conv2d")
save(helper.make_graph(
    [resize, conv], "main_graph", [x_in], [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3, 4, 4])],
    [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "val_3"), numpy_helper.from_array(w, "w"),
     numpy_helper.from_array(b, "b")]), "resize.onnx")

call = ("call_function[target=torch.ops.aten._native_batch_norm_legit_no_training.default](args = (%conv2d, "
        "%p_bn_weight, %p_bn_bias, %b_bn_running_mean, %b_bn_running_var, 0.1, 1e-05), kwargs = {})")
fused = helper.make_node("Conv", ["x", "conv.weight", "conv.weight_bias"], ["out"], name="node_Conv_7")
fused = with_fields(fused, 9, [
    ("pkg.onnxscript.rewriter.rule_name", "FuseBatchNormIntoConv"),
    ("pkg.torch.onnx.name_scopes", "['', 'bn', '_native_batch_norm_legit_no_training']"),
    ("pkg.torch.onnx.fx_node", "%_native_batch_norm_legit_no_training : [num_users=1] = " + call)])
signature = "\n".join([
    "", "# inputs",
    "p_conv_weight: PARAMETER target='conv.weight'",
    "p_bn_weight: PARAMETER target='bn.weight'",
    "p_bn_bias: PARAMETER target='bn.bias'",
    "b_bn_running_mean: BUFFER target='bn.running_mean' persistent=True",
    "b_bn_running_var: BUFFER target='bn.running_var' persistent=True",
    "x: USER_INPUT", "", "# outputs", "out: USER_OUTPUT", ""])
graph = helper.make_graph(
    [fused], "main_graph", [x_in], [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3, 2, 2])],
    [numpy_helper.from_array(w, "conv.weight"), numpy_helper.from_array(b, "conv.weight_bias")])
graph = with_fields(graph, 16, [("pkg.torch.export.ExportedProgram.graph_signature", signature)])
save(graph, "fused_bn.onnx")
