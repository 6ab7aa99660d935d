/* CPU kernels: LinearAttention (opset 27), the recurrent form of linear,
 * gated, delta-rule and gated delta-rule attention, and its gradient
 *   LinearAttentionGrad (dY, dpresent, Q, K, V, past_state, decay, beta)
 *     -> dQ, dK, dV, dpast_state, ddecay, dbeta.
 * Per batch and key head, with S the (d_k, d_v) state, step t does
 *   A = exp(g_t) S (rows scaled; gated rules), r = A^T k, u = beta (v - r)
 *   (delta rules; else u = v), S' = A + k u^T, o_h = scale S'^T q_h
 * for the query heads h of the group. The gradient runs the steps backwards
 * over the states the forward pass went through, kept per step (T + 1 of
 * them per key head). Computed in double for every float type. */
#include "norm_util.h"
#include <math.h>
#include <string.h>

typedef struct la_geom {
    int64_t B, T, Hq, Hkv, dk, dv, group;
    bool gating, delta;
    int64_t dlast, blast; /* decay's and beta's last dims */
    double scale;
} la_geom;

static lt_status la_setup(lt_kctx *k, la_geom *g, int base)
{
    const lt_tensor *q = lt_k_in(k, base), *kk = lt_k_in(k, base + 1), *v = lt_k_in(k, base + 2);
    const lt_tensor *past = lt_k_in(k, base + 3), *decay = lt_k_in(k, base + 4), *beta = lt_k_in(k, base + 5);
    if (!q || !kk || !v)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs query, key and value");
    if (q->rank != 3 || kk->rank != 3 || v->rank != 3 || !lt_dtype_is_float(q->dtype) ||
        !lt_dtype_is_float(kk->dtype) || !lt_dtype_is_float(v->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "query, key and value must be float (B, T, heads * size) tensors");
    g->Hq = lt_attr_int(k->node, "q_num_heads", 0);
    g->Hkv = lt_attr_int(k->node, "kv_num_heads", 0);
    if (g->Hq <= 0 || g->Hkv <= 0 || g->Hq % g->Hkv)
        return lt_k_fail(k, LT_ERR_RUNTIME, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                         (long long)g->Hq, (long long)g->Hkv);
    g->group = g->Hq / g->Hkv;
    g->B = q->dims[0];
    g->T = q->dims[1];
    if (q->dims[2] % g->Hq || v->dims[2] % g->Hkv)
        return lt_k_fail(k, LT_ERR_RUNTIME, "query's or value's last dim does not divide into the heads");
    g->dk = q->dims[2] / g->Hq;
    g->dv = v->dims[2] / g->Hkv;
    for (int d = 0; d < 2; d++)
        if (kk->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "query, key and value differ in batch or length");
    if (kk->dims[2] != g->Hkv * g->dk)
        return lt_k_fail(k, LT_ERR_RUNTIME, "key's last dim %lld is not kv_num_heads * d_k = %lld",
                         (long long)kk->dims[2], (long long)(g->Hkv * g->dk));
    const char *rule = lt_attr_str(k->node, "update_rule", "gated_delta");
    if (strcmp(rule, "linear") && strcmp(rule, "gated") && strcmp(rule, "delta") && strcmp(rule, "gated_delta"))
        return lt_k_fail(k, LT_ERR_RUNTIME, "update_rule '%s' (expected linear, gated, delta or gated_delta)", rule);
    g->gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    g->delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (g->gating != (decay != NULL))
        return lt_k_fail(k, LT_ERR_RUNTIME, "update_rule '%s' %s the decay input", rule,
                         g->gating ? "needs" : "forbids");
    if (g->delta != (beta != NULL))
        return lt_k_fail(k, LT_ERR_RUNTIME, "update_rule '%s' %s the beta input", rule, g->delta ? "needs" : "forbids");
    if (decay) {
        g->dlast = decay->rank == 3 ? decay->dims[2] : -1;
        if (decay->rank != 3 || decay->dims[0] != g->B || decay->dims[1] != g->T ||
            (g->dlast != g->Hkv && g->dlast != g->Hkv * g->dk))
            return lt_k_fail(k, LT_ERR_RUNTIME, "decay must be (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k)");
    }
    if (beta) {
        g->blast = beta->rank == 3 ? beta->dims[2] : -1;
        if (beta->rank != 3 || beta->dims[0] != g->B || beta->dims[1] != g->T || (g->blast != g->Hkv && g->blast != 1))
            return lt_k_fail(k, LT_ERR_RUNTIME, "beta must be (B, T, kv_num_heads) or (B, T, 1)");
    }
    if (past && (past->rank != 4 || past->dims[0] != g->B || past->dims[1] != g->Hkv || past->dims[2] != g->dk ||
                 past->dims[3] != g->dv))
        return lt_k_fail(k, LT_ERR_RUNTIME, "past_state must be (B, kv_num_heads, d_k, d_v) = (%lld, %lld, %lld, %lld)",
                         (long long)g->B, (long long)g->Hkv, (long long)g->dk, (long long)g->dv);
    double sc = lt_attr_float(k->node, "scale", 0);
    g->scale = sc != 0 ? sc : 1 / sqrt((double)g->dk);
    return LT_OK;
}

/* inputs in double (NULL where absent); false after lt_k_fail */
typedef struct la_in {
    const double *q, *k, *v, *past, *decay, *beta;
} la_in;

static bool la_load(lt_kctx *k, int base, la_in *in)
{
    const double **dst[6] = {&in->q, &in->k, &in->v, &in->past, &in->decay, &in->beta};
    for (int i = 0; i < 6; i++) {
        const lt_tensor *t = lt_k_in(k, base + i);
        *dst[i] = t ? lt_nu_as_f64(k, t) : NULL;
        if (t && !*dst[i])
            return false;
    }
    return true;
}

/* the row scale exp(g_t) of row d, and where it comes from */
static int64_t la_decay_at(const la_geom *g, int64_t b, int64_t t, int64_t h, int64_t d)
{
    return (b * g->T + t) * g->dlast + (g->dlast == g->Hkv ? h : h * g->dk + d);
}

static int64_t la_beta_at(const la_geom *g, int64_t b, int64_t t, int64_t h)
{
    return (b * g->T + t) * g->blast + (g->blast == 1 ? 0 : h);
}

/* the gate of step t on S in place: rows scaled by exp(decay) */
static void la_gate(const la_geom *g, const la_in *in, int64_t b, int64_t h, int64_t t, double *S)
{
    if (!g->gating)
        return;
    for (int64_t d = 0; d < g->dk; d++) {
        double e = exp(in->decay[la_decay_at(g, b, t, h, d)]);
        for (int64_t m = 0; m < g->dv; m++)
            S[d * g->dv + m] *= e;
    }
}

/* the update of step t on the gated state A in place (A + k u^T); u
 * receives the update's value row (d_v) */
static void la_update(const la_geom *g, const la_in *in, int64_t b, int64_t h, int64_t t, double *A, double *u)
{
    int64_t dk = g->dk, dv = g->dv;
    const double *kt = in->k + (b * g->T + t) * g->Hkv * dk + h * dk;
    const double *vt = in->v + (b * g->T + t) * g->Hkv * dv + h * dv;
    for (int64_t m = 0; m < dv; m++)
        u[m] = vt[m];
    if (g->delta) {
        double beta = in->beta[la_beta_at(g, b, t, h)];
        for (int64_t m = 0; m < dv; m++) {
            double r = 0;
            for (int64_t d = 0; d < dk; d++)
                r += A[d * dv + m] * kt[d];
            u[m] = beta * (vt[m] - r);
        }
    }
    for (int64_t d = 0; d < dk; d++)
        for (int64_t m = 0; m < dv; m++)
            A[d * dv + m] += kt[d] * u[m];
}

static void la_step(const la_geom *g, const la_in *in, int64_t b, int64_t h, int64_t t, double *S, double *u)
{
    la_gate(g, in, b, h, t, S);
    la_update(g, in, b, h, t, S, u);
}

static lt_status la_out(lt_kctx *k, int o, lt_dtype dt, int rank, const int64_t *dims, const double *v)
{
    if (!lt_k_want(k, o))
        return LT_OK;
    lt_tensor *t;
    lt_status st = lt_k_out(k, o, dt, rank, dims, &t);
    if (st == LT_OK)
        lt_nu_store_f64(t, v);
    return st;
}

static lt_status linear_attention(lt_kctx *k)
{
    la_geom g;
    la_in in;
    lt_status st = la_setup(k, &g, 0);
    if (st != LT_OK)
        return st;
    if (!la_load(k, 0, &in))
        return LT_ERR_RUNTIME;
    int64_t ss = g.dk * g.dv;
    double *y = lt_nu_scratch(k, g.B * g.T * g.Hq * g.dv, sizeof *y);
    double *S = y ? lt_nu_scratch(k, g.B * g.Hkv * ss + g.dv, sizeof *S) : NULL;
    if (!S)
        return LT_ERR_RUNTIME;
    double *u = S + g.B * g.Hkv * ss;
    if (in.past)
        memcpy(S, in.past, (size_t)(g.B * g.Hkv * ss) * sizeof *S);
    else
        memset(S, 0, (size_t)(g.B * g.Hkv * ss) * sizeof *S);
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hkv; h++) {
            double *Sh = S + (b * g.Hkv + h) * ss;
            for (int64_t t = 0; t < g.T; t++) {
                la_step(&g, &in, b, h, t, Sh, u);
                for (int64_t qh = h * g.group; qh < (h + 1) * g.group; qh++) {
                    const double *qt = in.q + (b * g.T + t) * g.Hq * g.dk + qh * g.dk;
                    double *yt = y + (b * g.T + t) * g.Hq * g.dv + qh * g.dv;
                    for (int64_t m = 0; m < g.dv; m++) {
                        double o = 0;
                        for (int64_t d = 0; d < g.dk; d++)
                            o += qt[d] * Sh[d * g.dv + m];
                        yt[m] = g.scale * o;
                    }
                }
            }
        }
    const lt_tensor *q = lt_k_in(k, 0), *past = lt_k_in(k, 3);
    int64_t yd[3] = {g.B, g.T, g.Hq * g.dv}, sd[4] = {g.B, g.Hkv, g.dk, g.dv};
    st = la_out(k, 0, q->dtype, 3, yd, y);
    if (st == LT_OK)
        st = la_out(k, 1, past ? past->dtype : q->dtype, 4, sd, S);
    return st;
}

