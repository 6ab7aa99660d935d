/* float32 matrix-vector products and rank-1 updates with AVX2 and FMA, for
 * the products whose M, N or K is 1 on a CPU without AVX-512: the same
 * three forms as gemv_avx512.c (see there), eight lanes wide. A TreeLSTM
 * node's products are of this kind; OpenBLAS's GEMM packs the whole weight
 * matrix before a product with one row, reading it twice. The last lanes of
 * a row go one by one rather than through masked loads and stores (AMD
 * microcodes those). Every output's sum runs in a fixed order, so results
 * do not depend on the thread count. */
#include "linalg_util.h"
#include "cpu_features.h"
#include "gemv_plan.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define JC 2048     /* output columns accumulated per pass of the axpy form */

/* y[j * ys] = (beta ? beta y[j * ys] : 0) + acc[j] for j < n */
AVX2 static void store_out(const float *acc, int64_t n, float beta, float *y, int64_t ys)
{
    int64_t j = 0;
    if (ys == 1) {
        __m256 vb = _mm256_set1_ps(beta);
        for (; j + 8 <= n; j += 8) {
            __m256 a = _mm256_loadu_ps(acc + j);
            if (beta != 0)
                a = _mm256_fmadd_ps(vb, _mm256_loadu_ps(y + j), a);
            _mm256_storeu_ps(y + j, a);
        }
    }
    for (; j < n; j++)
        y[j * ys] = beta == 0 ? acc[j] : __builtin_fmaf(beta, y[j * ys], acc[j]);
}

/* y[j] = sum_k x[k] P[k * ldp + j] (+ beta y): rows of P added in groups of four */
AVX2 static void gemv_axpy(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y,
                           int64_t ys)
{
    float acc[JC] __attribute__((aligned(32)));
    for (int64_t j0 = 0; j0 < N; j0 += JC) {
        int64_t nc = N - j0 < JC ? N - j0 : JC, nv = nc / 8 * 8;
        memset(acc, 0, sizeof(float) * (size_t)nc);
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const float *p0 = P + k * ldp + j0, *p1 = p0 + ldp, *p2 = p1 + ldp, *p3 = p2 + ldp;
            __m256 x0 = _mm256_set1_ps(x[k]), x1 = _mm256_set1_ps(x[k + 1]), x2 = _mm256_set1_ps(x[k + 2]),
                   x3 = _mm256_set1_ps(x[k + 3]);
            for (int64_t j = 0; j < nv; j += 8) {
                __m256 a = _mm256_load_ps(acc + j);
                a = _mm256_fmadd_ps(x0, _mm256_loadu_ps(p0 + j), a);
                a = _mm256_fmadd_ps(x1, _mm256_loadu_ps(p1 + j), a);
                a = _mm256_fmadd_ps(x2, _mm256_loadu_ps(p2 + j), a);
                a = _mm256_fmadd_ps(x3, _mm256_loadu_ps(p3 + j), a);
                _mm256_store_ps(acc + j, a);
            }
            for (int64_t j = nv; j < nc; j++) {
                float a = acc[j];
                a = __builtin_fmaf(x[k], p0[j], a);
                a = __builtin_fmaf(x[k + 1], p1[j], a);
                a = __builtin_fmaf(x[k + 2], p2[j], a);
                acc[j] = __builtin_fmaf(x[k + 3], p3[j], a);
            }
        }
        for (; k < K; k++) {
            const float *p0 = P + k * ldp + j0;
            __m256 x0 = _mm256_set1_ps(x[k]);
            for (int64_t j = 0; j < nv; j += 8)
                _mm256_store_ps(acc + j, _mm256_fmadd_ps(x0, _mm256_loadu_ps(p0 + j), _mm256_load_ps(acc + j)));
            for (int64_t j = nv; j < nc; j++)
                acc[j] = __builtin_fmaf(x[k], p0[j], acc[j]);
        }
        store_out(acc, nc, beta, y + j0 * ys, ys);
    }
}

/* the sum of a's eight lanes, in a fixed order */
AVX2 static inline float hsum(__m256 a)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* y[j] = sum_k x[k] P[j * ldp + k] (+ beta y): eight rows of P at a time,
 * K in vectors of eight and the last k one by one */
AVX2 static void gemv_dot(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y,
                          int64_t ys)
{
    float out[8];
    int64_t kv = K / 8 * 8, j = 0;
    for (; j + 8 <= N; j += 8) {
        const float *p = P + j * ldp;
        __m256 s[8];
        for (int r = 0; r < 8; r++)
            s[r] = _mm256_setzero_ps();
        for (int64_t k = 0; k < kv; k += 8) {
            __m256 xv = _mm256_loadu_ps(x + k);
            for (int r = 0; r < 8; r++)
                s[r] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(p + r * ldp + k), s[r]);
        }
        for (int r = 0; r < 8; r++) {
            float t = hsum(s[r]);
            for (int64_t k = kv; k < K; k++)
                t = __builtin_fmaf(x[k], p[r * ldp + k], t);
            out[r] = t;
        }
        store_out(out, 8, beta, y + j * ys, ys);
    }
    for (; j < N; j++) {
        const float *p = P + j * ldp;
        __m256 s = _mm256_setzero_ps();
        for (int64_t k = 0; k < kv; k += 8)
            s = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(p + k), s);
        float t = hsum(s);
        for (int64_t k = kv; k < K; k++)
            t = __builtin_fmaf(x[k], p[k], t);
        out[0] = t;
        store_out(out, 1, beta, y + j * ys, ys);
    }
}

/* C[i, j] = alpha a[i] b[j] + beta C[i, j] */
AVX2 static void rank1(int64_t M, int64_t N, float alpha, const float *a, int64_t as, const float *b, int64_t bs,
                       float beta, float *C, int64_t ldc, float *bbuf)
{
    const float *bv = b;
    if (bs != 1) {
        for (int64_t j = 0; j < N; j++)
            bbuf[j] = b[j * bs];
        bv = bbuf;
    }
    __m256 vb = _mm256_set1_ps(beta);
    int64_t nv = N / 8 * 8;
    for (int64_t i = 0; i < M; i++) {
        float s = alpha * a[i * as];
        __m256 ai = _mm256_set1_ps(s);
        float *c = C + i * ldc;
        for (int64_t j = 0; j < nv; j += 8) {
            __m256 v = _mm256_mul_ps(ai, _mm256_loadu_ps(bv + j));
            if (beta == 1)
                v = _mm256_add_ps(_mm256_loadu_ps(c + j), v);
            else if (beta != 0)
                v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + j), v);
            _mm256_storeu_ps(c + j, v);
        }
        for (int64_t j = nv; j < N; j++) {
            float v = s * bv[j];
            c[j] = beta == 1 ? c[j] + v : beta != 0 ? __builtin_fmaf(beta, c[j], v) : v;
        }
    }
}

bool lt_sgemv_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    static const lt_gemv_forms forms = {gemv_axpy, gemv_dot, rank1};
    return lt_cpu_avx2_gemm() && lt_gemv_run(&forms, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#else

bool lt_sgemv_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
        (void)C, (void)ldc;
    return false;
}

#endif
