/* CPU kernels: LayerNormalization, RMSNormalization and GroupNormalization. */
#include "norm_util.h"
#include "norm_kernels.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- LayerNormalization ---- */

/* How a Scale or B tensor lines up with the rows of X flattened to
 * [rows, d] at axis: it is expanded to X's trailing dims from *first on,
 * and repeats every *prows rows (1 when it only covers the normalized
 * dims). */
static void ln_param_span(const lt_tensor *p, const lt_tensor *x, int axis, int *first, int64_t *prows)
{
    int pr = p->rank;
    while (pr > 0 && p->dims[p->rank - pr] == 1 && pr > x->rank - axis)
        pr--; /* leading 1s broadcast over the rows anyway */
    if (pr > x->rank)
        pr = x->rank;
    *first = pr > x->rank - axis ? x->rank - pr : axis;
    *prows = lt_shape_numel(axis - *first, x->dims + *first);
}

/* Mean and InvStdDev take the type the model declares, else stash_type. */
static lt_dtype ln_stat_dtype(const lt_kctx *k, int i, lt_dtype xdt)
{
    const lt_ival *v = k->node->out[i];
    if (v && v->type.dtype != LT_UNDEFINED)
        return v->type.dtype;
    lt_dtype st = (lt_dtype)lt_attr_int(k->node, "stash_type", LT_F32);
    return lt_dtype_is_float(st) ? st : xdt;
}

static lt_status ln_stat_out(lt_kctx *k, int i, const lt_tensor *x, int axis, const double *vals)
{
    if (!lt_k_want(k, i))
        return LT_OK;
    int64_t dims[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        dims[d] = d < axis ? x->dims[d] : 1;
    lt_tensor *t;
    lt_status s = lt_k_out(k, i, ln_stat_dtype(k, i, x->dtype), x->rank, dims, &t);
    if (s == LT_OK)
        lt_nu_store_f64(t, vals);
    return s;
}

/* float32 rows with one Scale row and one B row (or none), the layer norm
 * of a transformer: each row's mean and variance (in double, two passes, as
 * lt_nu_row_stats does), its InvStdDev and its normalized values in one
 * visit while the row sits in L1. The per-thread row loop is written
 * twice: in C for baseline x86-64 (compiled again for AVX2 and FMA), and
 * with AVX-512 intrinsics (sixteen
 * float lanes, the statistics in eight-lane double halves); the parallel
 * region stays outside both. */
static inline __attribute__((always_inline)) void ln_rows_body(const float *x, float *y, int64_t r0, int64_t r1,
                                                               int64_t d, const float *sc, const float *b,
                                                               double eps, double *mean, double *inv)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *p = x + r * d;
        float *yp = y + r * d;
        double s = 0, q = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < d; j++)
            s += p[j];
        double m = s / (double)d;
#pragma omp simd reduction(+ : q)
        for (int64_t j = 0; j < d; j++) {
            double t = p[j] - m;
            q += t * t;
        }
        double iv = 1.0 / sqrt(q / (double)d + eps);
        mean[r] = m;
        inv[r] = iv;
        const float mf = (float)m, ivf = (float)iv;
        if (b) {
#pragma omp simd
            for (int64_t j = 0; j < d; j++)
                yp[j] = (p[j] - mf) * ivf * sc[j] + b[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < d; j++)
                yp[j] = (p[j] - mf) * ivf * sc[j];
        }
    }
}