/* the backward of one (batch, key head): states[t] is S before step t */
static void la_back(const la_geom *g, const la_in *in, const double *dy, const double *dpres, int64_t b, int64_t h,
                    double *states, double *w, double *const *d)
{
    int64_t dk = g->dk, dv = g->dv, ss = dk * dv;
    double *dS = w, *A = w + ss, *u = A + ss, *du = u + dv, *dr = du + dv, *tmp = dr + dv;
    double *dq = d[0], *dkk = d[1], *dvv = d[2], *ddec = d[4], *dbeta = d[5];
    if (dpres)
        memcpy(dS, dpres + (b * g->Hkv + h) * ss, (size_t)ss * sizeof *dS);
    else
        memset(dS, 0, (size_t)ss * sizeof *dS);
    for (int64_t t = g->T - 1; t >= 0; t--) {
        /* recompute A, u and S' = states[t + 1] from states[t] */
        const double *S0 = states + t * ss, *S1 = states + (t + 1) * ss;
        memcpy(A, S0, (size_t)ss * sizeof *A);
        la_gate(g, in, b, h, t, A);
        memcpy(tmp, A, (size_t)ss * sizeof *tmp);
        la_update(g, in, b, h, t, tmp, u);
        const double *kt = in->k + (b * g->T + t) * g->Hkv * dk + h * dk;
        const double *vt = in->v + (b * g->T + t) * g->Hkv * dv + h * dv;
        if (dy)
            for (int64_t qh = h * g->group; qh < (h + 1) * g->group; qh++) {
                int64_t qo = (b * g->T + t) * g->Hq * dk + qh * dk, yo = (b * g->T + t) * g->Hq * dv + qh * dv;
                for (int64_t dd = 0; dd < dk; dd++) {
                    double s = 0;
                    for (int64_t m = 0; m < dv; m++) {
                        s += S1[dd * dv + m] * dy[yo + m];
                        dS[dd * dv + m] += g->scale * in->q[qo + dd] * dy[yo + m];
                    }
                    if (dq)
                        dq[qo + dd] = g->scale * s;
                }
            }
        /* S' = A + k u^T */
        int64_t ko = (b * g->T + t) * g->Hkv * dk + h * dk, vo = (b * g->T + t) * g->Hkv * dv + h * dv;
        for (int64_t m = 0; m < dv; m++) {
            double s = 0;
            for (int64_t dd = 0; dd < dk; dd++)
                s += dS[dd * dv + m] * kt[dd];
            du[m] = s;
        }
        for (int64_t dd = 0; dd < dk; dd++) {
            double s = 0;
            for (int64_t m = 0; m < dv; m++)
                s += dS[dd * dv + m] * u[m];
            dkk[ko + dd] += s;
        }
        if (g->delta) {
            int64_t bi = la_beta_at(g, b, t, h);
            double beta = in->beta[bi], db = 0;
            for (int64_t m = 0; m < dv; m++) {
                double r = 0;
                for (int64_t dd = 0; dd < dk; dd++)
                    r += A[dd * dv + m] * kt[dd];
                db += du[m] * (vt[m] - r);
                dvv[vo + m] += beta * du[m];
                dr[m] = -beta * du[m];
            }
            if (dbeta)
                dbeta[bi] += db;
            for (int64_t dd = 0; dd < dk; dd++) {
                double s = 0;
                for (int64_t m = 0; m < dv; m++) {
                    s += A[dd * dv + m] * dr[m];
                    dS[dd * dv + m] += kt[dd] * dr[m]; /* dA += k dr^T */
                }
                dkk[ko + dd] += s;
            }
        } else {
            for (int64_t m = 0; m < dv; m++)
                dvv[vo + m] += du[m];
        }
        /* A = exp(g) S0: dg = sum dA A over the row (or the head), dS0 = exp(g) dA */
        if (g->gating)
            for (int64_t dd = 0; dd < dk; dd++) {
                int64_t gi = la_decay_at(g, b, t, h, dd);
                double e = exp(in->decay[gi]), s = 0;
                for (int64_t m = 0; m < dv; m++) {
                    s += dS[dd * dv + m] * A[dd * dv + m];
                    dS[dd * dv + m] *= e;
                }
                if (ddec)
                    ddec[gi] += s;
            }
    }
    if (d[3])
        memcpy(d[3] + (b * g->Hkv + h) * ss, dS, (size_t)ss * sizeof *dS);
}

