/* CPU kernels: Softmax, LogSoftmax, Hardmax (both the coerce-to-2-D form
 * before opset 13 and the single-axis form after), LpNormalization and
 * MeanVarianceNormalization. Float32 and float64 run natively; float16 and
 * bfloat16 go through float32. */
#include "reduce_util.h"
#include <math.h>
#include <string.h>

#define RT float
#define RS f32
#define RT_EXP lt_red_expf
#include "reduce_smx_tmpl.h"
#undef RT
#undef RS
#undef RT_EXP

#define RT double
#define RS f64
#define RT_EXP exp
#include "reduce_smx_tmpl.h"
#undef RT
#undef RS
#undef RT_EXP

static lt_status need_float(lt_kctx *k, const lt_tensor *x)
{
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported (float types only)",
                         lt_dtype_name(x->dtype));
    return LT_OK;
}

void lt_red_softmax_any_f32(const float *x, float *y, int64_t outer, int64_t c, int64_t inner, int mode)
{
    bool rows = inner == 1 && outer > 0 && mode != LT_RED_HARDMAX, logsm = mode == LT_RED_LOGSOFTMAX;
    if (rows && (lt_softmax_rows_avx512(x, y, outer, c, logsm) || lt_softmax_rows_avx2(x, y, outer, c, logsm)))
        return;
    lt_red_softmax_f32(x, y, outer, c, inner, mode);
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */
static lt_status softmax_like(lt_kctx *k, int mode)
{
    const lt_tensor *x = lt_k_in(k, 0);
    lt_status s = need_float(k, x);
    if (s != LT_OK)
        return s;
    /* before opset 13 the input is coerced to 2-D [d0*..*d(a-1), da*..*dn]
     * around axis a (default 1, and a == rank is allowed); from 13 the op
     * works along the single axis a (default -1) */
    bool legacy = k->node->opset < 13;
    int64_t axis = lt_attr_int(k->node, "axis", legacy ? 1 : -1);
    int rank = x->rank, a;
    if (legacy && axis == rank)
        a = rank;
    else if (!lt_red_axis(axis, rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, rank);
    int64_t outer = lt_red_prod(x->dims, 0, a), c, inner;
    if (legacy) {
        c = lt_red_prod(x->dims, a, rank);
        inner = 1;
    } else {
        c = x->dims[a];
        inner = lt_red_prod(x->dims, a + 1, rank);
    }
    if (outer < 0 || c < 0 || inner < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, rank, x->dims, &y)) != LT_OK)
        return s;
    if (x->numel == 0)
        return LT_OK;
    if (x->dtype == LT_F64) {
        lt_red_softmax_f64(x->data, y->data, outer, c, inner, mode);
    } else if (x->dtype == LT_F32) {
        lt_red_softmax_any_f32(x->data, y->data, outer, c, inner, mode);
    } else {
        const float *xf = lt_red_load_f32(k, x);
        float *yf = lt_k_scratch(k, sizeof(float) * (size_t)x->numel);
        if (!xf || !yf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        lt_red_softmax_f32(xf, yf, outer, c, inner, mode);
        lt_red_store_f32(yf, y);
    }
    return LT_OK;
}

static lt_status k_softmax(lt_kctx *k) { return softmax_like(k, LT_RED_SOFTMAX); }
static lt_status k_log_softmax(lt_kctx *k) { return softmax_like(k, LT_RED_LOGSOFTMAX); }
static lt_status k_hardmax(lt_kctx *k) { return softmax_like(k, LT_RED_HARDMAX); }

/* ---- shared by LpNormalization and MVN ---- */
/* y = (x - mu) * scale along outer x r x inner, with mu and scale per
 * (outer, inner) position; mu may be NULL. */
static void scale_rows(const void *xv, void *yv, bool f64, int64_t outer, int64_t r, int64_t inner,
                       const double *mu, const double *scale)
{
    int64_t rows = outer * r;
#pragma omp parallel for schedule(static) if (rows * inner > LT_RED_PAR_MIN)
    for (int64_t j = 0; j < rows; j++) {
        int64_t o = j / r;
        const double *sc = scale + o * inner, *m = mu ? mu + o * inner : NULL;
        if (f64) {
            const double *x = (const double *)xv + j * inner;
            double *y = (double *)yv + j * inner;
            if (m) {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++)
                    y[i] = (x[i] - m[i]) * sc[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++)
                    y[i] = x[i] * sc[i];
            }
        } else {
            const float *x = (const float *)xv + j * inner;
            float *y = (float *)yv + j * inner;
            if (m) {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++)
                    y[i] = (float)(((double)x[i] - m[i]) * sc[i]);
            } else {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++)
                    y[i] = (float)((double)x[i] * sc[i]);
            }
        }
    }
}

/* Loads x in its compute type (double for float64, else float). */
static const void *load_compute(lt_kctx *k, const lt_tensor *x, bool *f64)
{
    *f64 = x->dtype == LT_F64;
    return *f64 ? (const void *)x->data : (const void *)lt_red_load_f32(k, x);
}

