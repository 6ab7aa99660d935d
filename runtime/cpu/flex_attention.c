/* CPU kernel: FlexAttention (ai.onnx.preview, opset 1). The scores
 * scale Q K^T (key heads repeated for GQA) are handed whole to the
 * score_mod graph, their softmax over the keys to the prob_mod graph, and
 * the result times V is the output; the graphs see the scores in the
 * softmax precision (float32 for 16-bit inputs). The [B, H, L, S] score
 * tensor is materialised because the graphs take it whole. */
#include "norm_util.h"
#include <math.h>
#include <string.h>

/* runs the graph attribute `name` (if any) on t, replacing t's values */
static lt_status run_mod(lt_kctx *k, const char *name, lt_value *t, double *vals)
{
    const lt_attr *a = lt_attr_find(k->node, name);
    if (!a || a->kind != LT_ATTR_GRAPH)
        return LT_OK;
    if (a->region < 0 || a->region >= k->node->nregions)
        return lt_k_fail(k, LT_ERR_INTERNAL, "graph attribute '%s' has no region", name);
    const lt_block *b = k->node->regions[a->region];
    if (b->nparams != 1 || b->nresults != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must take one input and give one output", name);
    lt_nu_store_f64(&t->t, vals);
    lt_value *args[1] = {t}, *res[1] = {NULL};
    lt_status st = lt_k_run_block(k, b, args, res);
    if (st != LT_OK)
        return st;
    const lt_tensor *r = res[0] && res[0]->kind == LT_VAL_TENSOR ? &res[0]->t : NULL;
    if (!r || r->numel != t->t.numel || !lt_dtype_is_float(r->dtype)) {
        lt_value_free(res[0]);
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must give a float tensor of the scores' %lld elements", name,
                         (long long)t->t.numel);
    }
    for (int64_t i = 0; i < r->numel; i++)
        vals[i] = lt_tensor_get_f64(r, i);
    lt_value_free(res[0]);
    return LT_OK;
}

static lt_status flex_attention(lt_kctx *k)
{
    const lt_tensor *qt = lt_k_in(k, 0), *kt = lt_k_in(k, 1), *vt = lt_k_in(k, 2);
    if (!qt || !kt || !vt)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs Q, K and V");
    if (qt->rank != 4 || kt->rank != 4 || vt->rank != 4 || !lt_dtype_is_float(qt->dtype) ||
        !lt_dtype_is_float(kt->dtype) || !lt_dtype_is_float(vt->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "Q, K and V must be float tensors of rank 4");
    int64_t B = qt->dims[0], Hq = qt->dims[1], L = qt->dims[2], E = qt->dims[3];
    int64_t Hkv = kt->dims[1], S = kt->dims[2], Ev = vt->dims[3];
    if (kt->dims[0] != B || vt->dims[0] != B || kt->dims[3] != E || vt->dims[1] != Hkv || vt->dims[2] != S)
        return lt_k_fail(k, LT_ERR_RUNTIME, "K and V do not fit Q (batch, heads, length or head size)");
    if (Hkv <= 0 || Hq % Hkv)
        return lt_k_fail(k, LT_ERR_RUNTIME, "Q's %lld heads are not a multiple of K's %lld", (long long)Hq,
                         (long long)Hkv);
    double scale = lt_attr_find(k->node, "scale") ? lt_attr_float(k->node, "scale", 1) : 1 / sqrt((double)E);
    int64_t sp = lt_attr_int(k->node, "softmax_precision", 0);
    lt_dtype cdt = sp ? (lt_dtype)sp : qt->dtype == LT_F64 ? LT_F64 : LT_F32;
    if (cdt != LT_F32 && cdt != LT_F64 && cdt != LT_F16 && cdt != LT_BF16)
        return lt_k_fail(k, LT_ERR_RUNTIME, "softmax_precision %lld is not a float type", (long long)sp);
    const double *q = lt_nu_as_f64(k, qt), *kk = q ? lt_nu_as_f64(k, kt) : NULL, *v = kk ? lt_nu_as_f64(k, vt) : NULL;
    int64_t n = B * Hq * L * S;
    double *sc = v ? lt_nu_scratch(k, n, sizeof *sc) : NULL;
    double *y = sc ? lt_nu_scratch(k, B * Hq * L * Ev, sizeof *y) : NULL;
    if (!y)
        return LT_ERR_RUNTIME;
    int64_t group = Hq / Hkv;
    for (int64_t bh = 0; bh < B * Hq; bh++) {
        int64_t b = bh / Hq, g = (bh % Hq) / group;
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) {
                const double *qi = q + (bh * L + i) * E, *kj = kk + ((b * Hkv + g) * S + j) * E;
                double d = 0;
                for (int64_t e = 0; e < E; e++)
                    d += qi[e] * kj[e];
                sc[(bh * L + i) * S + j] = d * scale;
            }
    }
    /* the graphs' argument: a tensor of the softmax precision */
    lt_value *t = lt_value_new_tensor();
    int64_t sd[4] = {B, Hq, L, S};
    lt_status st = t ? lt_tensor_alloc(&t->t, cdt, 4, sd, k->err) : lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK)
        st = run_mod(k, "score_mod", t, sc);
    for (int64_t r = 0; st == LT_OK && r < B * Hq * L; r++) {
        double *row = sc + r * S, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < S; j++)
            sum += (row[j] = exp(row[j] - mx));
        for (int64_t j = 0; j < S; j++)
            row[j] /= sum;
    }
    if (st == LT_OK)
        st = run_mod(k, "prob_mod", t, sc);
    if (t)
        lt_value_free(t);
    if (st != LT_OK)
        return st;
    for (int64_t bh = 0; bh < B * Hq; bh++) {
        int64_t b = bh / Hq, g = (bh % Hq) / group;
        for (int64_t i = 0; i < L; i++) {
            double *yi = y + (bh * L + i) * Ev;
            memset(yi, 0, (size_t)Ev * sizeof *yi);
            for (int64_t j = 0; j < S; j++) {
                double p = sc[(bh * L + i) * S + j];
                const double *vj = v + ((b * Hkv + g) * S + j) * Ev;
                for (int64_t e = 0; e < Ev; e++)
                    yi[e] += p * vj[e];
            }
        }
    }
    int64_t yd[4] = {B, Hq, L, Ev};
    lt_tensor *yt;
    st = lt_k_out(k, 0, vt->dtype, 4, yd, &yt);
    if (st == LT_OK)
        lt_nu_store_f64(yt, y);
    return st;
}

void lt_cpu_register_flex_attention(lt_kernel_fn *tab) { tab[LT_OP_FLEX_ATTENTION] = flex_attention; }
