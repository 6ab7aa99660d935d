/* CPU kernels: CausalConvWithState (opset 27), the depthwise causal 1-D
 * convolution of state-space and linear-attention models, with its carry
 * state, and its gradient
 *   CausalConvWithStateGrad (dY, dpresent, X, W, B, past_state) -> dX, dW, dB, dpast.
 * With P = concat(past_state (zeros when absent), X) along the length,
 *   a[b, c, t] = B[c] + sum_j W[c, 0, j] P[b, c, t + j],
 *   Y = a, or a sigmoid(a) for silu/swish; present = the last k - 1 of P.
 * Computed in double for every float type. */
#include "norm_util.h"
#include <math.h>
#include <string.h>

typedef struct cc_geom {
    int64_t B, C, L, k;
    bool silu;
} cc_geom;

static lt_status cc_setup(lt_kctx *k, cc_geom *g, const lt_tensor *x, const lt_tensor *w, const lt_tensor *b,
                          const lt_tensor *past)
{
    if (!x || !w)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs input and weight");
    if (!lt_dtype_is_float(x->dtype) || x->rank != 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be a float (batch, channels, length) tensor");
    g->B = x->dims[0];
    g->C = x->dims[1];
    g->L = x->dims[2];
    if (w->rank != 3 || w->dims[0] != g->C || w->dims[1] != 1 || w->dims[2] < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "weight must be (channels %lld, 1, k >= 1)", (long long)g->C);
    g->k = w->dims[2];
    if (b && b->numel != g->C)
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias must have %lld elements", (long long)g->C);
    if (past && (past->rank != 3 || past->dims[0] != g->B || past->dims[1] != g->C || past->dims[2] != g->k - 1))
        return lt_k_fail(k, LT_ERR_RUNTIME, "past_state must be (batch %lld, channels %lld, k - 1 = %lld)",
                         (long long)g->B, (long long)g->C, (long long)(g->k - 1));
    const char *act = lt_attr_str(k->node, "activation", "none");
    if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish"))
        return lt_k_fail(k, LT_ERR_RUNTIME, "activation '%s' (expected none, silu or swish)", act);
    g->silu = strcmp(act, "none") != 0;
    return LT_OK;
}

/* P for every (batch, channel): [B, C, k - 1 + L] */
static double *padded(lt_kctx *k, const cc_geom *g, const double *x, const double *past)
{
    int64_t pl = g->k - 1 + g->L;
    double *p = lt_nu_scratch(k, g->B * g->C * pl, sizeof *p);
    if (!p)
        return NULL;
    for (int64_t bc = 0; bc < g->B * g->C; bc++) {
        double *row = p + bc * pl;
        if (past)
            memcpy(row, past + bc * (g->k - 1), (size_t)(g->k - 1) * sizeof *row);
        else
            memset(row, 0, (size_t)(g->k - 1) * sizeof *row);
        memcpy(row + g->k - 1, x + bc * g->L, (size_t)g->L * sizeof *row);
    }
    return p;
}

static double pre_act(const cc_geom *g, const double *row, const double *w, double bias, int64_t t)
{
    double a = bias;
    for (int64_t j = 0; j < g->k; j++)
        a += w[j] * row[t + j];
    return a;
}

static lt_status out_from(lt_kctx *k, int o, const lt_tensor *like, int rank, const int64_t *dims, const double *v)
{
    if (!lt_k_want(k, o))
        return LT_OK;
    lt_tensor *t;
    lt_status st = lt_k_out(k, o, like->dtype, rank, dims, &t);
    if (st == LT_OK)
        lt_nu_store_f64(t, v);
    return st;
}

static lt_status causal_conv(lt_kctx *k)
{
    const lt_tensor *xt = lt_k_in(k, 0), *wt = lt_k_in(k, 1), *bt = lt_k_in(k, 2), *pt = lt_k_in(k, 3);
    cc_geom g;
    lt_status st = cc_setup(k, &g, xt, wt, bt, pt);
    if (st != LT_OK)
        return st;
    const double *x = lt_nu_as_f64(k, xt), *w = x ? lt_nu_as_f64(k, wt) : NULL;
    const double *bias = w && bt ? lt_nu_as_f64(k, bt) : NULL, *past = w && pt ? lt_nu_as_f64(k, pt) : NULL;
    double *p = w && (!bt || bias) && (!pt || past) ? padded(k, &g, x, past) : NULL;
    double *y = p ? lt_nu_scratch(k, xt->numel, sizeof *y) : NULL;
    double *pres = y ? lt_nu_scratch(k, g.B * g.C * (g.k - 1), sizeof *pres) : NULL;
    if (!pres)
        return LT_ERR_RUNTIME;
    int64_t pl = g.k - 1 + g.L;
    for (int64_t bc = 0; bc < g.B * g.C; bc++) {
        int64_t c = bc % g.C;
        const double *row = p + bc * pl;
        for (int64_t t = 0; t < g.L; t++) {
            double a = pre_act(&g, row, w + c * g.k, bias ? bias[c] : 0, t);
            y[bc * g.L + t] = g.silu ? a / (1 + exp(-a)) : a;
        }
        memcpy(pres + bc * (g.k - 1), row + g.L, (size_t)(g.k - 1) * sizeof *pres);
    }
    int64_t sd[3] = {g.B, g.C, g.k - 1};
    st = out_from(k, 0, xt, 3, xt->dims, y);
    if (st == LT_OK)
        st = out_from(k, 1, xt, 3, sd, pres);
    return st;
}

static lt_status causal_conv_grad(lt_kctx *k)
{
    const lt_tensor *dyt = lt_k_in(k, 0), *dst = lt_k_in(k, 1), *xt = lt_k_in(k, 2), *wt = lt_k_in(k, 3);
    const lt_tensor *bt = lt_k_in(k, 4), *pt = lt_k_in(k, 5);
    cc_geom g;
    lt_status st = cc_setup(k, &g, xt, wt, bt, pt);
    if (st != LT_OK)
        return st;
    int64_t pl = g.k - 1 + g.L, ns = g.B * g.C * (g.k - 1);
    if ((dyt && dyt->numel != xt->numel) || (dst && dst->numel != ns))
        return lt_k_fail(k, LT_ERR_RUNTIME, "the output gradients do not match the outputs' shapes");
    const double *x = lt_nu_as_f64(k, xt), *w = x ? lt_nu_as_f64(k, wt) : NULL;
    const double *bias = w && bt ? lt_nu_as_f64(k, bt) : NULL, *past = w && pt ? lt_nu_as_f64(k, pt) : NULL;
    const double *dy = w && dyt ? lt_nu_as_f64(k, dyt) : NULL, *ds = w && dst ? lt_nu_as_f64(k, dst) : NULL;
    double *p = w && (!bt || bias) && (!pt || past) && (!dyt || dy) && (!dst || ds) ? padded(k, &g, x, past) : NULL;
    double *dp = p ? lt_nu_scratch(k, g.B * g.C * pl, sizeof *dp) : NULL;
    double *dw = dp ? lt_nu_scratch(k, g.C * g.k + g.C, sizeof *dw) : NULL;
    if (!dw)
        return LT_ERR_RUNTIME;
    double *db = dw + g.C * g.k;
    memset(dp, 0, (size_t)(g.B * g.C * pl) * sizeof *dp);
    memset(dw, 0, (size_t)(g.C * g.k + g.C) * sizeof *dw);
    for (int64_t bc = 0; bc < g.B * g.C; bc++) {
        int64_t c = bc % g.C;
        const double *row = p + bc * pl, *wc = w + c * g.k;
        double *drow = dp + bc * pl;
        if (ds) /* present is P's tail */
            for (int64_t j = 0; j < g.k - 1; j++)
                drow[g.L + j] += ds[bc * (g.k - 1) + j];
        for (int64_t t = 0; dy && t < g.L; t++) {
            double da = dy[bc * g.L + t];
            if (g.silu) {
                double a = pre_act(&g, row, wc, bias ? bias[c] : 0, t), s = 1 / (1 + exp(-a));
                da *= s * (1 + a * (1 - s));
            }
            db[c] += da;
            for (int64_t j = 0; j < g.k; j++) {
                dw[c * g.k + j] += da * row[t + j];
                drow[t + j] += da * wc[j];
            }
        }
    }
    double *dx = lt_nu_scratch(k, xt->numel + ns, sizeof *dx);
    if (!dx)
        return LT_ERR_RUNTIME;
    double *dpast = dx + xt->numel;
    for (int64_t bc = 0; bc < g.B * g.C; bc++) {
        memcpy(dpast + bc * (g.k - 1), dp + bc * pl, (size_t)(g.k - 1) * sizeof *dx);
        memcpy(dx + bc * g.L, dp + bc * pl + g.k - 1, (size_t)g.L * sizeof *dx);
    }
    st = out_from(k, 0, xt, xt->rank, xt->dims, dx);
    if (st == LT_OK)
        st = out_from(k, 1, wt, wt->rank, wt->dims, dw);
    if (st == LT_OK && bt)
        st = out_from(k, 2, bt, bt->rank, bt->dims, db);
    if (st == LT_OK && pt)
        st = out_from(k, 3, pt, pt->rank, pt->dims, dpast);
    return st;
}

void lt_cpu_register_causal_conv(lt_kernel_fn *tab)
{
    tab[LT_OP_CAUSAL_CONV_WITH_STATE] = causal_conv;
    tab[LT_OP_CAUSAL_CONV_WITH_STATE_GRAD] = causal_conv_grad;
}
