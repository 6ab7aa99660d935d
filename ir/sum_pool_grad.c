/* Sums of MaxPoolGrad's dx over the spatial axes read from its dy (sum_pool_grad.h). */
#include "sum_pool_grad.h"
#include "shape_nn.h"
#include <stdlib.h>
#include <string.h>

/* The ReduceSum's axes when they are constant: a Constant node's int64
 * tensor, or the attribute (opsets before 13); false otherwise */
static bool const_axes(const lt_node *s, int rank, bool *mask)
{
    const int64_t *ax = NULL;
    int64_t n = 0;
    if (s->nin >= 2 && s->in[1]) {
        const lt_node *c = s->in[1]->def;
        if (!c || c->op != LT_OP_CONSTANT || c->nin != 0 || c->nout != 1)
            return false;
        const lt_tensor *t = lt_attr_tensor(c, "value");
        if (!t || t->dtype != LT_I64 || t->rank != 1 || !t->data)
            return false;
        ax = t->data;
        n = t->numel;
    } else {
        int len = 0;
        ax = lt_attr_ints(s, "axes", &len);
        n = len;
    }
    if (!ax || n <= 0)
        return false; /* no axes: every axis, or none (noop_with_empty_axes); left alone */
    memset(mask, 0, sizeof(bool) * (size_t)rank);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (a < 0 || a >= rank)
            return false;
        mask[a] = true;
    }
    return true;
}

/* whether every window of MaxPoolGrad p (x known in its spatial sizes)
 * has a tap in the image */
static bool windows_hold_taps(const lt_node *p)
{
    const lt_ival *x = p->in[1];
    if (!x || x->type.kind != LT_KIND_TENSOR || x->type.rank < 3 || x->type.rank > LT_MAX_RANK)
        return false;
    int nsp = x->type.rank - 2, klen = 0;
    const int64_t *ks = lt_attr_ints(p, "kernel_shape", &klen);
    if (!ks || klen != nsp)
        return false;
    int64_t img[LT_MAX_RANK], kernel[LT_MAX_RANK];
    for (int d = 0; d < nsp; d++) {
        const lt_dim *dm = &x->type.dims[d + 2];
        if (dm->sym >= 0 || dm->v < 1 || ks[d] < 1)
            return false;
        img[d] = dm->v;
        kernel[d] = ks[d];
    }
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window(p, nsp, img, kernel, lt_attr_int(p, "ceil_mode", 0) != 0, &g, why, sizeof why))
        return false;
    /* a window has a tap in the image when it has one along each axis */
    for (int d = 0; d < nsp; d++)
        for (int64_t q = 0; q < g.grid[d]; q++) {
            int64_t st = q * g.s[d] - g.pb[d], t = st >= 0 ? 0 : (-st + g.d[d] - 1) / g.d[d];
            if (t >= g.k[d] || st + t * g.d[d] >= g.img[d])
                return false;
        }
    return true;
}

typedef struct sums {
    int nrewritten;
} sums;

static lt_status rewrite_block(lt_block *b, void *ctx)
{
    sums *w = ctx;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *s = b->nodes[i];
        if (s->op != LT_OP_REDUCE_SUM || s->nin < 1 || !s->in[0] || s->nregions)
            continue;
        const lt_ival *v = s->in[0];
        while (v->def && v->def->op == LT_OP_IDENTITY && v->def->nin == 1 && v->def->in[0])
            v = v->def->in[0];
        const lt_node *p = v->def;
        if (!p || p->op != LT_OP_MAX_POOL_GRAD || p->nin < 2 || !p->in[0] || p->out[0] != v)
            continue;
        int rank = v->type.rank;
        bool mask[LT_MAX_RANK];
        if (v->type.kind != LT_KIND_TENSOR || rank < 3 || rank > LT_MAX_RANK || !const_axes(s, rank, mask))
            continue;
        bool spatial = true;
        for (int d = 2; d < rank; d++)
            spatial = spatial && mask[d];
        if (!spatial || !windows_hold_taps(p))
            continue;
        s->in[0] = p->in[0];
        w->nrewritten++;
    }
    return LT_OK;
}

lt_status lt_ir_sum_pool_grad(lt_module *m, int *nrewritten, lt_err *err)
{
    sums w = {0};
    lt_rewrite r = {.block = rewrite_block, .ctx = &w, .count = &w.nrewritten, .recount = LT_RECOUNT_IF_COUNTED};
    return lt_module_rewrite(m, &r, nrewritten, err);
}
