/* The graph's constants among a model's initializers. */
#include "ir.h"
#include <string.h>

/* One value throughout, and a name an exporter gives its own values
 * (TorchScript's onnx::* scalars and _tensor_constant, dynamo's val_N and
 * lifted_tensor) or a place in an If/Loop/Scan body: GELU's 3.0, an
 * attention scale. train keeps them fixed (lt_train_opts.train_constants)
 * and grad --check does not hold them to finite differences. */
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
    return temp || p->value->block != m->main;
}
