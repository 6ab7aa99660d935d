/* CPU kernels: LayerNormalizationGrad and LRNGrad. */
#include "grad_nn_util.h"
#include "cpu_features.h"
#include "norm_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- LayerNormalizationGrad ---- */

/* The first dim of x that a Scale or B tensor p spans, as the forward
 * lines them up: p covers x's trailing dims, at least those from axis on
 * (leading 1s of p broadcast over the rows and do not count). */
static int ln_first(const lt_tensor *p, const lt_tensor *x, int axis)
{
    int pr = p->rank;
    while (pr > 0 && p->dims[p->rank - pr] == 1 && pr > x->rank - axis)
        pr--;
    if (pr > x->rank)
        pr = x->rank;
    return pr > x->rank - axis ? x->rank - pr : axis;
}

/* dst (p's shape, zeroed here) = src (the trailing shape dims[0..rank))
 * summed over the axes p broadcasts along */
static void sum_to(const lt_tensor *p, int rank, const int64_t *dims, const double *src, double *dst)
{
    int64_t stride[LT_MAX_RANK], st = 1, n = lt_shape_numel(rank, dims), pos[LT_MAX_RANK] = {0}, off = 0;
    for (int i = rank - 1; i >= 0; i--) {
        int pi = p->rank - rank + i; /* p's dim aligned with dims[i] */
        int64_t pd = pi >= 0 ? p->dims[pi] : 1;
        stride[i] = pd == 1 ? 0 : st;
        st *= pd;
    }
    memset(dst, 0, sizeof *dst * (size_t)p->numel);
    for (int64_t e = 0; e < n; e++) {
        dst[off] += src[e];
        for (int i = rank - 1; i >= 0; i--) {
            off += stride[i];
            if (++pos[i] < dims[i])
                break;
            off -= stride[i] * dims[i];
            pos[i] = 0;
        }
    }
}

/* Rows of x [rows, d] with scale g[(r % srows) * d + j]: dx, and the sums
 * of dy * xhat and dy into partials [np][srows * d] each, one per piece of
 * the rows (par.h: the pieces follow from the sizes, not the threads). */
#define LN_CORE(T, S)                                                                                         \
    static void ln_rows_##S(const T *x, const T *dy, T *dx, int64_t rows, int64_t d, const double *mean,       \
                            const double *inv, const double *g, int64_t srows, double *pds, double *pdb,     \
                            int np)                                                                           \
    {                                                                                                         \
        int64_t span = srows * d;                                                                             \
        _Pragma("omp parallel for schedule(dynamic, 1) num_threads(lt_par_threads(np, true))")               \
        for (int p = 0; p < np; p++)                                                                          \
        for (int64_t r = rows * p / np; r < rows * (p + 1) / np; r++) {                                       \
            const T *xp = x + r * d, *gp = dy + r * d;                                                        \
            const double *gr = g + r % srows * d;                                                             \
            double m = mean[r], iv = inv[r], s1 = 0, s2 = 0;                                                  \
            double *ds = pds + (size_t)p * (size_t)span + r % srows * d;                                      \
            double *db = pdb + (size_t)p * (size_t)span + r % srows * d;                                      \
            for (int64_t j = 0; j < d; j++) {                                                                 \
                double h = gr[j] * gp[j], xc = (double)xp[j] - m;                                             \
                s1 += h;                                                                                      \
                s2 += h * xc;                                                                                 \
                ds[j] += gp[j] * xc * iv;                                                                     \
                db[j] += gp[j];                                                                               \
            }                                                                                                 \
            if (!dx)                                                                                          \
                continue;                                                                                     \
            T *op = dx + r * d;                                                                               \
            double a = s1 / (double)d, b = iv * iv * s2 / (double)d;                                          \
            for (int64_t j = 0; j < d; j++)                                                                   \
                op[j] = (T)(iv * (gr[j] * gp[j] - a - ((double)xp[j] - m) * b));                              \
        }                                                                                                     \
    }
LN_CORE(float, f32)
LN_CORE(double, f64)

/* The float32 rows whose scale spans exactly the normalized dims (srows 1,
 * the layer norm of a transformer): each row in one sweep of memory, its
 * mean and variance, dx and its parts of dscale and dbias computed while
 * it sits in L1, in float lanes; the parameter sums are kept in double per
 * thread (static row blocks, added in thread order: deterministic for a
 * thread count). The per-thread row loop is written in C for baseline
 * x86-64 and with AVX-512 intrinsics; the parallel region stays outside
 * both (GCC outlines a region with the baseline's vectors even inside a
 * function compiled for AVX-512). */
