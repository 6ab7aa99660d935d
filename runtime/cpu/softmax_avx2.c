/* float32 Softmax and LogSoftmax along contiguous rows with AVX2 and FMA, for
 * CPUs without AVX-512 (softmax_avx512.c): attention's rows of 28 keys, which the
 * baseline build's 4-wide loop and scalar exponential take ten times
 * longer over. Each thread takes its share of the rows in blocks that stay
 * in L1: x - max into y row by row, one array exponential over the block
 * (vact.h's lt_vexpf, whose AVX2 loop is elementwise_vmath.h's lt_ew_expf
 * lane for lane), then each row's sum (float lanes) and scaling. Rows of
 * at most 32 are read and written in registers (a C loop's setup and
 * remainder per row of 28 cost more than its arithmetic). */
#include "reduce_util.h"
#include "cpu_features.h"
#include "vact.h"
#include <omp.h>
#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__)

#define AVX2 __attribute__((target("avx2,fma")))
#define BLOCK 2048 /* floats of a block of rows (8 KiB) */
#include <immintrin.h>
#include "avx2_tail.h"

/* Rows of at most 32 (attention's keys) in up to four 8-lane registers,
 * the last one partial: loaded under a mask, stored 4, 2 and 1 lanes at a
 * time (never past the row, so y may be x) */
typedef struct rowv {
    int nv, nl;   /* vectors per row, lanes of the last */
    __m256i mask; /* the last vector's lanes */
} rowv;

AVX2 static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

AVX2 static inline float hsum8(__m256 v)
{
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}

/* y = x - max(x) for rows [r0, r1) of at most 32 */
AVX2 static void shift_rows32(const float *x, float *y, int64_t r0, int64_t r1, int64_t c, const rowv *w)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int64_t o = r0; o < r1; o++) {
        const float *xr = x + o * c;
        float *yr = y + o * c;
        __m256 v[4], m = ninf;
        for (int k = 0; k < w->nv; k++) {
            v[k] = k < w->nv - 1 ? _mm256_loadu_ps(xr + 8 * k)
                                 : _mm256_blendv_ps(ninf, _mm256_maskload_ps(xr + 8 * k, w->mask),
                                                    _mm256_castsi256_ps(w->mask));
            m = _mm256_max_ps(m, v[k]);
        }
        __m256 bm = _mm256_set1_ps(hmax8(m));
        for (int k = 0; k < w->nv - 1; k++)
            _mm256_storeu_ps(yr + 8 * k, _mm256_sub_ps(v[k], bm));
        lt_avx2_store_first(yr + 8 * (w->nv - 1), _mm256_sub_ps(v[w->nv - 1], bm), w->nl);
    }
}

/* y /= sum(y) for rows [r0, r1) of at most 32 */
AVX2 static void scale_rows32(float *y, int64_t r0, int64_t r1, int64_t c, const rowv *w)
{
    for (int64_t o = r0; o < r1; o++) {
        float *yr = y + o * c;
        __m256 v[4], s = _mm256_setzero_ps();
        for (int k = 0; k < w->nv; k++) {
            v[k] = k < w->nv - 1 ? _mm256_loadu_ps(yr + 8 * k) : _mm256_maskload_ps(yr + 8 * k, w->mask);
            s = _mm256_add_ps(s, v[k]);
        }
        __m256 inv = _mm256_set1_ps((float)(1.0 / (double)hsum8(s)));
        for (int k = 0; k < w->nv - 1; k++)
            _mm256_storeu_ps(yr + 8 * k, _mm256_mul_ps(v[k], inv));
        lt_avx2_store_first(yr + 8 * (w->nv - 1), _mm256_mul_ps(v[w->nv - 1], inv), w->nl);
    }
}

/* y[j] = x[j] - max(x) for rows [r0, r1) */
AVX2 static void shift_rows(const float *x, float *y, int64_t r0, int64_t r1, int64_t c)
{
    for (int64_t o = r0; o < r1; o++) {
        const float *xr = x + o * c;
        float *yr = y + o * c, m = xr[0];
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < c; j++)
            m = xr[j] > m ? xr[j] : m;
#pragma omp simd
        for (int64_t j = 0; j < c; j++)
            yr[j] = xr[j] - m;
    }
}

