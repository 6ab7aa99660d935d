/* A module's buffers (the graph signature's BUFFER targets: rotary
 * embeddings' inv_freq, a registered scale or mask) are not parameters in
 * PyTorch: no optimizer moves them. The initializers of those names stay
 * out of training here too. A BatchNormalization's running statistics are
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

int lt_ir_freeze_buffers(lt_module *m)
{
    int frozen = 0;
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