static void ln_rows_base(const float *x, float *y, int64_t r0, int64_t r1, int64_t d, const float *sc,
                         const float *b, double eps, double *mean, double *inv)
{
    ln_rows_body(x, y, r0, r1, d, sc, b, eps, mean, inv);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* the C loop again for AVX2 and FMA (CPUs without AVX-512) */
__attribute__((target("avx2,fma"))) static void ln_rows_avx2(const float *x, float *y, int64_t r0, int64_t r1,
                                                             int64_t d, const float *sc, const float *b, double eps,
                                                             double *mean, double *inv)
{
    ln_rows_body(x, y, r0, r1, d, sc, b, eps, mean, inv);
}

static inline __mmask16 ln_lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* the two 8-lane double halves of 16 floats */
AVX512 static inline __m512d ln_lo(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
AVX512 static inline __m512d ln_hi(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* 16 floats at a time (the last masked): the sum and the squared
 * deviations in 8-lane double accumulators, the output in float lanes */
AVX512 static void ln_rows_avx512(const float *x, float *y, int64_t r0, int64_t r1, int64_t d, const float *sc,
                                  const float *b, double eps, double *mean, double *inv)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *p = x + r * d;
        float *yp = y + r * d;
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
        for (int64_t j = 0; j < d; j += 16) {
            __m512 v = _mm512_maskz_loadu_ps(ln_lanes(d - j), p + j);
            s0 = _mm512_add_pd(s0, ln_lo(v));
            s1 = _mm512_add_pd(s1, ln_hi(v));
        }
        double m = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / (double)d;
        __m512d vm = _mm512_set1_pd(m), q0 = _mm512_setzero_pd(), q1 = _mm512_setzero_pd();
        for (int64_t j = 0; j < d; j += 16) {
            __mmask16 mk = ln_lanes(d - j);
            __m512 v = _mm512_maskz_loadu_ps(mk, p + j);
            __m512d t0 = _mm512_maskz_sub_pd((__mmask8)mk, ln_lo(v), vm);
            __m512d t1 = _mm512_maskz_sub_pd((__mmask8)(mk >> 8), ln_hi(v), vm);
            q0 = _mm512_fmadd_pd(t0, t0, q0);
            q1 = _mm512_fmadd_pd(t1, t1, q1);
        }
        double iv = 1.0 / sqrt(_mm512_reduce_add_pd(_mm512_add_pd(q0, q1)) / (double)d + eps);
        mean[r] = m;
        inv[r] = iv;
        __m512 mf = _mm512_set1_ps((float)m), ivf = _mm512_set1_ps((float)iv);
        for (int64_t j = 0; j < d; j += 16) {
            __mmask16 mk = ln_lanes(d - j);
            __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, p + j), mf), ivf),
                                     _mm512_maskz_loadu_ps(mk, sc + j));
            if (b)
                t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(mk, b + j));
            _mm512_mask_storeu_ps(yp + j, mk, t);
        }
    }
}
#endif

static void ln_rows_f32(const float *x, float *y, int64_t rows, int64_t d, const float *sc, const float *b,
                        double eps, double *mean, double *inv)
{
#pragma omp parallel if (rows * d > LT_NU_PAR && rows > 1)
    {
        int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
#if defined(__x86_64__) && defined(__GNUC__)
        if (lt_cpu_avx512())
            ln_rows_avx512(x, y, r0, r1, d, sc, b, eps, mean, inv);
        else if (lt_cpu_avx2())
            ln_rows_avx2(x, y, r0, r1, d, sc, b, eps, mean, inv);
        else
#endif
            ln_rows_base(x, y, r0, r1, d, sc, b, eps, mean, inv);
    }
}

lt_status lt_cpu_layer_norm(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *bias = lt_k_in(k, 2);
    if (!x || !scale)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X and Scale");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a float tensor, got %s", lt_dtype_name(x->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", -1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d",
                         (long long)lt_attr_int(k->node, "axis", -1), x->rank);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    int ax = (int)axis;
    int64_t rows = lt_shape_numel(ax, x->dims), d = lt_shape_numel(x->rank - ax, x->dims + ax);
    bool f32 = x->dtype == LT_F32;

    int sfirst, bfirst = 0;
    int64_t srows, brows = 1;
    ln_param_span(scale, x, ax, &sfirst, &srows);
    if (bias)
        ln_param_span(bias, x, ax, &bfirst, &brows);
    const void *sw, *bw = NULL;
    if (f32) {
        sw = lt_nu_expand_f32(k, scale, x->rank - sfirst, x->dims + sfirst, "Scale");
        if (sw && bias)
            bw = lt_nu_expand_f32(k, bias, x->rank - bfirst, x->dims + bfirst, "B");
    } else {
        sw = lt_nu_expand_f64(k, scale, x->rank - sfirst, x->dims + sfirst, "Scale");
        if (sw && bias)
            bw = lt_nu_expand_f64(k, bias, x->rank - bfirst, x->dims + bfirst, "B");
    }
    if (!sw || (bias && !bw))
        return LT_ERR_RUNTIME;

    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    const void *xw = lt_nu_work_in(k, x, f32);
    void *yw = xw ? lt_nu_work_out(k, y, f32) : NULL;
    double *mean = yw ? lt_nu_scratch(k, 2 * rows, sizeof *mean) : NULL;
    if (!mean)
        return LT_ERR_RUNTIME;
    double *inv = mean + rows;
    if (f32 && srows == 1 && brows == 1 && d > 0) {
        ln_rows_f32(xw, yw, rows, d, sw, bw, eps, mean, inv);
        lt_nu_work_store(y, yw, f32);
        if ((st = ln_stat_out(k, 1, x, ax, mean)) != LT_OK)
            return st;
        return ln_stat_out(k, 2, x, ax, inv);
    }
    if (f32)
        lt_nu_row_stats_f32(xw, rows, d, mean, inv);
    else
        lt_nu_row_stats_f64(xw, rows, d, mean, inv);
    for (int64_t r = 0; r < rows; r++)
        inv[r] = 1.0 / sqrt(inv[r] + eps);
    if (f32)
        lt_nu_row_norm_f32(xw, yw, rows, d, mean, inv, sw, srows, bw, brows);
    else
        lt_nu_row_norm_f64(xw, yw, rows, d, mean, inv, sw, srows, bw, brows);
    lt_nu_work_store(y, yw, f32);
    if ((st = ln_stat_out(k, 1, x, ax, mean)) != LT_OK)
        return st;
    return ln_stat_out(k, 2, x, ax, inv);
}

