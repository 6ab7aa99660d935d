/* Private helpers of the reduce family's CPU kernels (reduce*.c): axis
 * handling, the outer x reduced x inner view of a tensor, loading data into
 * a compute type, and the shared reduction and softmax cores. */
#ifndef LT_CPU_REDUCE_UTIL_H
#define LT_CPU_REDUCE_UTIL_H

#include "../runtime.h"
#include "par.h"
#include <math.h>
#include <string.h>

/* Elements of work below which a parallel region costs more than it saves. */
#define LT_RED_PAR_MIN LT_PAR_ELEMS

/* exp for float32 loops that the compiler can vectorize (a call to expf
 * cannot be): n = round(x / ln2), r = x - n ln2 in two parts, a degree-7
 * polynomial for e^r, times 2^n built in the exponent bits (in two halves so
 * that n = 128 does not overflow them). Within 2 ulp of exp; anything below
 * the normal range gives 0, above it inf, NaN stays NaN. The range tests
 * compare bit patterns as integers: float compares would keep GCC (with its
 * default -ftrapping-math) from if-converting, and so from vectorizing. */
static inline float lt_red_expf(float x)
{
    const uint32_t hi_bits = 0x42b17218u; /* 88.7228391f = ln(FLT_MAX) */
    const uint32_t lo_bits = 0x42aeac50u; /* |-87.3365447f| = -ln(FLT_MIN) */
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t mag = u & 0x7fffffffu, neg = u >> 31;
    uint32_t nan = -(uint32_t)(mag > 0x7f800000u);
    uint32_t low = -(uint32_t)(neg & (mag > lo_bits)) & ~nan;
    uint32_t high = -(uint32_t)((neg ^ 1u) & (mag > hi_bits)) & ~nan;
    /* out-of-range and NaN inputs compute on 0 and are replaced below */
    uint32_t ub = u & ~(low | high | nan);
    float xc;
    memcpy(&xc, &ub, sizeof xc);
    float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - n * 0.693145752f;
    r = r - n * 1.42860677e-6f;
    float p = 1.98412698e-4f;
    p = p * r + 1.38888889e-3f;
    p = p * r + 8.33333333e-3f;
    p = p * r + 4.16666667e-2f;
    p = p * r + 1.66666667e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)n, h = ni >> 1;
    uint32_t b1 = (uint32_t)(h + 127) << 23, b2 = (uint32_t)(ni - h + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    float y = p * s1 * s2;
    uint32_t yb;
    memcpy(&yb, &y, sizeof yb);
    yb = (yb & ~(low | high | nan)) | (high & 0x7f800000u) | (nan & u);
    memcpy(&y, &yb, sizeof y);
    return y;
}

/* Maps axis a of a rank-r tensor from [-r, r) to [0, r); false when outside. */
static inline bool lt_red_axis(int64_t a, int rank, int *out)
{
    if (a < -rank || a >= rank)
        return false;
    *out = (int)(a < 0 ? a + rank : a);
    return true;
}

/* Product of dims[lo..hi); -1 on overflow (possible when another dim is 0). */
static inline int64_t lt_red_prod(const int64_t *dims, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        if (__builtin_mul_overflow(p, dims[i], &p))
            return -1;
    return p;
}

/* A reduction seen as outer x r x inner. When the reduced axes are not one
 * contiguous block, the data must first be permuted (lt_red_permute with
 * prank, pdims, perm) into [kept..., reduced...] order; then inner is 1. */
typedef struct lt_red_plan {
    int64_t outer, r, inner;
    bool permute;
    int prank;
    int64_t pdims[LT_MAX_RANK];
    int perm[LT_MAX_RANK];
} lt_red_plan;

/* mask[d] marks reduced axes. False on size overflow. */
bool lt_red_plan_make(int rank, const int64_t *dims, const bool *mask, lt_red_plan *p);

/* dst = src with axes reordered: dst axis j is src axis perm[j] (es-byte
 * elements, dims of src). */
void lt_red_permute(const void *src, void *dst, size_t es, int rank, const int64_t *dims, const int *perm);
/* The inverse: src was produced by lt_red_permute(orig, src, ..., dims, perm);
 * dst receives the original layout. */
void lt_red_unpermute(const void *src, void *dst, size_t es, int rank, const int64_t *dims, const int *perm);

/* The tensor's data as float (f32 as is; f16/bf16 converted into scratch),
 * double (f64 as is; other types converted) or int64 (ints and bool; uint64
 * with its top bit flipped when flip_u64, so that signed order is unsigned
 * order). NULL when scratch memory runs out. */
const float *lt_red_load_f32(lt_kctx *k, const lt_tensor *t);
const double *lt_red_load_f64(lt_kctx *k, const lt_tensor *t);
const int64_t *lt_red_load_i64(lt_kctx *k, const lt_tensor *t, bool flip_u64);
/* Stores n floats into a float tensor of any float dtype. */
void lt_red_store_f32(const float *src, lt_tensor *dst);

/* ---- the reduction core ---- */
enum { LT_RED_PRE_ID, LT_RED_PRE_ABS, LT_RED_PRE_SQ, LT_RED_PRE_EXP, LT_RED_PRE_SQDEV };
enum { LT_RED_ADD, LT_RED_MUL, LT_RED_MAX, LT_RED_MIN };

/* acc[o*inner + i] = combine over r of pre(x[(o*r_n + r)*inner + i]), in
 * double. x is float (is_f64 false) or double. PRE_EXP maps to exp(x - sh),
 * PRE_SQDEV to (x - sh)^2, with sh[o*inner + i]. Max and min propagate NaN.
 * part: scratch of lt_red_part_size() doubles (may be NULL when that is 0). */
size_t lt_red_part_size(int64_t outer, int64_t r, int64_t inner);
void lt_red_run(const void *x, bool is_f64, int64_t outer, int64_t r, int64_t inner, int pre, int comb,
                const double *sh, double *acc, double *part);

/* ---- softmax core ---- */
enum { LT_RED_SOFTMAX, LT_RED_LOGSOFTMAX, LT_RED_HARDMAX };
void lt_red_softmax_f32(const float *x, float *y, int64_t outer, int64_t c, int64_t inner, int mode);
void lt_red_softmax_f64(const double *x, double *y, int64_t outer, int64_t c, int64_t inner, int mode);
/* Softmax (log-softmax when logsm) of `rows` contiguous rows of c floats
 * with AVX-512 (softmax_avx512.c); false, with y untouched, without it. */
bool lt_softmax_rows_avx512(const float *x, float *y, int64_t rows, int64_t c, bool logsm);
/* Softmax (log-softmax when logsm) of `rows` contiguous rows of c floats
 * with AVX2 and FMA (softmax_avx2.c); false, with y untouched, without
 * them. */
bool lt_softmax_rows_avx2(const float *x, float *y, int64_t rows, int64_t c, bool logsm);
/* lt_red_softmax_f32 through the widest row kernel the CPU has where the
 * axis is the last (inner 1): Softmax, LogSoftmax and the losses' softmax */
void lt_red_softmax_any_f32(const float *x, float *y, int64_t outer, int64_t c, int64_t inner, int mode);

/* ---- registrars of the family's files ---- */
void lt_cpu_register_reduce_arg(lt_kernel_fn *tab);     /* ArgMax, ArgMin, TopK, CumSum */
void lt_cpu_register_reduce_softmax(lt_kernel_fn *tab); /* Softmax, LogSoftmax, Hardmax, LpNorm, MVN */
void lt_cpu_register_reduce_loss(lt_kernel_fn *tab);    /* SoftmaxCrossEntropyLoss, NLLLoss */

#endif
