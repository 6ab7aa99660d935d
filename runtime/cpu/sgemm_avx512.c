/* float32 GEMM with AVX-512 kernels for CPUs that have them (the build
 * targets baseline x86-64, and the OpenBLAS the runtime pins to its Haswell
 * kernels uses half the vector width). Blocked the usual way: op(B) packed
 * in panels of NR columns for a KC slice of K, op(A) in panels of MR rows,
 * an MR x NR register tile of accumulators; transposed operands are packed
 * through 16x16 in-register transposes. linalg_gemm.c routes float
 * products here and keeps OpenBLAS for the shapes this does no better on. */
#include "linalg_util.h"
#include "cpu_features.h"
#include "thread_buf.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR 8
#define NR 32
#define KC 256
#define MC 128
#define NC 2048
#define AVX512 __attribute__((target("avx512f")))

/* ---- packing ---- */

/* r[0..15] become their transpose: r[c] = (old r[0][c], ..., old r[15][c]) */
AVX512 static inline void tr16(__m512 *r)
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4q + j], lane l: element 4l + j of rows 4q .. 4q + 3 */
    for (int q = 0; q < 4; q++) {
        __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
        __m512d c = _mm512_castps_pd(t[4 * q + 2]), d = _mm512_castps_pd(t[4 * q + 3]);
        u[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* column 4l + j gathers lane l of u[j], u[4 + j], u[8 + j], u[12 + j] */
    for (int j = 0; j < 4; j++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44), v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xee);
        __m512 w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44), w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xee);
        r[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
        r[4 + j] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
        r[8 + j] = _mm512_shuffle_f32x4(v1, w1, 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
    }
}

static inline __mmask16 mask_of(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* dst[k * ld + c] = src[c * lds + k] for c < rows, k < kc (rows <= 16; the
 * rows from `rows` to 16 of dst are zero) */
AVX512 static void pack_transposed(const float *src, int64_t lds, int64_t rows, int64_t kc, float *dst, int64_t ld,
                                   int width, float alpha)
{
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        __mmask16 mk = mask_of(kc - k0);
        __m512 r[16];
        for (int c = 0; c < 16; c++)
            r[c] = c < rows ? _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mk, src + c * lds + k0)) : _mm512_setzero_ps();
        tr16(r);
        int64_t n = kc - k0 < 16 ? kc - k0 : 16;
        for (int64_t k = 0; k < n; k++) {
            if (width == 16)
                _mm512_storeu_ps(dst + (k0 + k) * ld, r[k]);
            else
                _mm256_storeu_ps(dst + (k0 + k) * ld, _mm512_castps512_ps256(r[k]));
        }
    }
}

/* op(A) rows [i0, i0 + mc), k [k0, k0 + kc), times alpha, into panels of
 * MR rows: row r of panel p at k is pa[(p * kc + k) * MR + r] */
AVX512 static void pack_a(const float *A, int64_t lda, bool ta, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                          float alpha, float *pa)
{
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t p = 0; p < mc; p += MR) {
        int64_t mr = mc - p < MR ? mc - p : MR;
        float *dst = pa + p * kc;
        if (ta) {
            /* A is [K, M]: the panel's rows lie side by side in A's row k */
            __mmask16 m = mask_of(mr);
            for (int64_t k = 0; k < kc; k++) {
                __m512 v = _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, A + (k0 + k) * lda + i0 + p));
                _mm256_storeu_ps(dst + k * MR, _mm512_castps512_ps256(v));
            }
        } else {
            pack_transposed(A + (i0 + p) * lda + k0, lda, mr, kc, dst, MR, MR, alpha);
        }
    }
}

/* op(B): B [K, N] (B^T when tb), or with B2 the columns side by side
 * [B | B2] of B [K, n1] and B2 [K, N - n1] (not transposed) */
typedef struct {
    const float *B, *B2;
    int64_t ldb, ldb2, n1;
    bool tb;
} bsrc;

/* columns [j, j + nr) of [B | B2] at rows [k0, k0 + kc) into a panel,
 * one column at a time (a panel across the seam) */