static lt_status linear_attention_grad(lt_kctx *k)
{
    la_geom g;
    la_in in;
    lt_status st = la_setup(k, &g, 2);
    if (st != LT_OK)
        return st;
    if (!la_load(k, 2, &in))
        return LT_ERR_RUNTIME;
    const lt_tensor *dyt = lt_k_in(k, 0), *dpt = lt_k_in(k, 1);
    int64_t ss = g.dk * g.dv, ny = g.B * g.T * g.Hq * g.dv;
    if ((dyt && dyt->numel != ny) || (dpt && dpt->numel != g.B * g.Hkv * ss))
        return lt_k_fail(k, LT_ERR_RUNTIME, "the output gradients do not match the outputs' shapes");
    const double *dy = dyt ? lt_nu_as_f64(k, dyt) : NULL, *dp = dpt ? lt_nu_as_f64(k, dpt) : NULL;
    if ((dyt && !dy) || (dpt && !dp))
        return LT_ERR_RUNTIME;
    const lt_tensor *like[6];
    double *d[6] = {NULL};
    for (int i = 0; i < 6; i++) {
        like[i] = lt_k_in(k, 2 + i);
        if (!like[i] || !lt_k_want(k, i))
            continue;
        d[i] = lt_nu_scratch(k, like[i]->numel, sizeof *d[i]);
        if (!d[i])
            return LT_ERR_RUNTIME;
        memset(d[i], 0, (size_t)like[i]->numel * sizeof *d[i]);
    }
    /* dK and dV are needed inside the steps (accumulated): scratch when unwanted */
    for (int i = 1; i <= 2; i++)
        if (!d[i]) {
            d[i] = lt_nu_scratch(k, like[i]->numel, sizeof *d[i]);
            if (!d[i])
                return LT_ERR_RUNTIME;
            memset(d[i], 0, (size_t)like[i]->numel * sizeof *d[i]);
        }
    double *states = lt_nu_scratch(k, (g.T + 1) * ss, sizeof *states);
    double *w = states ? lt_nu_scratch(k, 3 * ss + 3 * g.dv, sizeof *w) : NULL;
    if (!w)
        return LT_ERR_RUNTIME;
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hkv; h++) {
            if (in.past)
                memcpy(states, in.past + (b * g.Hkv + h) * ss, (size_t)ss * sizeof *states);
            else
                memset(states, 0, (size_t)ss * sizeof *states);
            for (int64_t t = 0; t < g.T; t++) {
                memcpy(states + (t + 1) * ss, states + t * ss, (size_t)ss * sizeof *states);
                la_step(&g, &in, b, h, t, states + (t + 1) * ss, w);
            }
            la_back(&g, &in, dy, dp, b, h, states, w, d);
        }
    for (int i = 0; i < 6 && st == LT_OK; i++)
        if (d[i] && lt_k_want(k, i))
            st = la_out(k, i, like[i]->dtype, like[i]->rank, like[i]->dims, d[i]);
    return st;
}

void lt_cpu_register_linear_attention(lt_kernel_fn *tab)
{
    tab[LT_OP_LINEAR_ATTENTION] = linear_attention;
    tab[LT_OP_LINEAR_ATTENTION_GRAD] = linear_attention_grad;
}
