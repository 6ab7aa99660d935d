/* float32 Softmax along contiguous rows with AVX2 and FMA, for CPUs without
 * AVX-512 (softmax_avx512.c): attention's rows of 28 keys, which the
 * baseline build's 4-wide loop and scalar exponential take ten times
 * longer over. Each thread takes its share of the rows in blocks that stay
 * in L1: x - max into y row by row, one array exponential over the block
 * (vact.h's lt_vexpf, whose AVX2 loop is elementwise_vmath.h's lt_ew_expf
 * lane for lane), then each row's sum (float lanes) and scaling. */
#include "reduce_util.h"
#include "cpu_features.h"
#include "vact.h"
#include <omp.h>

#if defined(__x86_64__) && defined(__GNUC__)

#define AVX2 __attribute__((target("avx2,fma")))
#define BLOCK 2048 /* floats of a block of rows (8 KiB) */

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

static void rows_share(const float *x, float *y, int64_t r0, int64_t r1, int64_t c)
{
    int64_t per = BLOCK / c > 0 ? BLOCK / c : 1;
    for (int64_t b = r0; b < r1; b += per) {
        int64_t e = b + per < r1 ? b + per : r1;
        shift_rows(x, y, b, e, c);
        lt_vexpf(y + b * c, y + b * c, (e - b) * c);
        scale_rows(y, b, e, c);
    }
}

bool lt_softmax_rows_avx2(const float *x, float *y, int64_t rows, int64_t c)
{
    if (!lt_cpu_avx2() || c < 1)
        return false;
    double work = (double)rows * (double)c;
#pragma omp parallel if (work > LT_RED_PAR_MIN && rows > 1)
    {
        int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        rows_share(x, y, rows * id / nt, rows * (id + 1) / nt, c);
    }
    return true;
}

#else

bool lt_softmax_rows_avx2(const float *x, float *y, int64_t rows, int64_t c)
{
    (void)x, (void)y, (void)rows, (void)c;
    return false;
}

#endif
