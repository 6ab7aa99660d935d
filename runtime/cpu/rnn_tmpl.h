/* Template: activations, the input projection and the plain RNN in one
 * compute type; included by rnn_f32.c and rnn_f64.c (then followed by
 * rnn_gates_tmpl.h) after defining T (float or double), CT (its lt_dtype),
 * SFX(name) (a suffixed name), TANH, EXP, LOG1P, FABS for T and the array
 * forms VTANH(x, y, n) and VSIGMOID(x, y, n). With T =
 * float the code is the original float kernels operation for operation,
 * so float results do not depend on the double path existing. */

#include "rnn_act_tmpl.h"

/* scratch for n values of T (at least one) */
static T *SFX(scratch)(lt_kctx *k, int64_t n)
{
    return lt_k_scratch(k, sizeof(T) * (size_t)(n > 0 ? n : 1));
}

/* Input projection of every step for direction d: xp[row] = X[row] W_d^T +
 * Wb_d, plus Rb_d for the gates g with rb_mask[g] (the others add their
 * recurrent bias inside the step). */
static lt_status SFX(project)(lt_kctx *k, const lt_rnn *r, int d, const bool *rb_mask, T **xp)
{
    int64_t rows = r->S * r->B, G = r->gates * r->H, H = r->H;
    if (!lt_linalg_blas_ok(rows, G, r->I) || !lt_linalg_blas_ok(r->B, G, H))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "sizes exceed BLAS's int range");
    T *o = SFX(scratch)(k, rows * G);
    if (!o)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    const T *X = r->X, *W = r->W;
    lt_linalg_gemm(CT, false, true, rows, G, r->I, 1.0, X, r->I, W + d * G * r->I, r->I, 0.0, o, G);
    if (r->Bias) {
        const T *wb = (const T *)r->Bias + d * 2 * G, *rb = wb + G;
        T *bias = SFX(scratch)(k, G);
        if (!bias)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        for (int64_t j = 0; j < G; j++)
            bias[j] = wb[j] + (rb_mask[j / H] ? rb[j] : 0);
#pragma omp parallel for if (rows * G > 32768)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < G; j++)
                o[i * G + j] += bias[j];
    }
    *xp = o;
    return LT_OK;
}

/* dst[b] = the initial state of direction d (src, [D,B,H] or [B,D,H]), or zeros */
static void SFX(load_state)(const lt_rnn *r, int d, const void *src, T *dst)
{
    const T *s = src;
    for (int64_t b = 0; b < r->B; b++)
        for (int64_t j = 0; j < r->H; j++)
            dst[b * r->H + j] = s ? s[lt_rnn_hoff(r, d, b) + j] : 0;
}

/* the final state of direction d into Y_h / Y_c, when wanted */
static void SFX(store_state)(const lt_rnn *r, int d, const T *src, void *dst)
{
    if (!dst)
        return;
    for (int64_t b = 0; b < r->B; b++)
        memcpy((T *)dst + lt_rnn_hoff(r, d, b), src + b * r->H, sizeof(T) * (size_t)r->H);
}

/* h' = f(x W^T + h R^T + Wb + Rb) */
lt_status SFX(lt_rnn_plain)(lt_kctx *k, const lt_rnn *r)
{
    int64_t H = r->H, B = r->B;
    T *h = SFX(scratch)(k, B * H), *hp = SFX(scratch)(k, B * H);
    if (!h || !hp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    const bool mask[1] = {true};
    for (int d = 0; d < r->D; d++) {
        T *xp;
        lt_status s = SFX(project)(k, r, d, mask, &xp);
        if (s != LT_OK)
            return s;
        SFX(load_state)(r, d, r->h0, h);
        const T *Rd = (const T *)r->R + d * H * H;
        const rnn_act *f = &r->act[d][0];
        for (int64_t st = 0; st < r->maxlen; st++) {
            lt_linalg_gemm(CT, false, true, B, H, H, 1.0, h, H, Rd, H, 0.0, hp, H);
#pragma omp parallel for if (B * H > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(r, d, st, b);
                if (t < 0)
                    continue;
                T *row = hp + b * H;
                const T *x = xp + lt_rnn_xrow(r, t, b) * H;
                for (int64_t j = 0; j < H; j++)
                    row[j] += x[j];
                SFX(act)(f, r->clip_on, (T)r->clip, row, H);
                memcpy(h + b * H, row, sizeof(T) * (size_t)H);
                if (r->Y)
                    memcpy((T *)r->Y + lt_rnn_yoff(r, t, d, b), row, sizeof(T) * (size_t)H);
            }
        }
        SFX(store_state)(r, d, h, r->Yh);
    }
    return LT_OK;
}