/* ---- LpNormalization ---- */
static lt_status k_lp_normalization(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    lt_status s = need_float(k, x);
    if (s != LT_OK)
        return s;
    int64_t axis = lt_attr_int(k->node, "axis", -1), p = lt_attr_int(k->node, "p", 2);
    int a;
    if (!lt_red_axis(axis, x->rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    if (p != 1 && p != 2)
        return lt_k_fail(k, LT_ERR_INVALID, "p must be 1 or 2, got %lld", (long long)p);
    int64_t outer = lt_red_prod(x->dims, 0, a), c = x->dims[a], inner = lt_red_prod(x->dims, a + 1, x->rank);
    if (outer < 0 || inner < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK)
        return s;
    if (x->numel == 0)
        return LT_OK;
    bool f64;
    const void *src = load_compute(k, x, &f64);
    size_t nout = (size_t)(outer * inner);
    double *norm = lt_k_scratch(k, sizeof(double) * nout);
    size_t np = lt_red_part_size(outer, c, inner);
    double *part = np ? lt_k_scratch(k, sizeof(double) * np) : NULL;
    void *dst = (x->dtype == LT_F32 || f64) ? y->data : lt_k_scratch(k, sizeof(float) * (size_t)x->numel);
    if (!src || !norm || (np && !part) || !dst)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    lt_red_run(src, f64, outer, c, inner, p == 1 ? LT_RED_PRE_ABS : LT_RED_PRE_SQ, LT_RED_ADD, NULL, norm, part);
    /* a zero vector stays zero rather than turning into NaN */
    for (size_t j = 0; j < nout; j++) {
        double n = p == 1 ? norm[j] : sqrt(norm[j]);
        norm[j] = n > 0 ? 1.0 / n : 0.0;
    }
    scale_rows(src, dst, f64, outer, c, inner, NULL, norm);
    if (dst != y->data)
        lt_red_store_f32(dst, y);
    return LT_OK;
}

/* ---- MeanVarianceNormalization ---- */
static lt_status k_mvn(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    lt_status s = need_float(k, x);
    if (s != LT_OK)
        return s;
    static const int64_t dflt[3] = {0, 2, 3};
    int na;
    const int64_t *axes = lt_attr_ints(k->node, "axes", &na);
    if (!axes) {
        axes = dflt;
        na = 3;
    }
    bool mask[LT_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int a;
        if (!lt_red_axis(axes[i], x->rank, &a))
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axes[i],
                             x->rank);
        if (mask[a])
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld appears twice", (long long)axes[i]);
        mask[a] = true;
    }
    lt_red_plan p;
    if (!lt_red_plan_make(x->rank, x->dims, mask, &p))
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK)
        return s;
    if (x->numel == 0)
        return LT_OK;
    bool f64;
    const void *src = load_compute(k, x, &f64);
    size_t es = f64 ? sizeof(double) : sizeof(float), n = (size_t)x->numel;
    size_t nout = (size_t)(p.outer * p.inner), np = lt_red_part_size(p.outer, p.r, p.inner);
    double *mean = lt_k_scratch(k, sizeof(double) * nout), *sc = lt_k_scratch(k, sizeof(double) * nout);
    double *part = np ? lt_k_scratch(k, sizeof(double) * np) : NULL;
    if (!src || !mean || !sc || (np && !part))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    if (p.permute) {
        void *t = lt_k_scratch(k, es * n);
        if (!t)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        lt_red_permute(src, t, es, p.prank, p.pdims, p.perm);
        src = t;
    }
    /* two passes (mean, then mean squared deviation) rather than E[x^2] -
     * E[x]^2, which cancels badly when the mean is large */
    lt_red_run(src, f64, p.outer, p.r, p.inner, LT_RED_PRE_ID, LT_RED_ADD, NULL, mean, part);
    for (size_t j = 0; j < nout; j++)
        mean[j] /= (double)p.r;
    lt_red_run(src, f64, p.outer, p.r, p.inner, LT_RED_PRE_SQDEV, LT_RED_ADD, mean, sc, part);
    for (size_t j = 0; j < nout; j++)
        sc[j] = 1.0 / (sqrt(sc[j] / (double)p.r) + 1e-9);
    bool direct = !p.permute && (f64 || x->dtype == LT_F32);
    void *dst = direct ? y->data : lt_k_scratch(k, es * n);
    if (!dst)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    scale_rows(src, dst, f64, p.outer, p.r, p.inner, mean, sc);
    if (p.permute) {
        void *back = (f64 || x->dtype == LT_F32) ? y->data : lt_k_scratch(k, es * n);
        if (!back)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        lt_red_unpermute(dst, back, es, p.prank, p.pdims, p.perm);
        dst = back;
    }
    if (dst != y->data)
        lt_red_store_f32(dst, y);
    return LT_OK;
}

void lt_cpu_register_reduce_softmax(lt_kernel_fn *tab)
{
    tab[LT_OP_SOFTMAX] = k_softmax;
    tab[LT_OP_LOG_SOFTMAX] = k_log_softmax;
    tab[LT_OP_HARDMAX] = k_hardmax;
    tab[LT_OP_LP_NORMALIZATION] = k_lp_normalization;
    tab[LT_OP_MEAN_VARIANCE_NORMALIZATION] = k_mvn;
}
