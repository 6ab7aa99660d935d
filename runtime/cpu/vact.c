/* Array sigmoid, tanh, softplus, erf and exp (vact.h): one loop body compiled twice, for
 * baseline x86-64 and for AVX2+FMA, picked once per process from cpuid; erf
 * and exp (Gelu's and softmax-like chains, over whole activations) and Gelu a third
 * time for AVX-512, whose lanes compute the same FMA formula as AVX2's. With
 * AVX2 and AVX-512, erf and Gelu go by blocks of 8 or 16 lanes that skip
 * the large-argument piece where no lane needs it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math") /* lets the clamps if-convert */
#endif
#include "vact.h"
#include "cpu_features.h"
#include "elementwise_vmath.h"
#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define LT_VACT_X86 1
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define LT_VACT_X86 0
#define AVX2
#endif

#define LOOPS(SFX, ATTR)                                                 \
    ATTR static void sigmoid_##SFX(const float *x, float *y, int64_t n) \
    {                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)              \
            y[i] = lt_ew_sigmoidf(x[i]);                                 \
    }                                                                    \
    ATTR static void tanh_##SFX(const float *x, float *y, int64_t n)    \
    {                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)              \
            y[i] = lt_ew_tanhf(x[i]);                                    \
    }                                                                    \
    ATTR static void exp_##SFX(const float *x, float *y, int64_t n)     \
    {                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)              \
            y[i] = lt_ew_expf(x[i]);                                     \
    }                                                                    \
    ATTR static void softplus_##SFX(const float *x, float *y, int64_t n) \
    {                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)              \
            y[i] = lt_ew_softplusf(x[i]);                                \
    }

/* erf and Gelu element by element (the baseline build; the vector builds
 * take them in blocks below) */
static void erf_base(const float *x, float *y, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = lt_ew_erff(x[i]);
}

static void gelu_base(const float *x, float *y, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.5f * x[i] * lt_ew_erf1pf(x[i] * 0.7071067811865476f);
}

LOOPS(base, )
#if LT_VACT_X86
LOOPS(avx2, AVX2)

/* whether any of the W t[j] (or scale * t[j]) is outside (-1, 1), NaN
 * included: erf's large-argument piece (a division and two exponentials,
 * most of its cost) is needed */
AVX512 static inline bool any_large16(const float *t, float scale)
{
    __m512 u = _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(t), _mm512_set1_ps(scale)));
    return _mm512_cmp_ps_mask(u, _mm512_set1_ps(1.0f), _CMP_NLT_UQ) != 0;
}

AVX2 static inline bool any_large8(const float *t, float scale)
{
    __m256 u = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_mul_ps(_mm256_loadu_ps(t), _mm256_set1_ps(scale)));
    return _mm256_movemask_ps(_mm256_cmp_ps(u, _mm256_set1_ps(1.0f), _CMP_NLT_UQ)) != 0;
}

/* erf and Gelu a block of W at a time: a block whose arguments all lie in
 * (-1, 1) (most of an activation's, for Gelu's x / sqrt 2) computes the
 * small-argument piece alone, the value the full formula selects there,
 * lane for lane the same operations */
#define BLOCKED(SFX, ATTR, W, ANY_LARGE)                                                              \
    ATTR static void erf_##SFX(const float *x, float *y, int64_t n)                                   \
    {                                                                                                 \
        int64_t i = 0;                                                                                \
        for (; i + W <= n; i += W) {                                                                  \
            if (ANY_LARGE(x + i, 1.0f)) {                                                             \
                _Pragma("omp simd") for (int j = 0; j < W; j++) y[i + j] = lt_ew_erff(x[i + j]);      \
            } else {                                                                                  \
                _Pragma("omp simd") for (int j = 0; j < W; j++) y[i + j] = lt_ew_erf_small(x[i + j]); \
            }                                                                                         \
        }                                                                                             \
        _Pragma("omp simd") for (int64_t k = i; k < n; k++) y[k] = lt_ew_erff(x[k]);                  \
    }                                                                                                 \
    ATTR static void gelu_##SFX(const float *x, float *y, int64_t n)                                  \
    {                                                                                                 \
        const float h = 0.7071067811865476f;                                                          \
        int64_t i = 0;                                                                                \
        for (; i + W <= n; i += W) {                                                                  \
            if (ANY_LARGE(x + i, h)) {                                                                \
                _Pragma("omp simd") for (int j = 0; j < W; j++) y[i + j] =                            \
                    0.5f * x[i + j] * lt_ew_erf1pf(x[i + j] * h);                                     \
            } else {                                                                                  \
                _Pragma("omp simd") for (int j = 0; j < W; j++) y[i + j] =                            \
                    0.5f * x[i + j] * (1.0f + lt_ew_erf_small(x[i + j] * h));                         \
            }                                                                                         \
        }                                                                                             \
        _Pragma("omp simd") for (int64_t k = i; k < n; k++) y[k] =                                    \
            0.5f * x[k] * lt_ew_erf1pf(x[k] * h);                                                     \
    }

BLOCKED(avx2, AVX2, 8, any_large8)
BLOCKED(avx512, AVX512, 16, any_large16)

AVX512 static void exp_avx512(const float *x, float *y, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = lt_ew_expf(x[i]);
}
#endif

static int use_avx2(void)
{
#if LT_VACT_X86
    return lt_cpu_avx2();
#else
    return 0;
#endif
}

static int use_avx512(void)
{
#if LT_VACT_X86
    return use_avx2() && lt_cpu_avx512();
#else
    return 0;
#endif
}

/* the public array function: the AVX2 loop where the CPU has it */
#if LT_VACT_X86
#define DISPATCH(FN, NAME)                              \
    void FN(const float *x, float *y, int64_t n)        \
    {                                                   \
        if (use_avx2())                                 \
            NAME##_avx2(x, y, n);                       \
        else                                            \
            NAME##_base(x, y, n);                       \
    }
#else
#define DISPATCH(FN, NAME)                              \
    void FN(const float *x, float *y, int64_t n) { NAME##_base(x, y, n); }
#endif

DISPATCH(lt_vsigmoidf, sigmoid)

DISPATCH(lt_vtanhf, tanh)

DISPATCH(lt_vsoftplusf, softplus)

/* erf and exp: the AVX-512 loop first */
#if LT_VACT_X86
#define DISPATCH512(FN, NAME)                           \
    void FN(const float *x, float *y, int64_t n)        \
    {                                                   \
        if (use_avx512())                               \
            NAME##_avx512(x, y, n);                     \
        else if (use_avx2())                            \
            NAME##_avx2(x, y, n);                       \
        else                                            \
            NAME##_base(x, y, n);                       \
    }
#else
#define DISPATCH512(FN, NAME) DISPATCH(FN, NAME)
#endif

DISPATCH512(lt_verff, erf)

DISPATCH512(lt_vexpf, exp)

DISPATCH512(lt_vgeluf, gelu)

void lt_vtanh_f64(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanh(x[i]);
}

void lt_vsigmoid_f64(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] >= 0 ? 1 / (1 + exp(-x[i])) : exp(x[i]) / (1 + exp(x[i]));
}
