/* A module's buffers (the graph signature's BUFFER targets: rotary
 * embeddings' inv_freq, a registered scale or mask) are not parameters in
 * PyTorch: no optimizer moves them. The initializers of those names stay
 * out of training here too, as do the tables torch's dynamo optimizer
 * folds from them that every layer multiplies by (folded_buffer_table). A BatchNormalization's running statistics are
 * buffers that its own training-mode forward moves (ir/train_mode.c): they
 * keep their place and are left as they are. So do constants the exporter
 * folded that no parameter made (folded_constant).
 *
 * In any model, a float initializer that nodes read only as one of their
 * settings (op_setting_only: a Resize's scales, as torch's dynamo exporter
 * writes nn.Upsample's scale factor, val_N = [1, 1, 2, 2]) is no parameter
 * either: it gets no gradient, and trained, weight decay alone would shrink
 * it (after one SGD step the scales 0.999995 and 2 * 0.999995 made the
 * upsampled channels 63 of 64 and the next Conv failed). */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

/* Whether input k of n is a setting of the operation that no gradient
 * flows to, in PyTorch as in lantern's rules: a Resize's roi and scales,
 * an Upsample's scales, a Dropout's ratio, a loss's class weights (torch
 * has no derivative for them), the boxes of RoiAlign and MaxRoiPool
 * (torchvision's give them none). */
static bool setting_slot(const lt_node *n, int k)
{
    switch (n->op) {
    case LT_OP_RESIZE:
        return k == 1 || k == 2;
    case LT_OP_UPSAMPLE:
    case LT_OP_DROPOUT:
    case LT_OP_ROI_ALIGN:
    case LT_OP_MAX_ROI_POOL:
        return k == 1;
    case LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS:
    case LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS:
        return k == 2;
    default:
        return false;
    }
}

/* The reads of v in b and the blocks inside it (they read it by lexical
 * scope): how many, -1 when one is not a setting_slot. */
static int setting_reads(const lt_block *b, const lt_ival *v)
{
    int reads = 0;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v)
                continue;
            if (!setting_slot(n, k))
                return -1;
            reads++;
        }
        for (int r = 0; r < n->nregions; r++) {
            int in = setting_reads(n->regions[r], v);
            if (in < 0)
                return -1;
            reads += in;
        }
    }
    return reads;
}

/* Whether p is a float initializer read, and only as a setting; the
 * default of a graph input (an initializer listed among the inputs) is
 * read through that input, which shadows it. */
static bool op_setting_only(const lt_module *m, int p)
{
    const lt_param *pp = &m->params[p];
    if (!pp->trainable || !pp->value || !lt_dtype_is_float(pp->data.dtype))
        return false;
    const lt_ival *v = pp->value;
    for (int k = 0; pp->is_input_default && m->input_default && k < m->main->nparams; k++)
        if (m->input_default[k] == p)
            v = m->main->params[k];
    return setting_reads(m->main, v) > 0 && (v == pp->value || setting_reads(m->main, pp->value) >= 0);
}

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

static void mark_read(const lt_module *m, const lt_block *b, bool *read)
{
    const char *fx[16];
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        int nf = lt_torch_fx_tensors(m, n->fx_call, fx, 16);
        for (int f = 0; f < nf; f++)
            for (int t = 0; t < m->ntorch; t++)
                read[t] |= m->torch_name[t] == fx[f];
        for (int r = 0; r < n->nregions; r++)
            mark_read(m, n->regions[r], read);
    }
}

/* Whether every parameter the signature names is in the file or read by
 * some node's torch.fx call (a weight the exporter folded into its
 * transpose, val_N, is named by the product that reads the transpose):
 * then nothing the signature does not name was folded from a parameter.
 * False without fx metadata. */
static bool params_accounted(const lt_module *m)
{
    bool any = false;
    for (int i = 0; i < m->main->nnodes && !any; i++)
        any = m->main->nodes[i]->fx_call != NULL;
    bool *read = any ? calloc((size_t)m->ntorch + 1, sizeof *read) : NULL;
    if (!read)
        return false;
    mark_read(m, m->main, read);
    bool all = true;
    for (int t = 0; t < m->ntorch && all; t++)
        all = m->torch_buffer[t] || read[t] || lt_torch_is_param(m, m->torch_name[t]);
    free(read);
    return all;
}

/* Whether the optimizer's record of p's folding (folded_from) names a
 * parameter of the source: then p stands for it, whatever its size */
static bool folded_from_param(const lt_module *m, const lt_param *p)
{
    const char *at = p->folded_from, *el;
    size_t len;
    while (at && (el = lt_torch_list_next(&at, &len)))
        for (int t = 0; t < m->ntorch; t++)
            if (!m->torch_buffer[t] && strlen(m->torch_name[t]) == len && !memcmp(m->torch_name[t], el, len))
                return true;
    return false;
}

