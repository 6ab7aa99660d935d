/* CPU kernel: AttentionGrad, the backward of Attention.
 *   (dY, Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen,
 *    dpresent_key, dpresent_value) -> dQ, dK, dV, dattn_mask, dpast_key, dpast_value
 * The probabilities are recomputed one query row at a time, as the forward
 * made them (nothing of the forward is kept): with z = scale q.k,
 * c = softcap(z), s = c + bias, p = softmax(s), y = p V,
 *   dp_j = dy.v_j, ds_j = p_j (dp_j - dy.y), dz_j = ds_j c'(z_j),
 *   dq += scale dz_j k_j, dk_j += scale dz_j q, dv_j += p_j dy, dbias_j = ds_j.
 * Work runs per (batch, key head), each taking its group of query heads, so
 * the key and value gradients of a block have one writer. */
#include "attention_util.h"
#include "norm_util.h"
#include <omp.h>
#include <string.h>

lt_status lt_cpu_attention_grad(lt_kctx *k);

typedef struct ag_out {
    double *dq, *dk, *dv, *dm; /* dk, dv: [B, Hkv, T, D|Dv] including the past */
} ag_out;

static void grad_block(const lt_attn *a, const double *dy, const int64_t *dys, int64_t b, int64_t g, const ag_out *o,
                       double *z, double *c, double *s, double *yrow)
{
    for (int64_t h = g * a->group; h < (g + 1) * a->group; h++)
        for (int64_t i = 0; i < a->S; i++) {
            const double *qi = a->q + b * a->qs[0] + h * a->qs[1] + i * a->qs[2];
            const double *dyi = dy + b * dys[0] + h * dys[1] + i * dys[2];
            if (!lt_attn_scores(a, b, h, i, qi, z, c, s, false))
                continue; /* a fully masked row's output is the constant 0 */
            lt_attn_softmax(s, a->T);
            memset(yrow, 0, (size_t)a->Dv * sizeof *yrow);
            for (int64_t j = 0; j < a->T; j++) {
                if (s[j] == 0)
                    continue;
                const double *vj = lt_attn_value(a, b, g, j);
                for (int64_t d = 0; d < a->Dv; d++)
                    yrow[d] += s[j] * vj[d];
            }
            double dyy = 0;
            for (int64_t d = 0; d < a->Dv; d++)
                dyy += dyi[d] * yrow[d];
            double *dqi = o->dq ? o->dq + b * a->qs[0] + h * a->qs[1] + i * a->qs[2] : NULL;
            for (int64_t j = 0; j < a->T; j++) {
                double p = s[j];
                if (p == 0)
                    continue;
                const double *vj = lt_attn_value(a, b, g, j), *kj = lt_attn_key(a, b, g, j);
                double dp = 0;
                for (int64_t d = 0; d < a->Dv; d++)
                    dp += dyi[d] * vj[d];
                if (o->dv) {
                    double *dvj = o->dv + ((b * a->Hkv + g) * a->T + j) * a->Dv;
                    for (int64_t d = 0; d < a->Dv; d++)
                        dvj[d] += p * dyi[d];
                }
                double ds = p * (dp - dyy);
                if (o->dm && j < a->Tm)
                    o->dm[b * a->ms[0] + h * a->ms[1] + i * a->ms[2] + j * a->ms[3]] += ds;
                double dz = ds;
                if (a->softcap > 0) {
                    double t = c[j] / a->softcap;
                    dz *= 1 - t * t;
                }
                dz *= a->scale;
                if (dqi)
                    for (int64_t d = 0; d < a->D; d++)
                        dqi[d] += dz * kj[d];
                if (o->dk) {
                    double *dkj = o->dk + ((b * a->Hkv + g) * a->T + j) * a->D;
                    for (int64_t d = 0; d < a->D; d++)
                        dkj[d] += dz * qi[d];
                }
            }
        }
}

/* output o (a gradient of input `like`) in like's type and shape, from w */
static lt_status store(lt_kctx *k, int o, const lt_tensor *like, const double *w)
{
    lt_tensor *t;
    lt_status st = lt_k_out(k, o, like->dtype, like->rank, like->dims, &t);
    if (st == LT_OK)
        lt_nu_store_f64(t, w);
    return st;
}

/* the [B, Hkv, T, hd] gradient plus the present output's, split into the
 * new positions (in the input's layout, strides cs) and the past */
