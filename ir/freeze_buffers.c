/* A module's buffers (the graph signature's BUFFER targets: rotary
 * embeddings' inv_freq, a registered scale or mask) are not parameters in
 * PyTorch: no optimizer moves them. The initializers of those names stay
 * out of training here too, as do the tables torch's dynamo optimizer
 * folds from them that every layer multiplies by (folded_buffer_table). A BatchNormalization's running statistics are
 * buffers that its own training-mode forward moves (ir/train_mode.c): they
 * keep their place and are left as they are. */
#include "torch_names.h"
#include <string.h>

static bool running_stat(const lt_block *b, const lt_ival *v)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int k = 3; n->op == LT_OP_BATCH_NORMALIZATION && k < n->nin && k <= 4; k++)
            if (n->in[k] == v)
                return true;
        for (int r = 0; r < n->nregions; r++)
            if (running_stat(n->regions[r], v))
                return true;
    }
    return false;
}

/* Whether p is a table the exporter folded from buffers and every layer
 * multiplies by: a float initializer the signature does not name, not an
 * exporter intermediate (val_N), read only by Mul nodes of two or more
 * clones of one layer (a rotary embedding's cos and sin, computed from
 * inv_freq and folded under a graph node's name such as unsqueeze_14). A
 * layer's weights are its own; a table shared by every layer that scales
 * activations comes from the model's buffers. */
static bool folded_buffer_table(const lt_module *m, const lt_param *p)
{
    if (!p->name || !p->value || !lt_dtype_is_float(p->data.dtype) || !strncmp(p->name, "val_", 4) ||
        lt_torch_named(m, p->name) || p->split_from || p->torch_source || p->restored)
        return false;
    const lt_block *b = m->main;
    const char *first = NULL;
    bool other = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != p->value)
                continue;
            if (n->op != LT_OP_MUL || !n->scope)
                return false;
            if (!first)
                first = n->scope;
            else if (!lt_torch_same_but_numbers(first, n->scope))
                return false;
            else
                other |= strcmp(first, n->scope) != 0;
        }
    }
    return other;
}

int lt_ir_freeze_buffers(lt_module *m)
{
    int frozen = 0;
    for (int p = 0; m->ntorch && p < m->nparams; p++) {
        lt_param *pp = &m->params[p];
        if (pp->trainable && folded_buffer_table(m, pp)) {
            pp->trainable = false;
            pp->torch_buffer = true;
            frozen++;
        }
    }
    for (int i = 0; i < m->ntorch; i++) {
        if (!m->torch_buffer[i])
            continue;
        for (int p = 0; p < m->nparams; p++) {
            lt_param *pp = &m->params[p];
            if (!pp->trainable || !pp->name || strcmp(pp->name, m->torch_name[i]) != 0 || !pp->value ||
                !lt_dtype_is_float(pp->data.dtype) || running_stat(m->main, pp->value))
                continue;
            pp->trainable = false;
            pp->torch_buffer = true;
            frozen++;
        }
    }
    return frozen;
}