static void pack_seam(const bsrc *b, int64_t k0, int64_t kc, int64_t j, int64_t nr, float *dst)
{
    for (int64_t k = 0; k < kc; k++)
        for (int64_t c = 0; c < NR; c++)
            dst[k * NR + c] = c >= nr         ? 0.0f
                              : j + c < b->n1 ? b->B[(k0 + k) * b->ldb + j + c]
                                              : b->B2[(k0 + k) * b->ldb2 + j + c - b->n1];
}

/* op(B) k [k0, k0 + kc), columns [j0, j0 + nc) into panels of NR columns:
 * column c of panel q at k is pb[(q * kc + k) * NR + c] (zero past nc) */
AVX512 static void pack_b(const bsrc *bs, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float *pb)
{
    bool tb = bs->tb;
    for (int64_t q = 0; q < nc; q += NR) {
        int64_t nr = nc - q < NR ? nc - q : NR;
        float *dst = pb + q * kc;
        const float *B = bs->B;
        int64_t ldb = bs->ldb, j = j0 + q;
        if (bs->B2 && j + nr > bs->n1) {
            if (j < bs->n1) {
                pack_seam(bs, k0, kc, j, nr, dst);
                continue;
            }
            /* wholly in B2 */
            B = bs->B2;
            ldb = bs->ldb2;
            j -= bs->n1;
        }
        if (!tb) {
            __mmask16 m0 = mask_of(nr), m1 = mask_of(nr > 16 ? nr - 16 : 0);
            for (int64_t k = 0; k < kc; k++) {
                const float *src = B + (k0 + k) * ldb + j;
                _mm512_storeu_ps(dst + k * NR, _mm512_maskz_loadu_ps(m0, src));
                _mm512_storeu_ps(dst + k * NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
            }
        } else {
            /* B is [N, K]: column c of op(B) is B's row j + c */
            const float *src = B + j * ldb + k0;
            pack_transposed(src, ldb, nr < 16 ? nr : 16, kc, dst, NR, 16, 1.0f);
            pack_transposed(src + 16 * ldb, ldb, nr > 16 ? nr - 16 : 0, kc, dst + 16, NR, 16, 1.0f);
        }
    }
}

/* ---- the register tile ---- */

/* A tile's accumulators into its mr x nr corner of C: written (mode 0),
 * added (mode 1) or added to beta C (mode 2). */
AVX512 static inline __attribute__((always_inline)) void store_tile(__m512 acc[MR][2], float *c, int64_t ldc,
                                                                     int64_t mr, int64_t nr, int mode, float beta)
{
    __mmask16 m0 = mask_of(nr), m1 = mask_of(nr > 16 ? nr - 16 : 0);
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            break;
        float *cr = c + r * ldc;
        __m512 v0 = acc[r][0], v1 = acc[r][1];
        if (mode == 1) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
        } else if (mode == 2) {
            v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), v0);
            v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), v1);
        }
        _mm512_mask_storeu_ps(cr, m0, v0);
        _mm512_mask_storeu_ps(cr + 16, m1, v1);
    }
}

/* C[mr, nr] of the tile: mode 0 stores the product, 1 adds it to C, 2
 * stores beta C + product */
AVX512 static void tile(int64_t kc, const float *pa, const float *pb, float *c, int64_t ldc, int64_t mr, int64_t nr,
                        int mode, float beta)
{
    /* fully unrolled, so that the 16 accumulators live in registers */
    __m512 acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(pb + k * NR), b1 = _mm512_loadu_ps(pb + k * NR + 16);
        const float *a = pa + k * MR;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            __m512 ar = _mm512_set1_ps(a[r]);
            acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
        }
    }
    store_tile(acc, c, ldc, mr, nr, mode, beta);
}

/* The tile with op(A) read in place: a(r, k) at a0 + r * rs + k * ks (A
 * itself: rs = lda, ks = 1; A transposed: rs = 1, ks = lda), each k one
 * broadcast per row, as the packed panel would give; rows past mr repeat
 * row mr - 1 and are not stored. Saves packing op(A) (through transposes
 * when A is not transposed). */
