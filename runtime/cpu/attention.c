/* CPU kernels: Attention (opsets 23-25) forward, fused per (batch, head):
 * one query row's scores at a time, so the [S, T] score matrix is never
 * held unless the qk_matmul_output output asks for it. Computed in double
 * for every input type. The gradient is in attention_grad.c. */
#include "attention_util.h"
#include "norm_util.h"
#include <omp.h>
#include <string.h>

/* ---- geometry ---- */
static const lt_tensor *opt_in(lt_kctx *k, int i)
{
    const lt_tensor *t = i < k->nin ? lt_k_in(k, i) : NULL;
    return t;
}

static lt_status mask_setup(lt_kctx *k, lt_attn *a, const lt_tensor *m)
{
    if (m->dtype != LT_BOOL && !lt_dtype_is_float(m->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "attn_mask must be bool or float, got %s", lt_dtype_name(m->dtype));
    if (m->rank < 1 || m->rank > 4)
        return lt_k_fail(k, LT_ERR_RUNTIME, "attn_mask of rank %d (expected 1 to 4)", m->rank);
    const int64_t target[4] = {a->B, a->Hq, a->S, a->T};
    int64_t stride = 1;
    for (int d = 3, md = m->rank - 1; d >= 0; d--, md--) {
        if (md < 0) {
            a->ms[d] = 0;
            continue;
        }
        int64_t n = m->dims[md];
        if (d == 3) {
            if (n > a->T)
                return lt_k_fail(k, LT_ERR_RUNTIME, "attn_mask's last dim %lld is longer than the %lld keys",
                                 (long long)n, (long long)a->T);
            a->Tm = n;
        } else if (n != 1 && n != target[d]) {
            return lt_k_fail(k, LT_ERR_RUNTIME,
                             "attn_mask dim %d is %lld, which does not broadcast to (batch %lld, q_num_heads %lld, "
                             "q_sequence_length %lld)",
                             md, (long long)n, (long long)a->B, (long long)a->Hq, (long long)a->S);
        }
        a->ms[d] = n == 1 && d != 3 ? 0 : stride;
        stride *= n;
    }
    a->mask_bool = m->dtype == LT_BOOL;
    a->mask = lt_nu_as_f64(k, m);
    return a->mask ? LT_OK : LT_ERR_RUNTIME;
}

static void strides(lt_attn *a, int64_t *st, int64_t heads, int64_t len, int64_t hd)
{
    if (a->in3d) {
        st[0] = len * heads * hd;
        st[1] = hd;
        st[2] = heads * hd;
    } else {
        st[0] = heads * len * hd;
        st[1] = len * hd;
        st[2] = hd;
    }
}

lt_status lt_attn_setup(lt_kctx *k, lt_attn *a, int base)
{
    memset(a, 0, sizeof *a);
    const lt_tensor *q = opt_in(k, base), *kk = opt_in(k, base + 1), *v = opt_in(k, base + 2);
    const lt_tensor *m = opt_in(k, base + 3), *pk = opt_in(k, base + 4), *pv = opt_in(k, base + 5);
    const lt_tensor *np = opt_in(k, base + 6);
    if (!q || !kk || !v)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs Q, K and V");
    if (!lt_dtype_is_float(q->dtype) || !lt_dtype_is_float(kk->dtype) || !lt_dtype_is_float(v->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "Q, K and V must be float tensors");
    if (q->rank != kk->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return lt_k_fail(k, LT_ERR_RUNTIME, "Q, K and V must all be 3-D or all 4-D (ranks %d, %d, %d)", q->rank,
                         kk->rank, v->rank);
    a->in3d = q->rank == 3;
    a->B = q->dims[0];
    if (a->in3d) {
        int64_t hq = lt_attr_int(k->node, "q_num_heads", 0), hkv = lt_attr_int(k->node, "kv_num_heads", 0);
        if (hq <= 0 || hkv <= 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "3-D inputs need q_num_heads and kv_num_heads (> 0)");
        if (q->dims[2] % hq || kk->dims[2] % hkv || v->dims[2] % hkv)
            return lt_k_fail(k, LT_ERR_RUNTIME,
                             "hidden sizes %lld (Q), %lld (K), %lld (V) do not divide into %lld and %lld heads",
                             (long long)q->dims[2], (long long)kk->dims[2], (long long)v->dims[2], (long long)hq,
                             (long long)hkv);
        a->Hq = hq;
        a->Hkv = hkv;
        a->S = q->dims[1];
        a->L = kk->dims[1];
        a->D = q->dims[2] / hq;
        if (kk->dims[2] / hkv != a->D)
            return lt_k_fail(k, LT_ERR_RUNTIME, "K's head size %lld differs from Q's %lld",
                             (long long)(kk->dims[2] / hkv), (long long)a->D);
        a->Dv = v->dims[2] / hkv;
        if (v->dims[1] != a->L)
            return lt_k_fail(k, LT_ERR_RUNTIME, "K has %lld positions, V %lld", (long long)a->L,
                             (long long)v->dims[1]);
    } else {
        a->Hq = q->dims[1];
        a->S = q->dims[2];
        a->D = q->dims[3];
        a->Hkv = kk->dims[1];
        a->L = kk->dims[2];
        a->Dv = v->dims[3];
        if (kk->dims[3] != a->D || v->dims[1] != a->Hkv || v->dims[2] != a->L)
            return lt_k_fail(k, LT_ERR_RUNTIME, "K %lldx%lldx%lld and V %lldx%lldx%lld do not fit Q's head size %lld",
                             (long long)kk->dims[1], (long long)kk->dims[2], (long long)kk->dims[3],
                             (long long)v->dims[1], (long long)v->dims[2], (long long)v->dims[3], (long long)a->D);
    }
    if (kk->dims[0] != a->B || v->dims[0] != a->B)
        return lt_k_fail(k, LT_ERR_RUNTIME, "Q, K and V have batch sizes %lld, %lld, %lld", (long long)a->B,
                         (long long)kk->dims[0], (long long)v->dims[0]);
    if (a->Hkv <= 0 || a->Hq % a->Hkv)
        return lt_k_fail(k, LT_ERR_RUNTIME, "q_num_heads %lld is not a multiple of kv_num_heads %lld",
                         (long long)a->Hq, (long long)a->Hkv);
    a->group = a->Hq / a->Hkv;
    if (!pk != !pv)
        return lt_k_fail(k, LT_ERR_RUNTIME, "past_key and past_value must be given together");
    if (pk) {
        if (np)
            return lt_k_fail(k, LT_ERR_RUNTIME, "nonpad_kv_seqlen cannot be combined with past_key/past_value");
        if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != a->B || pk->dims[1] != a->Hkv || pk->dims[3] != a->D ||
            pv->dims[0] != a->B || pv->dims[1] != a->Hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != a->Dv)
            return lt_k_fail(k, LT_ERR_RUNTIME,
                             "past_key and past_value must be (batch %lld, kv_num_heads %lld, past, %lld | %lld)",
                             (long long)a->B, (long long)a->Hkv, (long long)a->D, (long long)a->Dv);
        a->P = pk->dims[2];
    }
    a->T = a->P + a->L;
    strides(a, a->qs, a->Hq, a->S, a->D);
    strides(a, a->ks, a->Hkv, a->L, a->D);
    strides(a, a->vs, a->Hkv, a->L, a->Dv);
    strides(a, a->ys, a->Hq, a->S, a->Dv);
    a->offset = lt_nu_scratch(k, a->B > 0 ? a->B : 1, sizeof *a->offset);
    if (!a->offset)
        return LT_ERR_RUNTIME;
    if (np) {
        if (np->dtype != LT_I64 || np->rank != 1 || np->dims[0] != a->B)
            return lt_k_fail(k, LT_ERR_RUNTIME, "nonpad_kv_seqlen must be int64 of shape (%lld)", (long long)a->B);
        a->nonpad = np->data;
    }
    for (int64_t b = 0; b < a->B; b++)
        a->offset[b] = a->nonpad ? a->nonpad[b] - a->S : a->P;
    double sc = lt_attr_find(k->node, "scale") ? lt_attr_float(k->node, "scale", 1) : 1 / sqrt((double)a->D);
    a->scale = sc;
    a->softcap = lt_attr_float(k->node, "softcap", 0);
    if (a->softcap < 0)
        a->softcap = 0;
    a->causal = lt_attr_int(k->node, "is_causal", 0) != 0;
    a->left = lt_attr_int(k->node, "left_window_size", -1);
    a->right = lt_attr_int(k->node, "right_window_size", -1);
    if (a->left < -1 || a->right < -1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "left_window_size and right_window_size must be -1 or >= 0");
    int64_t mode = lt_attr_int(k->node, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "qk_matmul_output_mode %lld (expected 0 to 3)", (long long)mode);
    a->mode = (int)mode;
    if (m) {
        lt_status s = mask_setup(k, a, m);
        if (s != LT_OK)
            return s;
    }
    a->q = lt_nu_as_f64(k, q);
    a->k = a->q ? lt_nu_as_f64(k, kk) : NULL;
    a->v = a->k ? lt_nu_as_f64(k, v) : NULL;
    if (pk && a->v) {
        a->pk = lt_nu_as_f64(k, pk);
        a->pv = a->pk ? lt_nu_as_f64(k, pv) : NULL;
        if (!a->pv)
            return LT_ERR_RUNTIME;
    }
    return a->v ? LT_OK : LT_ERR_RUNTIME;
}

bool lt_attn_scores(const lt_attn *a, int64_t b, int64_t h, int64_t i, const double *qi, double *z, double *c,
                    double *s, bool all)
{
    int64_t g = h / a->group;
    bool open = false;
    for (int64_t j = 0; j < a->T; j++) {
        double bias = lt_attn_bias(a, b, h, i, j);
        bool masked = bias == -INFINITY;
        open |= !masked;
        if (masked && !all) {
            z[j] = c[j] = 0;
            s[j] = -INFINITY;
            continue;
        }
        const double *kj = lt_attn_key(a, b, g, j);
        double dot = 0;
        for (int64_t d = 0; d < a->D; d++)
            dot += qi[d] * kj[d];
        z[j] = dot * a->scale;
        c[j] = a->softcap > 0 ? a->softcap * tanh(z[j] / a->softcap) : z[j];
        s[j] = c[j] + bias;
    }
    return open;
}

void lt_attn_softmax(double *s, int64_t n)
{
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        mx = s[j] > mx ? s[j] : mx;
    if (mx == -INFINITY) {
        memset(s, 0, (size_t)n * sizeof *s);
        return;
    }
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        s[j] = exp(s[j] - mx);
        sum += s[j];
    }
    for (int64_t j = 0; j < n; j++)
        s[j] /= sum;
}

/* ---- forward ---- */
/* present = concat(past, new) along the positions, [B, Hkv, T, hd], copied
 * element by element in the inputs' own type */
static lt_status present(lt_kctx *k, int o, const lt_attn *a, const lt_tensor *past, const lt_tensor *cur,
                         const int64_t *cs, int64_t hd)
{
    if (!lt_k_want(k, o))
        return LT_OK;
    if (past && past->dtype != cur->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "past and new keys/values differ in type (%s, %s)",
                         lt_dtype_name(past->dtype), lt_dtype_name(cur->dtype));
    int64_t dims[4] = {a->B, a->Hkv, a->T, hd};
    lt_tensor *t;
    lt_status st = lt_k_out(k, o, cur->dtype, 4, dims, &t);
    if (st != LT_OK)
        return st;
    size_t es = lt_dtype_size(cur->dtype), row = (size_t)hd * es;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t g = 0; g < a->Hkv; g++) {
            char *dst = (char *)t->data + (size_t)((b * a->Hkv + g) * a->T) * row;
            if (a->P) {
                memcpy(dst, (const char *)past->data + (size_t)((b * a->Hkv + g) * a->P) * row, (size_t)a->P * row);
                dst += (size_t)a->P * row;
            }
            for (int64_t j = 0; j < a->L; j++) {
                size_t src = (size_t)(b * cs[0] + g * cs[1] + j * cs[2]) * es;
                memcpy(dst + (size_t)j * row, (const char *)cur->data + src, row);
            }
        }
    return LT_OK;
}

