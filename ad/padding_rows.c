/* Embeddings' padding rows (lt_grad_opts.padding), before the transform:
 * every Gather along axis 0 that reads the named parameter, directly or
 * through Identity, in any block, gets the attribute padding_idx (the row,
 * in [0, rows)). The Gather rule copies its node's attributes onto
 * GatherGrad, whose kernels then leave that row of the gradient zero; the
 * forward Gather does not read the attribute. */
#include "ad_impl.h"
#include <stdio.h>
#include <string.h>

typedef struct {
    const lt_ival *param;
    int rank;
    int64_t row;
    int marked;
    lt_module *m;
    bool nomem;
} pad_ctx;

static bool reads_param(const lt_ival *v, const lt_ival *param)
{
    while (v && v != param && v->def && v->def->op == LT_OP_IDENTITY && v->def->nin == 1)
        v = v->def->in[0];
    return v == param;
}

static lt_status mark_block(lt_block *b, void *ctx)
{
    pad_ctx *p = ctx;
    int rank = p->rank;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        if (n->op != LT_OP_GATHER || n->nin < 2 || !reads_param(n->in[0], p->param))
            continue;
        int64_t axis = lt_attr_int(n, "axis", 0);
        if (axis != 0 && axis != -(int64_t)rank)
            continue;
        int have = 0;
        while (have < n->nattr && strcmp(n->attrs[have].name, "padding_idx") != 0)
            have++;
        if (have < n->nattr) { /* a second row for the same table: the last one given wins */
            n->attrs[have].i = p->row;
            p->marked++;
            continue;
        }
        lt_attr *a = lt_ir_alloc(p->m, sizeof *a * (size_t)(n->nattr + 1));
        if (!a) {
            p->nomem = true;
            return LT_ERR_NOMEM;
        }
        if (n->nattr)
            memcpy(a, n->attrs, sizeof *a * (size_t)n->nattr);
        a[n->nattr].name = "padding_idx";
        a[n->nattr].kind = LT_ATTR_INT;
        a[n->nattr].i = p->row;
        n->attrs = a;
        n->nattr++;
        p->marked++;
    }
    return LT_OK;
}

lt_status lt_ad_mark_padding(lt_module *m, int n, const lt_padding_row *rows, lt_err *err)
{
    for (int r = 0; r < n; r++) {
        const char *name = rows[r].param ? rows[r].param : "";
        const lt_param *pp = NULL;
        for (int p = 0; p < m->nparams && !pp; p++)
            if (strcmp(m->params[p].name, name) == 0)
                pp = &m->params[p];
        if (!pp)
            return lt_errf(err, LT_ERR_INVALID, "%s: padding row of '%s': the model has no parameter of that name",
                           m->path, name);
        const lt_tensor *t = &pp->data;
        if (t->rank < 1 || !lt_dtype_is_float(t->dtype))
            return lt_errf(err, LT_ERR_INVALID, "%s: padding row of '%s': it is not a float table of rank 1 or more",
                           m->path, name);
        int64_t rowsz = t->dims[0], row = rows[r].row < 0 ? rows[r].row + rowsz : rows[r].row;
        if (row < 0 || row >= rowsz)
            return lt_errf(err, LT_ERR_INVALID, "%s: padding row %lld of '%s' is out of range: it has %lld rows",
                           m->path, (long long)rows[r].row, name, (long long)rowsz);
        pad_ctx c = {pp->value, t->rank, row, 0, m, false};
        lt_status s = lt_module_each_block(m, mark_block, &c);
        if (s != LT_OK || c.nomem)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        if (!c.marked)
            return lt_errf(err, LT_ERR_INVALID,
                           "%s: padding row of '%s': no Gather reads rows of it (an embedding's lookup is a Gather "
                           "along axis 0 of the table)",
                           m->path, name);
    }
    return LT_OK;
}
