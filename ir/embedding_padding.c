/* An embedding's padding row, as torch's dynamo exporter records it: the
 * Gather of an nn.Embedding(..., padding_idx=P) carries the torch.fx call
 * it came from, "aten.embedding.default](args = (%p_emb_weight, %ids, P)",
 * P its third argument (absent when the module has none). PyTorch gives
 * that row no gradient from the lookup (the pad tokens of a padded batch
 * leave it as it is); the Gather gets the attribute padding_idx, as
 * `--padding-idx PARAM=ROW` gives it (ad/padding_rows.c), so that its
 * GatherGrad leaves the row out. TorchScript exports do not record it. */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

/* P of "...aten.embedding.default](args = (%w, %ids, P...": true when the
 * call has a third argument that is an integer */
static bool padding_arg(const char *call, int64_t *row)
{
    static const char head[] = "aten.embedding.default](args = (";
    const char *at = call ? strstr(call, head) : NULL;
    if (!at)
        return false;
    at += sizeof head - 1;
    for (int commas = 0; commas < 2; at++) {
        if (!*at || *at == ')' || *at == '(' || *at == '[')
            return false; /* two plain arguments before it, or none */
        commas += *at == ',';
    }
    while (*at == ' ')
        at++;
    char *end;
    long long v = strtoll(at, &end, 10);
    if (end == at || (*end != ',' && *end != ')'))
        return false;
    *row = v;
    return true;
}

static lt_status mark(lt_module *m, lt_block *b, int *nmarked)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions; r++) {
            lt_status s = mark(m, n->regions[r], nmarked);
            if (s != LT_OK)
                return s;
        }
        int64_t row;
        if (n->op != LT_OP_GATHER || n->nin < 2 || !n->in[0] || n->in[0]->param < 0 || lt_attr_int(n, "axis", 0) != 0 ||
            !padding_arg(n->fx_call, &row))
            continue;
        const lt_tensor *t = &m->params[n->in[0]->param].data;
        if (row < 0)
            row += t->rank >= 1 ? t->dims[0] : 0;
        if (t->rank < 1 || row < 0 || row >= t->dims[0] || lt_attr_find(n, "padding_idx"))
            continue;
        lt_attr *a = lt_ir_alloc(m, sizeof *a * (size_t)(n->nattr + 1));
        if (!a)
            return LT_ERR_NOMEM;
        if (n->nattr)
            memcpy(a, n->attrs, sizeof *a * (size_t)n->nattr);
        a[n->nattr] = (lt_attr){.name = "padding_idx", .kind = LT_ATTR_INT, .i = row};
        n->attrs = a;
        n->nattr++;
        ++*nmarked;
    }
    return LT_OK;
}

lt_status lt_ir_mark_embedding_padding(lt_module *m, int *nmarked, lt_err *err)
{
    *nmarked = 0;
    return mark(m, m->main, nmarked) == LT_OK ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
}
