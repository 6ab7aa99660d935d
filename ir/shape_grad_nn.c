/* Shape inference rules: grad_nn family (the backward ops of convolutions,
 * pools, Resize and the normalizations). Every gradient has the type of the
 * forward input it belongs to: dx like x, dW like W, dscale like scale, dbias
 * like B (or like scale where B is not an input). */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

/* Output o gets input i's type; where i is absent or untyped, only the
 * dtype of input f (dy, whose dtype the gradient shares) is known. */
static void like(lt_node *n, int o, int i, int f)
{
    if (o >= n->nout || !n->out[o])
        return;
    const lt_type *t = in_type(n, i), *d = in_type(n, f);
    if (t && (t->dtype != LT_UNDEFINED || t->rank >= 0)) {
        n->out[o]->type = *t;
        if (t->dtype == LT_UNDEFINED && d)
            n->out[o]->type.dtype = d->dtype;
    } else {
        lt_type_unknown(&n->out[o]->type, d ? d->dtype : LT_UNDEFINED, -1);
    }
}

/* dy and x of known ranks must agree (dy has x's rank for every op here) */
static lt_status same_rank(lt_infer_ctx *c, const lt_node *n, int xi)
{
    const lt_type *dy = in_type(n, 0), *x = in_type(n, xi);
    if (dy && x && dy->rank >= 0 && x->rank >= 0 && dy->rank != x->rank)
        return lt_infer_fail(c, n, "dy of rank %d for an input of rank %d", dy->rank, x->rank);
    return LT_OK;
}

/* dy has exactly x's shape (normalizations, LRN) where both are known */
static lt_status same_shape(lt_infer_ctx *c, const lt_node *n)
{
    lt_status s = same_rank(c, n, 1);
    const lt_type *dy = in_type(n, 0), *x = in_type(n, 1);
    if (s != LT_OK || !dy || !x || dy->rank < 0 || dy->rank != x->rank)
        return s;
    for (int i = 0; i < x->rank; i++) {
        lt_dim a = dy->dims[i], b = x->dims[i];
        if (a.sym < 0 && b.sym < 0 && a.v >= 0 && b.v >= 0 && a.v != b.v)
            return lt_infer_fail(c, n, "dy and x differ along dim %d (%lld vs %lld)", i, (long long)a.v,
                                 (long long)b.v);
    }
    return LT_OK;
}

/* (dy, W, x) -> dx */
static lt_status infer_data(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 2, 0);
    return same_rank(c, n, 2);
}

/* (dy, x, W) -> dW */
static lt_status infer_filter(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 2, 0);
    return same_rank(c, n, 1);
}

/* (dy, x, ...) -> dx, for the pools and Resize */
static lt_status infer_dx(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1, 0);
    return same_rank(c, n, 1);
}

/* (dy, x, scale[, bias, ...]) -> dx, dscale, dbias */
static lt_status infer_norm(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1, 0);
    like(n, 1, 2, 0);
    like(n, 2, in_type(n, 3) ? 3 : 2, 0);
    return same_shape(c, n);
}

/* (dy, x) -> dx */
static lt_status infer_lrn(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1, 0);
    return same_shape(c, n);
}

void lt_infer_register_grad_nn(lt_infer_fn *tab)
{
    tab[LT_OP_CONV_GRAD_DATA] = infer_data;
    tab[LT_OP_CONV_TRANSPOSE_GRAD_DATA] = infer_data;
    tab[LT_OP_CONV_GRAD_FILTER] = infer_filter;
    tab[LT_OP_CONV_TRANSPOSE_GRAD_FILTER] = infer_filter;
    tab[LT_OP_MAX_POOL_GRAD] = infer_dx;
    tab[LT_OP_AVERAGE_POOL_GRAD] = infer_dx;
    tab[LT_OP_LP_POOL_GRAD] = infer_dx;
    tab[LT_OP_RESIZE_GRAD] = infer_dx;
    tab[LT_OP_BATCH_NORM_GRAD] = infer_norm;
    tab[LT_OP_LAYER_NORM_GRAD] = infer_norm;
    tab[LT_OP_INSTANCE_NORM_GRAD] = infer_norm;
    tab[LT_OP_GROUP_NORM_GRAD] = infer_norm;
    tab[LT_OP_LRN_GRAD] = infer_lrn;
}