AVX512 static void tile_direct(int64_t kc, const float *a0, int64_t rs, int64_t ks, const float *pb, float *c,
                               int64_t ldc, int64_t mr, int64_t nr, int mode, float beta)
{
    const float *ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        ar[r] = a0 + (r < mr ? r : mr - 1) * rs;
    __m512 acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(pb + k * NR), b1 = _mm512_loadu_ps(pb + k * NR + 16);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            __m512 ar_k = _mm512_set1_ps(ar[r][k * ks]);
            acc[r][0] = _mm512_fmadd_ps(ar_k, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(ar_k, b1, acc[r][1]);
        }
    }
    store_tile(acc, c, ldc, mr, nr, mode, beta);
}

/* ---- driver ---- */

/* this thread's packing buffers (thread_buf.h) */
static float *buffers(void) { return lt_thread_buf(LT_THREAD_BUF_SGEMM, sizeof(float) * (MC * KC + KC * (NC + NR))); }

AVX512 static void run(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                       const bsrc *bs, float beta, float *C, int64_t ldc, float *pa, float *pb)
{
    /* alpha 1: op(A) read in place, no packed panels; a transposed A only
     * when its rows are short (a weight gradient's few outputs over a long
     * batch: a tile's KC rows of A then span few pages) */
    bool direct = alpha == 1.0f && (!ta || lda <= 128);
    /* K in slices of equal depth (multiples of 16, the transposes'
     * height), not KC-deep ones and a thin rest: a 784-deep product takes
     * 4 slices of 208 or fewer rather than 3 of 256 and one of 16, each
     * slice a pass over the tiles of C */
    int64_t nk = (K + KC - 1) / KC, kstep = ((K + nk - 1) / nk + 15) / 16 * 16;
    if (kstep > KC)
        kstep = KC;
    for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = N - j0 < NC ? N - j0 : NC;
        for (int64_t k0 = 0; k0 < K; k0 += kstep) {
            int64_t kc = K - k0 < kstep ? K - k0 : kstep;
            int mode = k0 > 0 ? 1 : beta == 0 ? 0 : 2;
            pack_b(bs, k0, kc, j0, nc, pb);
            for (int64_t i0 = 0; i0 < M; i0 += MC) {
                int64_t mc = M - i0 < MC ? M - i0 : MC;
                if (direct) {
                    for (int64_t q = 0; q < nc; q += NR)
                        for (int64_t p = 0; p < mc; p += MR)
                            tile_direct(kc, ta ? A + k0 * lda + i0 + p : A + (i0 + p) * lda + k0, ta ? 1 : lda,
                                        ta ? lda : 1, pb + q * kc, C + (i0 + p) * ldc + j0 + q, ldc,
                                        mc - p < MR ? mc - p : MR, nc - q < NR ? nc - q : NR, mode, beta);
                    continue;
                }
                pack_a(A, lda, ta, i0, mc, k0, kc, alpha, pa);
                for (int64_t q = 0; q < nc; q += NR)
                    for (int64_t p = 0; p < mc; p += MR)
                        tile(kc, pa + p * kc, pb + q * kc, C + (i0 + p) * ldc + j0 + q, ldc,
                             mc - p < MR ? mc - p : MR, nc - q < NR ? nc - q : NR, mode, beta);
            }
        }
    }
}

bool lt_sgemm_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    /* narrow products waste most of the NR-wide tile: OpenBLAS's are better */
    if (!lt_cpu_avx512_gemm() || N < NR || M < 4 || K < 1)
        return false;
    float *buf = buffers();
    if (!buf)
        return false;
    bsrc bs = {.B = B, .ldb = ldb, .tb = tb};
    run(ta, M, N, K, alpha, A, lda, &bs, beta, C, ldc, buf, buf + MC * KC);
    return true;
}

bool lt_sgemm_avx512_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                         float *C, int64_t ldc)
{
    if (!lt_cpu_avx512_gemm() || N1 < 0 || N2 < 0 || N1 + N2 < NR || M < 4 || K < 1)
        return false;
    float *buf = buffers();
    if (!buf)
        return false;
    bsrc bs = {.B = B1, .ldb = ldb1, .B2 = N2 > 0 ? B2 : NULL, .ldb2 = ldb2, .n1 = N1};
    run(ta, M, N1 + N2, K, alpha, A, lda, &bs, beta, C, ldc, buf, buf + MC * KC);
    return true;
}

#else

bool lt_sgemm_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    return false;
}

bool lt_sgemm_avx512_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                         float *C, int64_t ldc)
{
    return false;
}

#endif