/* ---- RMSNormalization (opset 23) ----
 * LayerNormalization's row pass with the mean held at 0 and no bias:
 * y = x / sqrt(mean(x^2) + epsilon) * scale over the dims from axis on. */
lt_status lt_cpu_rms_norm(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1);
    if (!x || !scale)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X and scale");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a float tensor, got %s", lt_dtype_name(x->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    int64_t rows = lt_shape_numel(ax, x->dims), d = lt_shape_numel(x->rank - ax, x->dims + ax);
    bool f32 = x->dtype == LT_F32;
    int sfirst;
    int64_t srows;
    ln_param_span(scale, x, ax, &sfirst, &srows);
    const void *sw = f32 ? (const void *)lt_nu_expand_f32(k, scale, x->rank - sfirst, x->dims + sfirst, "scale")
                         : (const void *)lt_nu_expand_f64(k, scale, x->rank - sfirst, x->dims + sfirst, "scale");
    if (!sw)
        return LT_ERR_RUNTIME;
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    const void *xw = lt_nu_work_in(k, x, f32);
    void *yw = xw ? lt_nu_work_out(k, y, f32) : NULL;
    double *zero = yw ? lt_nu_scratch(k, 2 * rows, sizeof *zero) : NULL;
    if (!zero)
        return LT_ERR_RUNTIME;
    double *inv = zero + rows;
#pragma omp parallel for if (rows * d > 32768)
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        if (f32)
            for (int64_t j = 0; j < d; j++) {
                double v = ((const float *)xw)[r * d + j];
                ss += v * v;
            }
        else
            for (int64_t j = 0; j < d; j++) {
                double v = ((const double *)xw)[r * d + j];
                ss += v * v;
            }
        zero[r] = 0;
        inv[r] = 1.0 / sqrt(ss / (double)(d ? d : 1) + eps);
    }
    if (f32)
        lt_nu_row_norm_f32(xw, yw, rows, d, zero, inv, sw, srows, NULL, 1);
    else
        lt_nu_row_norm_f64(xw, yw, rows, d, zero, inv, sw, srows, NULL, 1);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}

/* ---- GroupNormalization ---- */
lt_status lt_cpu_group_norm(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *bias = lt_k_in(k, 2);
    if (!x || !scale || !bias)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X, scale and bias");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a float tensor, got %s", lt_dtype_name(x->dtype));
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
    int64_t g = lt_attr_int(k->node, "num_groups", -1);
    int64_t n = x->dims[0], c = x->dims[1], s = lt_shape_numel(x->rank - 2, x->dims + 2);
    if (g <= 0 || c % g != 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "num_groups %lld must be positive and divide the %lld channels",
                         (long long)g, (long long)c);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    /* opset 18 scales per group, opset 21 per channel; where the sizes leave
     * no doubt, accept either */
    bool per_group = k->node->opset < 21 ? scale->numel == g : scale->numel != c && scale->numel == g;
    int64_t np = per_group ? g : c;
    const double *sc = lt_nu_vec(k, scale, np, "scale");
    const double *bi = sc ? lt_nu_vec(k, bias, np, "bias") : NULL;
    double *mean = bi ? lt_nu_scratch(k, 2 * n * g + 2 * n * c, sizeof *mean) : NULL;
    bool f32 = x->dtype == LT_F32;
    const void *xw = mean ? lt_nu_work_in(k, x, f32) : NULL;
    if (!xw)
        return LT_ERR_RUNTIME;
    double *var = mean + n * g, *a = var + n * g, *off = a + n * c;
    int64_t cg = c / g;
    if (f32)
        lt_nu_row_stats_f32(xw, n * g, cg * s, mean, var);
    else
        lt_nu_row_stats_f64(xw, n * g, cg * s, mean, var);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++) {
            int64_t r = i * g + j / cg, p = per_group ? j / cg : j;
            a[i * c + j] = sc[p] / sqrt(var[r] + eps);
            off[i * c + j] = bi[p] - mean[r] * a[i * c + j];
        }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    void *yw = lt_nu_work_out(k, y, f32);
    if (!yw)
        return LT_ERR_RUNTIME;
    if (f32)
        lt_nu_chan_affine_f32(xw, yw, n, c, s, a, off, 1);
    else
        lt_nu_chan_affine_f64(xw, yw, n, c, s, a, off, 1);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}