/* y[j] /= sum(y) for rows [r0, r1) (a NaN anywhere in a row makes its sum
 * and so every output NaN) */
AVX2 static void scale_rows(float *y, int64_t r0, int64_t r1, int64_t c)
{
    for (int64_t o = r0; o < r1; o++) {
        float *yr = y + o * c, s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < c; j++)
            s += yr[j];
        float inv = (float)(1.0 / (double)s);
#pragma omp simd
        for (int64_t j = 0; j < c; j++)
            yr[j] *= inv;
    }
}

/* sum of n floats, in double (as the generic kernel's log-softmax sums) */
AVX2 static double sum_f64(const float *e, int64_t n)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++)
        s += e[j];
    return s;
}

/* y[j] -= v for a row of n */
AVX2 static void sub_row(float *y, int64_t n, float v)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        y[j] -= v;
}

/* Log-softmax of rows [r0, r1): y = (x - max) - log(sum exp(x - max)), the
 * (x - max) kept in y (exact near the max, as in the generic kernel) and
 * the exponentials in a block of scratch; a row longer than the block (a
 * language model's vocabulary) is summed a block at a time. */
AVX2 static void logsm_share(const float *x, float *y, int64_t r0, int64_t r1, int64_t c, const rowv *w)
{
    float e[BLOCK];
    if (c > BLOCK) {
        for (int64_t o = r0; o < r1; o++) {
            float *yr = y + o * c;
            shift_rows(x, y, o, o + 1, c);
            double s = 0;
            for (int64_t j = 0; j < c; j += BLOCK) {
                int64_t n = c - j < BLOCK ? c - j : BLOCK;
                lt_vexpf(yr + j, e, n);
                s += sum_f64(e, n);
            }
            sub_row(yr, c, (float)log(s));
        }
        return;
    }
    int64_t per = BLOCK / c;
    for (int64_t b = r0; b < r1; b += per) {
        int64_t end = b + per < r1 ? b + per : r1;
        if (c <= 32)
            shift_rows32(x, y, b, end, c, w);
        else
            shift_rows(x, y, b, end, c);
        lt_vexpf(y + b * c, e, (end - b) * c);
        for (int64_t o = b; o < end; o++)
            sub_row(y + o * c, c, (float)log(sum_f64(e + (o - b) * c, c)));
    }
}

AVX2 static void rows_share(const float *x, float *y, int64_t r0, int64_t r1, int64_t c, bool logsm)
{
    int64_t per = BLOCK / c > 0 ? BLOCK / c : 1;
    rowv w = {(int)((c + 7) / 8), (int)(c - 8 * ((c + 7) / 8 - 1)), _mm256_setzero_si256()};
    w.mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(w.nl), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (logsm) {
        logsm_share(x, y, r0, r1, c, &w);
        return;
    }
    for (int64_t b = r0; b < r1; b += per) {
        int64_t e = b + per < r1 ? b + per : r1;
        if (c <= 32)
            shift_rows32(x, y, b, e, c, &w);
        else
            shift_rows(x, y, b, e, c);
        lt_vexpf(y + b * c, y + b * c, (e - b) * c);
        if (c <= 32)
            scale_rows32(y, b, e, c, &w);
        else
            scale_rows(y, b, e, c);
    }
}

bool lt_softmax_rows_avx2(const float *x, float *y, int64_t rows, int64_t c, bool logsm)
{
    if (!lt_cpu_avx2() || c < 1)
        return false;
    double work = (double)rows * (double)c;
#pragma omp parallel if (work > LT_RED_PAR_MIN && rows > 1)
    {
        int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        rows_share(x, y, rows * id / nt, rows * (id + 1) / nt, c, logsm);
    }
    return true;
}

#else

bool lt_softmax_rows_avx2(const float *x, float *y, int64_t rows, int64_t c, bool logsm)
{
    (void)x, (void)y, (void)rows, (void)c, (void)logsm;
    return false;
}

#endif