/* Whether the optimizer's record of p's folding names only values no
 * parameter made: none is a parameter of the source, nor an initializer
 * whose own record names one (or that has no record and is not an
 * exporter constant, val_N); the others are the folded operations' values
 * (arange, pow_1). BLOOM's ALiBi slopes, folded from arange and pow, are
 * such a constant even where the file leaves a parameter unaccounted for
 * (a tied embedding's second name). */
static bool folded_from_constants(const lt_module *m, const lt_param *p, int depth)
{
    const char *at = p->folded_from, *el;
    size_t len;
    bool any = false;
    if (!at || depth > 8)
        return false;
    while ((el = lt_torch_list_next(&at, &len))) {
        any = true;
        for (int t = 0; t < m->ntorch; t++)
            if (!m->torch_buffer[t] && strlen(m->torch_name[t]) == len && !memcmp(m->torch_name[t], el, len))
                return false;
        for (int q = 0; q < m->nparams; q++) {
            const lt_param *qp = &m->params[q];
            if (!qp->name || strlen(qp->name) != len || memcmp(qp->name, el, len) != 0)
                continue;
            if (qp->folded_from ? !folded_from_constants(m, qp, depth + 1) : strncmp(qp->name, "val_", 4) != 0)
                return false;
        }
    }
    return any;
}

/* Whether a node the optimizer fused a BatchNorm into (onnxscript's
 * FuseBatchNormIntoConv: its torch.fx call is the BatchNorm's) reads p as
 * its weight or bias: W * gamma / sqrt(var + eps) under W's name, and
 * beta - mean * gamma / sqrt(var + eps) under a name of its own
 * (s1.0.0.weight_bias), both made from the BatchNorm's parameters, which
 * that call names (so they count as accounted for). */
static bool fused_bn_input(const lt_block *b, const lt_ival *v)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        bool fused = n->rule && strstr(n->rule, "FuseBatchNormInto") &&
                     (n->op == LT_OP_CONV || n->op == LT_OP_CONV_TRANSPOSE || n->op == LT_OP_GEMM);
        for (int k = 1; fused && k < 3 && k < n->nin; k++)
            if (n->in[k] == v)
                return true;
        for (int r = 0; r < n->nregions; r++)
            if (fused_bn_input(n->regions[r], v))
                return true;
    }
    return false;
}

/* Whether p is a constant the exporter folded, not a parameter's stand-in:
 * an initializer the signature does not name, not an exporter
 * intermediate (val_N, which may be a folded weight), not one the
 * optimizer's record says a parameter made (logit_scale.exp() folded into
 * exp: ir/gathered_table.c refuses to train it in the parameter's place), that holds half
 * precision (Falcon's ALiBi table cast to bfloat16) or one number (BLOOM's
 * mask fill), or any such where every parameter is accounted for (MPT's
 * ALiBi table, Funnel's masks), or one its record says no parameter made
 * (folded_from_constants). A fused BatchNorm's bias is none of these
 * (fused_bn_input). */
static bool folded_constant(const lt_module *m, const lt_param *p, bool accounted)
{
    const lt_tensor *t = &p->data;
    if (!p->name || !p->value || p->value->block != m->main || !lt_dtype_is_float(t->dtype) ||
        !strncmp(p->name, "val_", 4) || lt_torch_named(m, p->name) || p->split_from || p->torch_source ||
        p->restored || p->untied_from || p->is_input_default || folded_from_param(m, p) ||
        fused_bn_input(m->main, p->value))
        return false;
    /* a folded transpose of a weight (W.t().unsqueeze(0)) is that weight,
     * tied to it at training (ir/tie_transposed.c) */
    if (accounted && lt_ir_transposed_copy(m, p))
        return false;
    return t->dtype == LT_F16 || t->dtype == LT_BF16 || t->numel == 1 || accounted || folded_from_constants(m, p, 0);
}

int lt_ir_freeze_buffers(lt_module *m)
{
    int frozen = 0;
    for (int p = 0; p < m->nparams; p++) {
        lt_param *pp = &m->params[p];
        if (op_setting_only(m, p)) {
            pp->trainable = false;
            pp->op_setting = true;
            frozen++;
        }
    }
    bool accounted = m->ntorch && params_accounted(m);
    for (int p = 0; m->ntorch && p < m->nparams; p++) {
        lt_param *pp = &m->params[p];
        if (pp->trainable && folded_constant(m, pp, accounted)) {
            pp->trainable = false;
            pp->torch_buffer = true;
            frozen++;
        }
    }
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
