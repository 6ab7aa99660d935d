/* A module applied twice (ALBERT's one layer for every layer, a block
 * reused in a loop) reads each of its weights twice. torch's dynamo
 * exporter folds each linear layer's transpose of its weight into an
 * initializer of its own (val_N) for each call, so the file holds two equal
 * copies; trained as found they would get separate updates and drift
 * apart, where PyTorch trains the one weight on both calls' gradients.
 *
 * Each product that reads a val_N says, in its torch.fx call, which
 * parameter it read (%p_ffn_weight): the one of those the file has no
 * initializer of. val_N initializers standing for the same parameter that
 * hold the same values, bit for bit, are one tensor: the readers of the
 * later ones read the first, and the later ones (copy_of) are no longer
 * trained; lt_ir_refresh_tied writes their values from the first again for
 * export. Layers deep-copied from one (nn.TransformerEncoder's) hold equal
 * values too, but their calls name different parameters. */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

/* The parameter the readers of folded initializer p stand for: the one
 * tensor every reader's fx call names that the file has no initializer
 * of; NULL when they disagree or do not tell. */
static const char *folded_from(const lt_module *m, const lt_param *p)
{
    const char *from = NULL;
    int readers = 0;
    const lt_block *b = m->main;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!lt_node_reads(n, p->value))
            continue;
        const char *fx[8], *own = NULL;
        int nf = lt_torch_fx_tensors(m, n->fx_call, fx, 8);
        for (int f = 0; f < nf; f++) {
            if (lt_torch_is_param(m, fx[f]))
                continue;
            if (own)
                return NULL;
            own = fx[f];
        }
        if (!own || (from && strcmp(from, own) != 0))
            return NULL;
        from = own;
        readers++;
    }
    return readers ? from : NULL;
}

static bool same_values(const lt_tensor *a, const lt_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel || !a->data || !b->data)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return !memcmp(a->data, b->data, (size_t)a->numel * lt_dtype_size(a->dtype));
}

int lt_ir_tie_folded_copies(lt_module *m)
{
    if (!m->ntorch)
        return 0;
    int np = m->nparams, tied = 0;
    const char **from = calloc((size_t)np + 1, sizeof *from);
    if (!from)
        return 0;
    for (int p = 0; p < np; p++) {
        const lt_param *pp = &m->params[p];
        if (pp->name && !strncmp(pp->name, "val_", 4) && pp->trainable && pp->value && pp->value->block == m->main &&
            pp->value->uses > 0 && lt_dtype_is_float(pp->data.dtype) && pp->data.numel >= 2 &&
            !lt_ir_one_value(&pp->data) && !pp->split_from && !pp->torch_source)
            from[p] = folded_from(m, pp);
    }
    for (int c = 0; c < np; c++)
        for (int a = 0; a < c && from[c]; a++) {
            if (!from[a] || strcmp(from[a], from[c]) != 0 || !same_values(&m->params[a].data, &m->params[c].data))
                continue;
            lt_param *cp = &m->params[c];
            lt_module_replace_reads(m, cp->value, m->params[a].value);
            cp->trainable = false;
            cp->copy_of = m->params[a].name;
            tied++;
            break;
        }
    free(from);
    return tied;
}