static lt_status split_kv(lt_kctx *k, const lt_attn *a, double *dt, const lt_tensor *dpres, int onew, int opast,
                          const lt_tensor *cur, const lt_tensor *past, const int64_t *cs, int64_t hd)
{
    if (dpres) {
        if (dpres->numel != a->B * a->Hkv * a->T * hd)
            return lt_k_fail(k, LT_ERR_RUNTIME, "the present output's gradient has %lld elements, expected %lld",
                             (long long)dpres->numel, (long long)(a->B * a->Hkv * a->T * hd));
        const double *d = lt_nu_as_f64(k, dpres);
        if (!d)
            return LT_ERR_RUNTIME;
        for (int64_t e = 0; e < dpres->numel; e++)
            dt[e] += d[e];
    }
    lt_status st = LT_OK;
    if (lt_k_want(k, onew)) {
        double *w = lt_nu_scratch(k, cur->numel, sizeof *w);
        if (!w)
            return LT_ERR_RUNTIME;
        for (int64_t b = 0; b < a->B; b++)
            for (int64_t g = 0; g < a->Hkv; g++)
                for (int64_t j = 0; j < a->L; j++)
                    memcpy(w + b * cs[0] + g * cs[1] + j * cs[2], dt + ((b * a->Hkv + g) * a->T + a->P + j) * hd,
                           (size_t)hd * sizeof *w);
        st = store(k, onew, cur, w);
    }
    if (st == LT_OK && past && lt_k_want(k, opast)) {
        double *w = lt_nu_scratch(k, past->numel, sizeof *w);
        if (!w)
            return LT_ERR_RUNTIME;
        for (int64_t bg = 0; bg < a->B * a->Hkv; bg++)
            memcpy(w + bg * a->P * hd, dt + bg * a->T * hd, (size_t)(a->P * hd) * sizeof *w);
        st = store(k, opast, past, w);
    }
    return st;
}

lt_status lt_cpu_attention_grad(lt_kctx *k)
{
    lt_attn a;
    lt_status st = lt_attn_setup(k, &a, 1);
    if (st != LT_OK)
        return st;
    const lt_tensor *dyt = lt_k_in(k, 0), *q = lt_k_in(k, 1), *m = lt_k_in(k, 4);
    int64_t dys[3];
    memcpy(dys, a.ys, sizeof dys);
    int64_t ynum = a.B * a.Hq * a.S * a.Dv;
    if (dyt && dyt->numel != ynum)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dY has %lld elements, expected %lld", (long long)dyt->numel,
                         (long long)ynum);
    const double *dy = dyt ? lt_nu_as_f64(k, dyt) : NULL;
    if (dyt && !dy)
        return LT_ERR_RUNTIME;
    bool wq = lt_k_want(k, 0), wm = lt_k_want(k, 3) && m && !a.mask_bool;
    bool wkv = lt_k_want(k, 1) || lt_k_want(k, 2) || lt_k_want(k, 4) || lt_k_want(k, 5);
    int64_t nk = a.B * a.Hkv * a.T * a.D, nv = a.B * a.Hkv * a.T * a.Dv;
    ag_out o = {0};
    o.dq = wq ? lt_nu_scratch(k, q->numel, sizeof *o.dq) : NULL;
    o.dk = wkv ? lt_nu_scratch(k, nk, sizeof *o.dk) : NULL;
    o.dv = wkv ? lt_nu_scratch(k, nv, sizeof *o.dv) : NULL;
    o.dm = wm ? lt_nu_scratch(k, m->numel, sizeof *o.dm) : NULL;
    if ((wq && !o.dq) || (wkv && (!o.dk || !o.dv)) || (wm && !o.dm))
        return LT_ERR_RUNTIME;
    if (o.dq)
        memset(o.dq, 0, (size_t)q->numel * sizeof *o.dq);
    if (o.dk) {
        memset(o.dk, 0, (size_t)nk * sizeof *o.dk);
        memset(o.dv, 0, (size_t)nv * sizeof *o.dv);
    }
    if (o.dm)
        memset(o.dm, 0, (size_t)m->numel * sizeof *o.dm);
    if (dy) {
        int nt = omp_get_max_threads();
        int64_t per = 3 * a.T + a.Dv;
        double *rows = lt_nu_scratch(k, (int64_t)nt * (per ? per : 1), sizeof *rows);
        if (!rows)
            return LT_ERR_RUNTIME;
        int64_t blocks = a.B * a.Hkv;
        double work = (double)a.B * (double)a.Hq * (double)a.S * (double)a.T * (double)(a.D + a.Dv);
        /* a mask broadcast over batches or heads is summed across blocks */
        bool shared_mask = o.dm && (a.ms[0] == 0 || a.ms[1] == 0);
#pragma omp parallel for schedule(dynamic, 1) if (work > LT_NU_PAR && blocks > 1 && !shared_mask)
        for (int64_t bg = 0; bg < blocks; bg++) {
            double *z = rows + (int64_t)omp_get_thread_num() * per;
            grad_block(&a, dy, dys, bg / a.Hkv, bg % a.Hkv, &o, z, z + a.T, z + 2 * a.T, z + 3 * a.T);
        }
    }
    if (wq)
        st = store(k, 0, q, o.dq);
    const lt_tensor *dpk = k->nin > 8 ? lt_k_in(k, 8) : NULL, *dpv = k->nin > 9 ? lt_k_in(k, 9) : NULL;
    if (st == LT_OK && wkv)
        st = split_kv(k, &a, o.dk, dpk, 1, 4, lt_k_in(k, 2), lt_k_in(k, 5), a.ks, a.D);
    if (st == LT_OK && wkv)
        st = split_kv(k, &a, o.dv, dpv, 2, 5, lt_k_in(k, 3), lt_k_in(k, 6), a.vs, a.Dv);
    if (st == LT_OK && wm)
        st = store(k, 3, m, o.dm);
    return st;
}