static inline __attribute__((always_inline)) void ln_fast_rows(const float *x, const float *dy, float *dx,
                                                               int64_t r0, int64_t r1, int64_t d, const float *g,
                                                               float eps, double *ds, double *db)
{
    float inv_d = 1.0f / (float)d;
    for (int64_t r = r0; r < r1; r++) {
        const float *xp = x + r * d, *gp = dy + r * d;
        float sum = 0, sq = 0, s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < d; j++)
            sum += xp[j];
        float m = sum * inv_d;
#pragma omp simd reduction(+ : sq)
        for (int64_t j = 0; j < d; j++)
            sq += (xp[j] - m) * (xp[j] - m);
        float iv = 1.0f / sqrtf(sq * inv_d + eps);
#pragma omp simd reduction(+ : s1, s2)
        for (int64_t j = 0; j < d; j++) {
            float xh = (xp[j] - m) * iv, h = g[j] * gp[j];
            s1 += h;
            s2 += h * xh;
            ds[j] += (double)(gp[j] * xh);
            db[j] += (double)gp[j];
        }
        if (!dx)
            continue;
        float a = s1 * inv_d, b = s2 * inv_d;
        float *op = dx + r * d;
#pragma omp simd
        for (int64_t j = 0; j < d; j++)
            op[j] = iv * (g[j] * gp[j] - a - (xp[j] - m) * iv * b);
    }
}

static void ln_fast_base(const float *x, const float *dy, float *dx, int64_t r0, int64_t r1, int64_t d,
                         const float *g, float eps, double *ds, double *db)
{
    ln_fast_rows(x, dy, dx, r0, r1, d, g, eps, ds, db);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* the C row loop again for AVX2 and FMA (CPUs without AVX-512) */
__attribute__((target("avx2,fma"))) static void ln_fast_avx2(const float *x, const float *dy, float *dx, int64_t r0,
                                                             int64_t r1, int64_t d, const float *g, float eps,
                                                             double *ds, double *db)
{
    ln_fast_rows(x, dy, dx, r0, r1, d, g, eps, ds, db);
}

static inline __mmask16 ln_lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* the row loop above in 16 float lanes (the last piece masked), the same
 * operations per element; ds and db take each piece as two 8-lane double
 * halves */
AVX512 static void ln_fast_avx512(const float *x, const float *dy, float *dx, int64_t r0, int64_t r1, int64_t d,
                                  const float *g, float eps, double *ds, double *db)
{
    float inv_d = 1.0f / (float)d;
    for (int64_t r = r0; r < r1; r++) {
        const float *xp = x + r * d, *gp = dy + r * d;
        __m512 vs = _mm512_setzero_ps();
        for (int64_t j = 0; j < d; j += 16)
            vs = _mm512_add_ps(vs, _mm512_maskz_loadu_ps(ln_lanes(d - j), xp + j));
        __m512 vm = _mm512_set1_ps(_mm512_reduce_add_ps(vs) * inv_d), vq = _mm512_setzero_ps();
        for (int64_t j = 0; j < d; j += 16) {
            __mmask16 mk = ln_lanes(d - j);
            __m512 t = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, xp + j), vm);
            vq = _mm512_add_ps(vq, _mm512_mul_ps(t, t));
        }
        __m512 viv = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(vq) * inv_d + eps));
        __m512 v1 = _mm512_setzero_ps(), v2 = _mm512_setzero_ps();
        for (int64_t j = 0; j < d; j += 16) {
            __mmask16 mk = ln_lanes(d - j);
            __m512 xv = _mm512_maskz_loadu_ps(mk, xp + j), gv = _mm512_maskz_loadu_ps(mk, gp + j);
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(xv, vm), viv), h = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, g + j), gv);
            v1 = _mm512_add_ps(v1, h);
            v2 = _mm512_add_ps(v2, _mm512_mul_ps(h, xh));
            __m512 sx = _mm512_mul_ps(gv, xh);
            __mmask8 lo = (__mmask8)mk, hi = (__mmask8)(mk >> 8);
            __m512d sl = _mm512_cvtps_pd(_mm512_castps512_ps256(sx));
            __m512d sh = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sx), 1)));
            __m512d gl = _mm512_cvtps_pd(_mm512_castps512_ps256(gv));
            __m512d gh = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(gv), 1)));
            _mm512_mask_storeu_pd(ds + j, lo, _mm512_add_pd(_mm512_maskz_loadu_pd(lo, ds + j), sl));
            _mm512_mask_storeu_pd(ds + j + 8, hi, _mm512_add_pd(_mm512_maskz_loadu_pd(hi, ds + j + 8), sh));
            _mm512_mask_storeu_pd(db + j, lo, _mm512_add_pd(_mm512_maskz_loadu_pd(lo, db + j), gl));
            _mm512_mask_storeu_pd(db + j + 8, hi, _mm512_add_pd(_mm512_maskz_loadu_pd(hi, db + j + 8), gh));
        }
        if (!dx)
            continue;
        __m512 va = _mm512_set1_ps(_mm512_reduce_add_ps(v1) * inv_d), vb = _mm512_set1_ps(_mm512_reduce_add_ps(v2) * inv_d);
        float *op = dx + r * d;
        for (int64_t j = 0; j < d; j += 16) {
            __mmask16 mk = ln_lanes(d - j);
            __m512 xv = _mm512_maskz_loadu_ps(mk, xp + j), gv = _mm512_maskz_loadu_ps(mk, gp + j);
            __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(xv, vm), viv), vb);
            __m512 u = _mm512_sub_ps(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, g + j), gv), va), t);
            _mm512_mask_storeu_ps(op + j, mk, _mm512_mul_ps(viv, u));
        }
    }
}
#endif

