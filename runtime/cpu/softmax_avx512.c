/* float32 Softmax and LogSoftmax along contiguous rows with AVX-512, for the
 * short rows attention produces (28 keys: the baseline build's 4-wide loop
 * spends most of its time on the row's edges). Each row is read in 16-lane
 * pieces, the last one masked: a pass for the max, one for exp(x - max)
 * and its sum, one to scale (softmax) or subtract log(sum) (log-softmax).
 * exp is elementwise_vmath.h's lt_ew_expf, lane for lane. */
#include "reduce_util.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

static inline __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* lt_ew_expf on 16 lanes: clamp to [-104, 89] (NaN passes), k = round(x /
 * ln 2), Cody-Waite reduction, the degree-5 polynomial, 2^k in two halves */
AVX512 static inline __m512 exp16(__m512 x)
{
    /* max/min return their second operand when either is NaN */
    __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(12582912.0f));
    __m512i k = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4b400000));
    __m512 kf = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));
    __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    /* k1 = k / 2 rounded toward zero, k2 = k - k1 */
    __m512i k1 = _mm512_srai_epi32(_mm512_add_epi32(k, _mm512_srli_epi32(k, 31)), 1), k2 = _mm512_sub_epi32(k, k1);
    __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k1, _mm512_set1_epi32(127)), 23));
    __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k2, _mm512_set1_epi32(127)), 23));
    return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

AVX512 static void row(const float *x, float *y, int64_t c, bool logsm)
{
    /* a NaN in the row makes the sum, and so every output, NaN whatever
     * the max turns out to be */
    __m512 vm = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < c; j += 16)
        vm = _mm512_max_ps(vm, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), lanes(c - j), x + j));
    __m512 bm = _mm512_set1_ps(_mm512_reduce_max_ps(vm)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < c; j += 16) {
        __mmask16 m = lanes(c - j);
        __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), bm));
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
        if (!logsm)
            _mm512_mask_storeu_ps(y + j, m, e);
    }
    float s = _mm512_reduce_add_ps(sum);
    if (!logsm) {
        __m512 inv = _mm512_set1_ps((float)(1.0 / (double)s));
        for (int64_t j = 0; j < c; j += 16) {
            __mmask16 m = lanes(c - j);
            _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + j), inv));
        }
    } else {
        /* (x - m) first: exact near the max, as in the scalar loop */
        __m512 ls = _mm512_set1_ps((float)log((double)s));
        for (int64_t j = 0; j < c; j += 16) {
            __mmask16 m = lanes(c - j);
            __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), bm);
            _mm512_mask_storeu_ps(y + j, m, _mm512_sub_ps(d, ls));
        }
    }
}

/* Softmax rows of 17 to 32 (attention's 28 keys), row() with both pieces
 * kept in registers: one load of the row, no store and reload of the
 * exponentials; the same operations in the same order, so the same bits. */
AVX512 static void rows32(const float *x, float *y, int64_t r0, int64_t r1, int64_t c)
{
    __mmask16 m1 = lanes(c - 16);
    __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int64_t o = r0; o < r1; o++) {
        const float *xr = x + o * c;
        float *yr = y + o * c;
        __m512 a = _mm512_loadu_ps(xr), b = _mm512_mask_loadu_ps(ninf, m1, xr + 16);
        __m512 vm = _mm512_max_ps(_mm512_max_ps(ninf, a), b);
        __m512 bm = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
        __m512 ea = exp16(_mm512_sub_ps(a, bm)), eb = exp16(_mm512_sub_ps(_mm512_maskz_mov_ps(m1, b), bm));
        __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_setzero_ps(), ea), _mm512_maskz_mov_ps(m1, eb));
        __m512 inv = _mm512_set1_ps((float)(1.0 / (double)_mm512_reduce_add_ps(sum)));
        _mm512_storeu_ps(yr, _mm512_mul_ps(ea, inv));
        _mm512_mask_storeu_ps(yr + 16, m1, _mm512_mul_ps(eb, inv));
    }
}

bool lt_softmax_rows_avx512(const float *x, float *y, int64_t rows, int64_t c, bool logsm)
{
    if (!lt_cpu_avx512() || c < 1)
        return false;
    double work = (double)rows * (double)c;
    if (!logsm && c > 16 && c <= 32) {
#pragma omp parallel if (work > LT_RED_PAR_MIN && rows > 1)
        {
            int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
            rows32(x, y, rows * id / nt, rows * (id + 1) / nt, c);
        }
        return true;
    }
#pragma omp parallel for schedule(static) if (work > LT_RED_PAR_MIN && rows > 1)
    for (int64_t o = 0; o < rows; o++)
        row(x + o * c, y + o * c, c, logsm);
    return true;
}

#else

bool lt_softmax_rows_avx512(const float *x, float *y, int64_t rows, int64_t c, bool logsm)
{
    (void)x, (void)y, (void)rows, (void)c, (void)logsm;
    return false;
}

#endif
