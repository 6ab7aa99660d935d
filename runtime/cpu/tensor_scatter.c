/* CPU kernels: TensorScatter (opset 24), the functional KV-cache update,
 * and its gradient
 *   TensorScatterGrad (dpresent, past_cache, update, write_indices) -> dpast, dupdate:
 * dupdate gathers dpresent where the update was written; dpast is dpresent
 * with those places zeroed. The forward copies bytes, so every fixed-size
 * element type goes through. */
#include "norm_util.h"
#include <string.h>

typedef struct ts_geom {
    int64_t outer, maxlen, len, inner; /* [outer (batch first), axis, inner] */
    int64_t per_batch;                 /* outer blocks per batch entry */
    const int64_t *wi;                 /* write_indices or NULL */
    bool circular;
} ts_geom;

static lt_status ts_setup(lt_kctx *k, ts_geom *g, const lt_tensor *past, const lt_tensor *upd, const lt_tensor *wi)
{
    if (!past || !upd)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs past_cache and update");
    if (past->dtype != upd->dtype || past->rank != upd->rank || past->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "past_cache and update must share a type and a rank of at least 2");
    int64_t axis = lt_attr_int(k->node, "axis", -2);
    if (axis < -past->rank || axis >= past->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axis, past->rank);
    int a = (int)(axis < 0 ? axis + past->rank : axis);
    if (a == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis cannot be the batch dimension");
    for (int d = 0; d < past->rank; d++)
        if (d != a ? past->dims[d] != upd->dims[d] : upd->dims[d] > past->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "update's dim %d (%lld) does not fit past_cache's (%lld)", d,
                             (long long)upd->dims[d], (long long)past->dims[d]);
    const char *mode = lt_attr_str(k->node, "mode", "linear");
    if (strcmp(mode, "linear") && strcmp(mode, "circular"))
        return lt_k_fail(k, LT_ERR_RUNTIME, "mode '%s' (expected linear or circular)", mode);
    g->circular = mode[0] == 'c';
    g->outer = lt_shape_numel(a, past->dims);
    g->per_batch = past->dims[0] ? g->outer / past->dims[0] : 0;
    g->maxlen = past->dims[a];
    g->len = upd->dims[a];
    g->inner = lt_shape_numel(past->rank - a - 1, past->dims + a + 1);
    g->wi = NULL;
    if (wi) {
        if (wi->dtype != LT_I64 || wi->numel != past->dims[0])
            return lt_k_fail(k, LT_ERR_RUNTIME, "write_indices must be int64 of shape (%lld)",
                             (long long)past->dims[0]);
        g->wi = wi->data;
        for (int64_t b = 0; b < wi->numel; b++) {
            int64_t w = g->wi[b];
            if (w < 0 || (!g->circular && w + g->len > g->maxlen))
                return lt_k_fail(k, LT_ERR_RUNTIME,
                                 "write_indices[%lld] = %lld does not leave room for %lld positions of %lld",
                                 (long long)b, (long long)w, (long long)g->len, (long long)g->maxlen);
        }
    }
    return LT_OK;
}

/* the cache position that update position s of outer block o goes to */
static int64_t ts_dest(const ts_geom *g, int64_t o, int64_t s)
{
    int64_t p = (g->wi ? g->wi[o / g->per_batch] : 0) + s;
    return g->circular ? p % g->maxlen : p;
}

static lt_status tensor_scatter(lt_kctx *k)
{
    const lt_tensor *past = lt_k_in(k, 0), *upd = lt_k_in(k, 1);
    ts_geom g;
    lt_status st = ts_setup(k, &g, past, upd, lt_k_in(k, 2));
    if (st != LT_OK)
        return st;
    size_t es = lt_dtype_size(past->dtype);
    if (past->dtype == LT_STRING || es == 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(past->dtype));
    lt_tensor *y;
    st = lt_k_out(k, 0, past->dtype, past->rank, past->dims, &y);
    if (st != LT_OK || past->numel == 0)
        return st;
    memcpy(y->data, past->data, (size_t)past->numel * es);
    size_t blk = (size_t)g.inner * es;
    for (int64_t o = 0; o < g.outer; o++)
        for (int64_t s = 0; s < g.len; s++)
            memcpy((char *)y->data + (size_t)(o * g.maxlen + ts_dest(&g, o, s)) * blk,
                   (const char *)upd->data + (size_t)(o * g.len + s) * blk, blk);
    return LT_OK;
}

static lt_status tensor_scatter_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *past = lt_k_in(k, 1), *upd = lt_k_in(k, 2);
    ts_geom g;
    lt_status st = ts_setup(k, &g, past, upd, lt_k_in(k, 3));
    if (st != LT_OK)
        return st;
    if (!dy || dy->numel != past->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dpresent must have past_cache's %lld elements", (long long)past->numel);
    const double *d = lt_nu_as_f64(k, dy);
    double *dp = d ? lt_nu_scratch(k, past->numel, sizeof *dp) : NULL;
    double *du = dp ? lt_nu_scratch(k, upd->numel, sizeof *du) : NULL;
    if (!du)
        return LT_ERR_RUNTIME;
    memcpy(dp, d, (size_t)past->numel * sizeof *dp);
    size_t blk = (size_t)g.inner * sizeof *dp;
    for (int64_t o = 0; o < g.outer; o++)
        for (int64_t s = 0; s < g.len; s++) {
            double *src = dp + (o * g.maxlen + ts_dest(&g, o, s)) * g.inner;
            memcpy(du + (o * g.len + s) * g.inner, src, blk);
            memset(src, 0, blk);
        }
    const lt_tensor *like[2] = {past, upd};
    const double *w[2] = {dp, du};
    for (int o = 0; o < 2 && st == LT_OK; o++) {
        if (!lt_k_want(k, o))
            continue;
        lt_tensor *t;
        st = lt_k_out(k, o, like[o]->dtype, like[o]->rank, like[o]->dims, &t);
        if (st == LT_OK)
            lt_nu_store_f64(t, w[o]);
    }
    return st;
}

void lt_cpu_register_tensor_scatter(lt_kernel_fn *tab)
{
    tab[LT_OP_TENSOR_SCATTER] = tensor_scatter;
    tab[LT_OP_TENSOR_SCATTER_GRAD] = tensor_scatter_grad;
}
