/* Adjoints as accumulation cells: the forward value each source value
 * maps to, fresh cells, whether an input wants a gradient, and adding a
 * contribution into an input's cell. */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

/* ---- emission helpers ---- */
lt_ival *lt_ad_mapped(lt_ad *c, const lt_ival *v)
{
    if (!v)
        return NULL;
    if (v->param >= 0 || v->id >= c->nsrc)
        return (lt_ival *)v;
    return c->map[v->id];
}

lt_ival *lt_ad_new_cell(lt_ad *c, lt_ival *v)
{
    lt_ival *cell = lt_ad_op1(c, LT_OP_ACC_ZEROS_LIKE, v);
    if (cell) {
        cell->type = v->type;
        cell->type.kind = LT_KIND_CELL;
    }
    return cell;
}

/* A cell for every active source value just emitted. */
lt_status lt_ad_make_cells(lt_ad *c, lt_ival *const *src, int n)
{
    for (int j = 0; j < n; j++) {
        if (!src[j] || !c->active[src[j]->id] || c->cell[src[j]->id])
            continue;
        c->cell[src[j]->id] = lt_ad_new_cell(c, lt_ad_mapped(c, src[j]));
        if (!c->cell[src[j]->id])
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    }
    return LT_OK;
}

bool lt_ad_wants(lt_ad *c, const lt_node *n, int i)
{
    const lt_ival *v = i < n->nin ? n->in[i] : NULL;
    const lt_node *split = i == 0 ? lt_ad_seq_split(n) : NULL, *fq = i == 0 ? lt_ad_fake_quant(n) : NULL;
    if (split) /* the sequence's adjoint is the split tensor's */
        v = split->in[0];
    if (fq) /* past the integers, to what was quantized */
        v = fq->in[0];
    if (!v || v->id >= c->nsrc || !c->active[v->id] || !c->cell[v->id])
        return false;
    return fq || !lt_ad_input_nondiff(n, i);
}

lt_status lt_ad_accum(lt_ad *c, const lt_node *n, int i, lt_ival *v)
{
    if (!lt_ad_wants(c, n, i))
        return LT_OK;
    if (!v)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    const lt_node *fq = i == 0 ? lt_ad_fake_quant(n) : NULL;
    a->in[0] = c->cell[(fq ? fq->in[0] : n->in[i])->id];
    a->in[1] = v;
    return LT_OK;
}

lt_status lt_ad_accum_wanted(lt_ad *c, const lt_node *n, lt_node *k, const bool *want, int m)
{
    lt_status s = LT_OK;
    for (int i = 0; i < m; i++) {
        if (!want[i])
            k->out[i] = NULL;
        else if (s == LT_OK)
            s = lt_ad_accum(c, n, i, k->out[i]);
    }
    return s;
}
