/* Shape inference rules: BitCast (opset 26) and AffineGrid (opset 20),
 * with AffineGrid's gradient op. */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

/* X's shape in the type named by `to` */
static lt_status infer_bitcast(lt_infer_ctx *c, lt_node *n)
{
    int64_t to = lt_attr_int(n, "to", -1);
    if (!lt_attr_find(n, "to"))
        return lt_infer_fail(c, n, "needs the attribute 'to'");
    lt_infer_same(n, 0, 0);
    if (n->nout > 0 && n->out[0])
        n->out[0]->type.dtype = to > 0 && to < LT_DTYPE_COUNT ? (lt_dtype)to : LT_UNDEFINED;
    return LT_OK;
}

/* grid (N, H, W, 2) or (N, D, H, W, 3), from size when it is a constant */
static lt_status infer_affine_grid(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *th = in_type(n, 0), *sz = in_type(n, 1);
    if (!th || !sz)
        return lt_infer_fail(c, n, "needs theta and size");
    if (n->nout < 1 || !n->out[0])
        return LT_OK;
    int k = sz->rank == 1 && sz->dims[0].sym < 0 && (sz->dims[0].v == 4 || sz->dims[0].v == 5)
                ? (int)sz->dims[0].v - 2
                : th->rank == 3 && th->dims[1].sym < 0 && (th->dims[1].v == 2 || th->dims[1].v == 3)
                    ? (int)th->dims[1].v
                    : 0;
    if (!k) {
        lt_type_unknown(&n->out[0]->type, th->dtype, -1);
        return LT_OK;
    }
    lt_type_unknown(&n->out[0]->type, th->dtype, k + 2);
    lt_type *t = &n->out[0]->type;
    if (th->rank == 3)
        t->dims[0] = th->dims[0];
    t->dims[k + 1] = (lt_dim){.v = k, .sym = -1};
    const lt_tensor *s = lt_infer_const(c, n->in[1]);
    if (s && s->numel == k + 2 && s->dtype == LT_I64)
        for (int d = 0; d < k; d++)
            t->dims[1 + d] = (lt_dim){.v = ((const int64_t *)s->data)[2 + d], .sym = -1};
    return LT_OK;
}

/* (dgrid, theta, size) -> dtheta like theta */
static lt_status infer_affine_grid_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *th = in_type(n, 1);
    if (n->nout > 0 && n->out[0]) {
        if (th)
            n->out[0]->type = *th;
        else
            lt_type_unknown(&n->out[0]->type, LT_UNDEFINED, -1);
    }
    return LT_OK;
}

void lt_infer_register_onnx26(lt_infer_fn *tab)
{
    tab[LT_OP_BIT_CAST] = infer_bitcast;
    tab[LT_OP_AFFINE_GRID] = infer_affine_grid;
    tab[LT_OP_AFFINE_GRID_GRAD] = infer_affine_grid_grad;
}
