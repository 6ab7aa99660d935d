/* The graph's constants among a model's initializers. */
#include "ir.h"
#include <string.h>

/* One value throughout, and a name an exporter gives its own values
 * (TorchScript's onnx::* scalars and _tensor_constant, dynamo's val_N and
 * lifted_tensor, tf2onnx's Const:0 and operands: tf_constant) or a place
 * in an If/Loop/Scan body: GELU's 3.0, an
 * attention scale. train keeps them fixed (lt_train_opts.train_constants)
 * and grad --check does not hold them to finite differences. */
/* tf2onnx names an initializer after the TensorFlow tensor it holds,
 * "scope/op/input:0": a variable's read is ".../ReadVariableOp:0" (a
 * Keras weight, which may start single-valued, as a BatchNorm's gamma), a
 * constant ".../Const:0" (LayerNormalization's ones and zeros, an RNN's
 * zero state) or an operand of its op (an attention scale, ".../Mul/y:0") */
static bool tf_constant(const char *n)
{
    size_t l = strlen(n);
    if (l < 3 || strcmp(n + l - 2, ":0") != 0 || strstr(n, "ReadVariableOp"))
        return false;
    const char *last = strrchr(n, '/');
    last = last ? last + 1 : n;
    return !strncmp(last, "Const", 5) || !strcmp(last, "y:0") || !strcmp(last, "x:0");
}

bool lt_ir_graph_constant(const lt_module *m, const lt_param *p)
{
    const lt_tensor *t = &p->data;
    if (!p->trainable || p->torch_source || !lt_dtype_is_float(t->dtype) || t->numel < 1 || !p->value ||
        !lt_ir_one_value(t))
        return false;
    const char *n = p->name;
    /* TorchScript's onnx::* also names folded weights (a zero-initialized
     * weight's transpose is single-valued too): only its scalars count */
    bool temp = (!strncmp(n, "onnx::", 6) && t->numel == 1) || !strncmp(n, "_tensor_constant", 16) ||
                !strncmp(n, "lifted_tensor", 13) ||
                /* val_N, and val_N_M: a torch.cond branch's literal the
                 * dynamo exporter lifted into the main graph */
                (!strncmp(n, "val_", 4) && n[4] >= '0' && n[4] <= '9' && strspn(n + 4, "0123456789_") == strlen(n + 4));
    return temp || tf_constant(n) || p->value->block != m->main;
}