static lt_status attention(lt_kctx *k)
{
    lt_attn a;
    lt_status st = lt_attn_setup(k, &a, 0);
    if (st != LT_OK)
        return st;
    const lt_tensor *q = lt_k_in(k, 0);
    int64_t ydims[4] = {a.B, a.Hq, a.S, a.Dv};
    if (a.in3d) {
        ydims[1] = a.S;
        ydims[2] = a.Hq * a.Dv;
    }
    lt_tensor *y, *qk = NULL;
    st = lt_k_out(k, 0, q->dtype, a.in3d ? 3 : 4, ydims, &y);
    if (st == LT_OK)
        st = present(k, 1, &a, opt_in(k, 4), lt_k_in(k, 1), a.ks, a.D);
    if (st == LT_OK)
        st = present(k, 2, &a, opt_in(k, 5), lt_k_in(k, 2), a.vs, a.Dv);
    int64_t qkdims[4] = {a.B, a.Hq, a.S, a.T};
    if (st == LT_OK && lt_k_want(k, 3))
        st = lt_k_out(k, 3, q->dtype, 4, qkdims, &qk);
    if (st != LT_OK)
        return st;
    int nt = omp_get_max_threads();
    double *yw = y->dtype == LT_F64 ? y->data : lt_nu_scratch(k, y->numel, sizeof *yw);
    double *qkw = !qk ? NULL : qk->dtype == LT_F64 ? qk->data : lt_nu_scratch(k, qk->numel, sizeof *qkw);
    double *rows = lt_nu_scratch(k, (int64_t)nt * 3 * (a.T ? a.T : 1), sizeof *rows);
    if (!yw || (qk && !qkw) || !rows)
        return LT_ERR_RUNTIME;
    int64_t blocks = a.B * a.Hq;
    double work = (double)blocks * (double)a.S * (double)a.T * (double)(a.D + a.Dv);
#pragma omp parallel for schedule(dynamic, 1) if (work > LT_NU_PAR && blocks > 1)
    for (int64_t bh = 0; bh < blocks; bh++) {
        int64_t b = bh / a.Hq, h = bh % a.Hq, g = h / a.group;
        double *z = rows + (int64_t)omp_get_thread_num() * 3 * a.T, *c = z + a.T, *s = c + a.T;
        for (int64_t i = 0; i < a.S; i++) {
            const double *qi = a.q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
            double *yi = yw + b * a.ys[0] + h * a.ys[1] + i * a.ys[2];
            double *qki = qkw ? qkw + ((b * a.Hq + h) * a.S + i) * a.T : NULL;
            bool open = lt_attn_scores(&a, b, h, i, qi, z, c, s, qki && a.mode < 3);
            if (qki && a.mode < 3)
                memcpy(qki, a.mode == 2 ? s : c, (size_t)a.T * sizeof *qki);
            memset(yi, 0, (size_t)a.Dv * sizeof *yi);
            if (!open) {
                if (qki && a.mode == 3)
                    memset(qki, 0, (size_t)a.T * sizeof *qki);
                continue;
            }
            lt_attn_softmax(s, a.T);
            if (qki && a.mode == 3)
                memcpy(qki, s, (size_t)a.T * sizeof *qki);
            for (int64_t j = 0; j < a.T; j++) {
                if (s[j] == 0)
                    continue;
                const double *vj = lt_attn_value(&a, b, g, j);
                for (int64_t d = 0; d < a.Dv; d++)
                    yi[d] += s[j] * vj[d];
            }
        }
    }
    lt_nu_store_f64(y, yw);
    if (qk)
        lt_nu_store_f64(qk, qkw);
    return LT_OK;
}

lt_status lt_cpu_attention_grad(lt_kctx *k);
void lt_cpu_register_rotary(lt_kernel_fn *tab);
void lt_cpu_register_tensor_scatter(lt_kernel_fn *tab);

/* the transformer family: Attention here, RotaryEmbedding in rotary.c, the
 * KV-cache update TensorScatter in tensor_scatter.c */
void lt_cpu_register_attention(lt_kernel_fn *tab)
{
    tab[LT_OP_ATTENTION] = attention;
    tab[LT_OP_ATTENTION_GRAD] = lt_cpu_attention_grad;
    lt_cpu_register_rotary(tab);
    lt_cpu_register_tensor_scatter(tab);
}