static void ln_fast(const float *x, const float *dy, float *dx, int64_t rows, int64_t d, const float *g, float eps,
                    double *pds, double *pdb, int np)
{
#pragma omp parallel for schedule(dynamic, 1) num_threads(lt_par_threads(np, true))
    for (int p = 0; p < np; p++) {
        int64_t r0 = rows * p / np, r1 = rows * (p + 1) / np;
        double *ds = pds + (size_t)p * (size_t)d, *db = pdb + (size_t)p * (size_t)d;
#if defined(__x86_64__) && defined(__GNUC__)
        if (lt_cpu_avx512())
            ln_fast_avx512(x, dy, dx, r0, r1, d, g, eps, ds, db);
        else if (lt_cpu_avx2())
            ln_fast_avx2(x, dy, dx, r0, r1, d, g, eps, ds, db);
        else
#endif
            ln_fast_base(x, dy, dx, r0, r1, d, g, eps, ds, db);
    }
}

/* (dy, x, scale[, B]) -> dx, dscale (scale's shape), dbias (B's shape when
 * given, else scale's) */
static lt_status k_layer_norm_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_gnn_need(k, 0, "dy"), *x = dy ? lt_gnn_need(k, 1, "x") : NULL;
    const lt_tensor *scale = x ? lt_gnn_need(k, 2, "scale") : NULL, *bias = lt_k_in(k, 3);
    if (!scale)
        return LT_ERR_INVALID;
    lt_status st;
    if ((st = lt_gnn_float(k, dy, "dy")) != LT_OK || (st = lt_gnn_float(k, x, "x")) != LT_OK ||
        (st = lt_gnn_same_shape(k, dy, "dy", x->rank, x->dims)) != LT_OK)
        return st;
    if (dy->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy of type %s for x of type %s", lt_dtype_name(dy->dtype),
                         lt_dtype_name(x->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    int64_t rows = lt_shape_numel(ax, x->dims), d = lt_shape_numel(x->rank - ax, x->dims + ax);
    /* the partial sums span x's dims from `first` on: both parameters' spans */
    int first = ln_first(scale, x, ax);
    if (bias && ln_first(bias, x, ax) < first)
        first = ln_first(bias, x, ax);
    int erank = x->rank - first;
    int64_t srows = lt_shape_numel(ax - first, x->dims + first), span = srows * d;
    /* the rows in pieces with a partial sum each */
    int np = rows * d > LT_NU_PAR && rows > 1 ? lt_par_pieces(rows) : 1;
    bool f32 = x->dtype == LT_F32;
    const double *g = lt_nu_expand_f64(k, scale, erank, x->dims + first, "scale");
    const void *xw = g ? lt_nu_work_in(k, x, f32) : NULL, *dyw = xw ? lt_nu_work_in(k, dy, f32) : NULL;
    double *mean = dyw ? lt_nu_scratch(k, 2 * rows, sizeof(double)) : NULL;
    double *pds = mean ? lt_nu_scratch(k, 2 * (int64_t)np * span, sizeof(double)) : NULL;
    double *ds = pds ? lt_nu_scratch(k, scale->numel + (bias ? bias->numel : scale->numel), sizeof(double)) : NULL;
    if (!ds)
        return LT_ERR_RUNTIME;
    if (bias && !lt_nu_expand_f64(k, bias, erank, x->dims + first, "B"))
        return LT_ERR_RUNTIME; /* B must broadcast as the forward requires */
    double *inv = mean + rows, *pdb = pds + (int64_t)np * span, *db = ds + scale->numel;
    memset(pds, 0, sizeof(double) * (size_t)(2 * (int64_t)np * span));
    lt_tensor *dx = NULL;
    void *dxw = NULL;
    if (lt_k_want(k, 0)) {
        if ((st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK)
            return st;
        if (!(dxw = lt_nu_work_out(k, dx, f32)))
            return LT_ERR_RUNTIME;
    }
    if (f32 && srows == 1) {
        float *gf = lt_nu_scratch(k, d, sizeof(float));
        if (!gf)
            return LT_ERR_RUNTIME;
        for (int64_t j = 0; j < d; j++)
            gf[j] = (float)g[j];
        ln_fast(xw, dyw, dxw, rows, d, gf, (float)eps, pds, pdb, np);
    } else {
        if (f32)
            lt_nu_row_stats_f32(xw, rows, d, mean, inv);
        else
            lt_nu_row_stats_f64(xw, rows, d, mean, inv);
        for (int64_t r = 0; r < rows; r++)
            inv[r] = 1 / sqrt(inv[r] + eps);
        if (f32)
            ln_rows_f32(xw, dyw, dxw, rows, d, mean, inv, g, srows, pds, pdb, np);
        else
            ln_rows_f64(xw, dyw, dxw, rows, d, mean, inv, g, srows, pds, pdb, np);
    }
    if (dx)
        lt_nu_work_store(dx, dxw, f32);
    for (int t = 1; t < np; t++)
        for (int64_t e = 0; e < span; e++) {
            pds[e] += pds[t * span + e];
            pdb[e] += pdb[t * span + e];
        }
    const lt_tensor *bt = bias ? bias : scale;
    sum_to(scale, erank, x->dims + first, pds, ds);
    sum_to(bt, erank, x->dims + first, pdb, db);
    st = LT_OK;
    if (lt_k_want(k, 1))
        st = lt_nu_out_like(k, 1, scale, ds);
    if (st == LT_OK && lt_k_want(k, 2))
        st = lt_nu_out_like(k, 2, bt, db);
    return st;
}

/* ---- LRNGrad ---- */

/* pixels per work item: the channel sweeps run over this many at once */
#define LRN_BLOCK 64

/* y_j = x_j D_j^-beta with D_j = bias + an * (sum of x_q^2 over q in
 * [j - lo, j + hi]); then
 *   dx_j = dy_j D_j^-beta - 2 an beta x_j * sum over i in [j - hi, j + lo] of
 *          dy_i x_i D_i^(-beta - 1). */
#define LRN_CORE(T, S)                                                                                        \
    static void lrn_grad_##S(const T *x, const T *dy, T *dx, int64_t n, int64_t c, int64_t s, int64_t lo,      \
                             int64_t hi, double an, double beta, double bias, double *scratch)                \
    {                                                                                                         \
        int64_t nblk = (s + LRN_BLOCK - 1) / LRN_BLOCK;                                                       \
        _Pragma("omp parallel for schedule(static) if (n * c * s > LT_NU_PAR && n * nblk > 1)")              \
        for (int64_t it = 0; it < n * nblk; it++) {                                                           \
            int64_t i = it / nblk, e0 = it % nblk * LRN_BLOCK, e1 = e0 + LRN_BLOCK < s ? e0 + LRN_BLOCK : s;  \
            int64_t B = e1 - e0;                                                                              \
            double *sq = scratch + (size_t)omp_get_thread_num() * (size_t)(3 * c * LRN_BLOCK);                \
            double *pw = sq + c * LRN_BLOCK, *t = pw + c * LRN_BLOCK;                                         \
            const T *xi = x + i * c * s + e0, *gi = dy + i * c * s + e0;                                      \
            T *oi = dx + i * c * s + e0;                                                                      \
            for (int64_t j = 0; j < c; j++)                                                                   \
                for (int64_t e = 0; e < B; e++) {                                                             \
                    double v = xi[j * s + e];                                                                 \
                    sq[j * LRN_BLOCK + e] = v * v;                                                            \
                }                                                                                             \
            for (int64_t j = 0; j < c; j++) {                                                                 \
                int64_t q0 = j - lo < 0 ? 0 : j - lo, q1 = j + hi >= c ? c - 1 : j + hi;                       \
                for (int64_t e = 0; e < B; e++) {                                                             \
                    double sum = 0;                                                                           \
                    for (int64_t q = q0; q <= q1; q++)                                                        \
                        sum += sq[q * LRN_BLOCK + e];                                                         \
                    double D = bias + an * sum, p = pow(D, -beta);                                            \
                    pw[j * LRN_BLOCK + e] = p;                                                                \
                    t[j * LRN_BLOCK + e] = (double)gi[j * s + e] * (double)xi[j * s + e] * p / D;             \
                }                                                                                             \
            }                                                                                                 \
            for (int64_t j = 0; j < c; j++) {                                                                 \
                int64_t i0 = j - hi < 0 ? 0 : j - hi, i1 = j + lo >= c ? c - 1 : j + lo;                       \
                for (int64_t e = 0; e < B; e++) {                                                             \
                    double sum = 0;                                                                           \
                    for (int64_t q = i0; q <= i1; q++)                                                        \
                        sum += t[q * LRN_BLOCK + e];                                                          \
                    oi[j * s + e] = (T)((double)gi[j * s + e] * pw[j * LRN_BLOCK + e] -                        \
                                        2 * an * beta * (double)xi[j * s + e] * sum);                         \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }
LRN_CORE(float, f32)
LRN_CORE(double, f64)

/* (dy, x) -> dx */
static lt_status k_lrn_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_gnn_need(k, 0, "dy"), *x = dy ? lt_gnn_need(k, 1, "x") : NULL;
    if (!x)
        return LT_ERR_INVALID;
    lt_status st;
    if ((st = lt_gnn_float(k, dy, "dy")) != LT_OK || (st = lt_gnn_float(k, x, "x")) != LT_OK ||
        (st = lt_gnn_same_shape(k, dy, "dy", x->rank, x->dims)) != LT_OK)
        return st;
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "x must have rank >= 2 (N, C, ...), got rank %d", x->rank);
    int64_t size = lt_attr_int(k->node, "size", 0);
    if (size <= 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "size must be a positive integer, got %lld", (long long)size);
    double alpha = lt_attr_float(k->node, "alpha", 1e-4f), beta = lt_attr_float(k->node, "beta", 0.75f);
    double bias = lt_attr_float(k->node, "bias", 1.0f);
    int64_t n = x->dims[0], c = x->dims[1], s = lt_shape_numel(x->rank - 2, x->dims + 2);
    lt_tensor *dx;
    if ((st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return st;
    bool f32 = x->dtype == LT_F32 && dy->dtype == LT_F32;
    const void *xw = lt_nu_work_in(k, x, f32), *dyw = xw ? lt_nu_work_in(k, dy, f32) : NULL;
    void *dxw = dyw ? lt_nu_work_out(k, dx, f32) : NULL;
    double *scratch = dxw ? lt_nu_scratch(k, 3 * c * LRN_BLOCK * (int64_t)omp_get_max_threads(), sizeof(double))
                          : NULL;
    if (!scratch)
        return LT_ERR_RUNTIME;
    /* the window leans forward when size is even, as the forward's does */
    int64_t lo = (size - 1) / 2, hi = size / 2;
    if (f32)
        lrn_grad_f32(xw, dyw, dxw, n, c, s, lo, hi, alpha / (double)size, beta, bias, scratch);
    else
        lrn_grad_f64(xw, dyw, dxw, n, c, s, lo, hi, alpha / (double)size, beta, bias, scratch);
    lt_nu_work_store(dx, dxw, f32);
    return LT_OK;
}

void lt_gnn_register_layer(lt_kernel_fn *tab)
{
    tab[LT_OP_LAYER_NORM_GRAD] = k_layer_norm_grad;
    tab[LT_OP_LRN_GRAD] = k_lrn_grad;
}
