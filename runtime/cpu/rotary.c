/* CPU kernels: RotaryEmbedding (opset 23) and its gradient
 *   RotaryEmbeddingGrad (dY, X, cos_cache, sin_cache, position_ids) -> dX, dcos, dsin.
 * Each head's first rotary_embedding_dim values form pairs (x1, x2), the
 * two halves or (interleaved) the even and odd entries, turned by the
 * angle of their position: (c x1 - s x2, s x1 + c x2); the rest passes
 * through. Computed in double for every float type. */
#include "norm_util.h"
#include <string.h>

typedef struct rope {
    int64_t B, S, H, hd, half, rows; /* rows: the caches' first dim with position_ids */
    bool in3d, interleaved;
    const int64_t *pos;
} rope;

/* geometry from X (input xi), the caches and position_ids, and the attributes */
static lt_status rope_setup(lt_kctx *k, rope *r, int xi)
{
    memset(r, 0, sizeof *r);
    const lt_tensor *x = lt_k_in(k, xi), *c = lt_k_in(k, xi + 1), *s = lt_k_in(k, xi + 2), *p = lt_k_in(k, xi + 3);
    if (!x || !c || !s)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X, cos_cache and sin_cache");
    if (!lt_dtype_is_float(x->dtype) || !lt_dtype_is_float(c->dtype) || !lt_dtype_is_float(s->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X and the caches must be float tensors");
    if (x->rank == 4) {
        r->B = x->dims[0];
        r->H = x->dims[1];
        r->S = x->dims[2];
        r->hd = x->dims[3];
    } else if (x->rank == 3) {
        int64_t h = lt_attr_int(k->node, "num_heads", 0);
        if (h <= 0 || x->dims[2] % h)
            return lt_k_fail(k, LT_ERR_RUNTIME, "3-D X needs num_heads dividing its hidden size %lld",
                             (long long)x->dims[2]);
        r->in3d = true;
        r->B = x->dims[0];
        r->S = x->dims[1];
        r->H = h;
        r->hd = x->dims[2] / h;
    } else {
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be 3-D or 4-D, got rank %d", x->rank);
    }
    int64_t rd = lt_attr_int(k->node, "rotary_embedding_dim", 0);
    if (rd == 0)
        rd = r->hd;
    if (rd < 0 || rd > r->hd || rd % 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                         (long long)rd, (long long)r->hd);
    r->half = rd / 2;
    r->interleaved = lt_attr_int(k->node, "interleaved", 0) != 0;
    if (c->rank != s->rank || c->numel != s->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cos_cache and sin_cache differ in shape");
    if (c->rank < 1 || c->dims[c->rank - 1] != r->half)
        return lt_k_fail(k, LT_ERR_RUNTIME, "the caches' last dim must be rotary_embedding_dim / 2 = %lld",
                         (long long)r->half);
    if (p) {
        if (p->dtype != LT_I64 || p->numel != r->B * r->S || c->rank != 2)
            return lt_k_fail(k, LT_ERR_RUNTIME,
                             "position_ids must be int64 (batch %lld, sequence %lld) with 2-D caches",
                             (long long)r->B, (long long)r->S);
        r->pos = p->data;
        r->rows = c->dims[0];
        for (int64_t i = 0; i < p->numel; i++)
            if (r->pos[i] < 0 || r->pos[i] >= r->rows)
                return lt_k_fail(k, LT_ERR_RUNTIME, "position_ids[%lld] = %lld is outside the caches' %lld rows",
                                 (long long)i, (long long)r->pos[i], (long long)r->rows);
    } else if (c->rank != 3 || c->dims[0] != r->B || c->dims[1] != r->S) {
        return lt_k_fail(k, LT_ERR_RUNTIME, "without position_ids the caches must be (batch %lld, sequence %lld, %lld)",
                         (long long)r->B, (long long)r->S, (long long)r->half);
    }
    return LT_OK;
}

/* offset of head h of position s in batch b, and of its cache row */
static int64_t x_off(const rope *r, int64_t b, int64_t s, int64_t h)
{
    return r->in3d ? (b * r->S + s) * r->H * r->hd + h * r->hd : ((b * r->H + h) * r->S + s) * r->hd;
}

static int64_t c_off(const rope *r, int64_t b, int64_t s)
{
    return (r->pos ? r->pos[b * r->S + s] : b * r->S + s) * r->half;
}

/* index of pair k's two members within a head */
static void pair(const rope *r, int64_t k, int64_t *i1, int64_t *i2)
{
    *i1 = r->interleaved ? 2 * k : k;
    *i2 = r->interleaved ? 2 * k + 1 : k + r->half;
}

static lt_status rotary(lt_kctx *k)
{
    rope r;
    lt_status st = rope_setup(k, &r, 0);
    if (st != LT_OK)
        return st;
    const lt_tensor *xt = lt_k_in(k, 0);
    const double *x = lt_nu_as_f64(k, xt), *cs = x ? lt_nu_as_f64(k, lt_k_in(k, 1)) : NULL;
    const double *sn = cs ? lt_nu_as_f64(k, lt_k_in(k, 2)) : NULL;
    double *y = sn ? lt_nu_scratch(k, xt->numel, sizeof *y) : NULL;
    if (!y)
        return LT_ERR_RUNTIME;
    memcpy(y, x, (size_t)xt->numel * sizeof *y); /* the values past the rotary dims */
    for (int64_t b = 0; b < r.B; b++)
        for (int64_t s = 0; s < r.S; s++)
            for (int64_t h = 0; h < r.H; h++) {
                int64_t o = x_off(&r, b, s, h), co = c_off(&r, b, s);
                for (int64_t q = 0; q < r.half; q++) {
                    int64_t i1, i2;
                    pair(&r, q, &i1, &i2);
                    double c = cs[co + q], sv = sn[co + q], x1 = x[o + i1], x2 = x[o + i2];
                    y[o + i1] = c * x1 - sv * x2;
                    y[o + i2] = sv * x1 + c * x2;
                }
            }
    lt_tensor *yt;
    st = lt_k_out(k, 0, xt->dtype, xt->rank, xt->dims, &yt);
    if (st == LT_OK)
        lt_nu_store_f64(yt, y);
    return st;
}

/* dx1 = c dr + s di, dx2 = c di - s dr; dc += x1 dr + x2 di, ds += x1 di - x2 dr,
 * summed over heads and, through position_ids, over the positions that
 * share a cache row */
static lt_status rotary_grad(lt_kctx *k)
{
    rope r;
    lt_status st = rope_setup(k, &r, 1);
    if (st != LT_OK)
        return st;
    const lt_tensor *dyt = lt_k_in(k, 0), *xt = lt_k_in(k, 1), *ct = lt_k_in(k, 2), *stt = lt_k_in(k, 3);
    if (!dyt || dyt->numel != xt->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dY must have X's %lld elements", (long long)xt->numel);
    const double *dy = lt_nu_as_f64(k, dyt), *x = dy ? lt_nu_as_f64(k, xt) : NULL;
    const double *cs = x ? lt_nu_as_f64(k, ct) : NULL, *sn = cs ? lt_nu_as_f64(k, stt) : NULL;
    double *dx = sn ? lt_nu_scratch(k, xt->numel, sizeof *dx) : NULL;
    double *dc = dx ? lt_nu_scratch(k, 2 * ct->numel, sizeof *dc) : NULL;
    if (!dc)
        return LT_ERR_RUNTIME;
    double *ds = dc + ct->numel;
    memcpy(dx, dy, (size_t)xt->numel * sizeof *dx);
    memset(dc, 0, (size_t)(2 * ct->numel) * sizeof *dc);
    for (int64_t b = 0; b < r.B; b++)
        for (int64_t s = 0; s < r.S; s++)
            for (int64_t h = 0; h < r.H; h++) {
                int64_t o = x_off(&r, b, s, h), co = c_off(&r, b, s);
                for (int64_t q = 0; q < r.half; q++) {
                    int64_t i1, i2;
                    pair(&r, q, &i1, &i2);
                    double c = cs[co + q], sv = sn[co + q], x1 = x[o + i1], x2 = x[o + i2];
                    double dr = dy[o + i1], di = dy[o + i2];
                    dx[o + i1] = c * dr + sv * di;
                    dx[o + i2] = c * di - sv * dr;
                    dc[co + q] += x1 * dr + x2 * di;
                    ds[co + q] += x1 * di - x2 * dr;
                }
            }
    const lt_tensor *like[3] = {xt, ct, stt};
    const double *w[3] = {dx, dc, ds};
    for (int o = 0; o < 3 && st == LT_OK; o++) {
        if (!lt_k_want(k, o))
            continue;
        lt_tensor *t;
        st = lt_k_out(k, o, like[o]->dtype, like[o]->rank, like[o]->dims, &t);
        if (st == LT_OK)
            lt_nu_store_f64(t, w[o]);
    }
    return st;
}

void lt_cpu_register_rotary(lt_kernel_fn *tab)
{
    tab[LT_OP_ROTARY_EMBEDDING] = rotary;
    tab[LT_OP_ROTARY_EMBEDDING_GRAD] = rotary_grad;
}
