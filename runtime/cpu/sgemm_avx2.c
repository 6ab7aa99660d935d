/* float32 GEMM with AVX2 and FMA kernels for CPUs without AVX-512 (the
 * build targets baseline x86-64; sgemm_avx512.c is the wide form). The
 * same blocking as there in 8-lane registers: op(B) packed in panels of NR
 * columns for a KC slice of K, op(A) packed in panels of MR rows (alpha
 * folded in) or, with alpha 1, read in place; an MR x NR register tile of
 * accumulators, 6 x 16 here (12 of the 16 ymm registers, two for op(B)'s
 * row and one for a broadcast). Transposed operands are packed through
 * 8x8 in-register transposes. beta is applied as each tile is stored, so
 * there is no separate pass over C (OpenBLAS's sgemm_beta), and partial
 * tiles store with plain 8/4/2/1-lane stores: AMD's masked stores are
 * microcoded. linalg_gemm.c routes float products here and keeps OpenBLAS
 * for the shapes this does no better on. */
#include "linalg_util.h"
#include "cpu_features.h"
#include "thread_buf.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "avx2_tail.h"
#include "avx2_tile.h"

#define MR LT_AVX2_MR
#define NR LT_AVX2_NR
/* KC x NR of op(B) (16 KiB) stays in Zen 3's and Haswell's 32 KiB L1
 * while a block's MR-row panels of op(A) (MC x KC, 144 KiB) stream from
 * L2; NC bounds the packed op(B) (2 MiB, L3) */
#define KC 256
#define MC 144
#define NC 2048
/* floats past a packed A panel's end: its last row is stored 8 lanes wide */
#define SLACK 8
#define AVX2 __attribute__((target("avx2,fma")))

/* ---- packing ---- */

/* 8 rows from src (row stride lds) at k [k0, k0 + n) into r[0..7],
 * times alpha (rows from `rows` on zero), transposed: r[k] holds k0 + k
 * of each row */
AVX2 static inline __attribute__((always_inline)) void load_tr8(__m256 *r, const float *src, int64_t lds,
                                                                 int64_t rows, int64_t k0, int64_t n, __m256 va,
                                                                 bool scale)
{
    if (n == 8) {
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++)
            r[c] = c < rows ? _mm256_loadu_ps(src + c * lds + k0) : _mm256_setzero_ps();
    } else {
        __m256i m = lt_avx2_lanes(0, n);
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++)
            r[c] = c < rows ? _mm256_maskload_ps(src + c * lds + k0, m) : _mm256_setzero_ps();
    }
    if (scale)
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++)
            r[c] = _mm256_mul_ps(va, r[c]);
    lt_avx2_tr8(r);
}

/* dst[k * MR + c] = alpha src[c * lds + k] for c < rows, k < kc (rows <=
 * MR; the rest of the panel's rows zero). Each k stores 8 lanes, in order
 * of k: the 2 lanes past a row land on the next one, which is stored
 * after, and the last row's on the slack past the panel. */
AVX2 static void pack_a_rows(const float *src, int64_t lds, int64_t rows, int64_t kc, float *dst, float alpha)
{
    __m256 va = _mm256_set1_ps(alpha);
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        int64_t n = kc - k0 < 8 ? kc - k0 : 8;
        __m256 r[8];
        load_tr8(r, src, lds, rows, k0, n, va, alpha != 1.0f);
        if (n == 8) {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps(dst + (k0 + k) * MR, r[k]);
        } else {
            for (int64_t k = 0; k < n; k++)
                _mm256_storeu_ps(dst + (k0 + k) * MR, r[k]);
        }
    }
}

/* dst[k * NR + c] = src[c * lds + k] for c < rows, k < kc (rows <= NR; the
 * rest zero): both halves of a k's 16 columns at once, so each k's row of
 * the panel is written whole; next, when not NULL, is the next panel's
 * src */
AVX2 static void pack_b_rows(const float *src, int64_t lds, int64_t rows, int64_t kc, float *dst, const float *next)
{
    __m256 one = _mm256_set1_ps(1.0f);
    int64_t r1 = rows > 8 ? rows - 8 : 0;
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        int64_t n = kc - k0 < 8 ? kc - k0 : 8;
        /* 16 strided rows are more streams than the hardware prefetcher
         * follows, and an operand too big for L2 waits on L3 for each
         * line: fetch the next panel's lines while this one is packed */
        if (next && k0 % 16 == 0)
#pragma GCC unroll 16
            for (int c = 0; c < NR; c++)
                _mm_prefetch((const char *)(next + c * lds + k0), _MM_HINT_T0);
        __m256 lo[8], hi[8];
        load_tr8(lo, src, lds, rows < 8 ? rows : 8, k0, n, one, false);
        load_tr8(hi, src + 8 * lds, lds, r1, k0, n, one, false);
        if (n == 8) {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                _mm256_storeu_ps(dst + (k0 + k) * NR, lo[k]);
                _mm256_storeu_ps(dst + (k0 + k) * NR + 8, hi[k]);
            }
        } else {
            for (int64_t k = 0; k < n; k++) {
                _mm256_storeu_ps(dst + (k0 + k) * NR, lo[k]);
                _mm256_storeu_ps(dst + (k0 + k) * NR + 8, hi[k]);
            }
        }
    }
}

/* op(A) rows [i0, i0 + mc), k [k0, k0 + kc), times alpha, into panels of
 * MR rows: row r of panel p at k is pa[(p * kc + k) * MR + r] (zero past
 * mc); each row of a panel is stored 8 lanes wide, spilling onto the next
 * one as in pack_a_rows */
AVX2 static void pack_a(const float *A, int64_t lda, bool ta, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                        float alpha, float *pa)
{
    __m256 va = _mm256_set1_ps(alpha);
    for (int64_t p = 0; p < mc; p += MR) {
        int64_t mr = mc - p < MR ? mc - p : MR;
        float *dst = pa + p * kc;
        if (ta) {
            /* A is [K, M]: the panel's rows lie side by side in A's row k */
            __m256i m = lt_avx2_lanes(0, mr);
            const float *src = A + k0 * lda + i0 + p;
            if (alpha == 1.0f)
                for (int64_t k = 0; k < kc; k++)
                    _mm256_storeu_ps(dst + k * MR, _mm256_maskload_ps(src + k * lda, m));
            else
                for (int64_t k = 0; k < kc; k++)
                    _mm256_storeu_ps(dst + k * MR, _mm256_mul_ps(va, _mm256_maskload_ps(src + k * lda, m)));
        } else {
            pack_a_rows(A + (i0 + p) * lda + k0, lda, mr, kc, dst, alpha);
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

/* columns [j, j + nr) of [B | B2] at rows [k0, k0 + kc) into a panel, one
 * column at a time (the one panel across the seam) */
static void pack_seam(const bsrc *b, int64_t k0, int64_t kc, int64_t j, int64_t nr, float *dst)
{
    for (int64_t k = 0; k < kc; k++)
        for (int64_t c = 0; c < NR; c++)
            dst[k * NR + c] = c >= nr         ? 0.0f
                              : j + c < b->n1 ? b->B[(k0 + k) * b->ldb + j + c]
                                              : b->B2[(k0 + k) * b->ldb2 + j + c - b->n1];
}

/* B's rows [k0, k0 + kc), columns [j, j + ncols) (B not transposed) into
 * the panels from dst on: 8 rows at a time across all the panels, so that
 * the reads run along B's rows (a wide B's rows lie a page or more apart:
 * one panel's kc rows at a time would touch kc pages) */
AVX2 static void pack_b_plain(const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t j, int64_t ncols,
                              float *dst)
{
    int64_t full = ncols / NR * NR, rest = ncols - full;
    __m256i m0 = lt_avx2_lanes(0, rest), m1 = lt_avx2_lanes(0, rest > 8 ? rest - 8 : 0);
    for (int64_t kb = 0; kb < kc; kb += 8) {
        int64_t kn = kc - kb < 8 ? kc - kb : 8;
        const float *src = B + (k0 + kb) * ldb + j;
        for (int64_t q = 0; q < full; q += NR) {
            float *d = dst + q * kc + kb * NR;
            for (int64_t k = 0; k < kn; k++) {
                _mm256_storeu_ps(d + k * NR, _mm256_loadu_ps(src + k * ldb + q));
                _mm256_storeu_ps(d + k * NR + 8, _mm256_loadu_ps(src + k * ldb + q + 8));
            }
        }
        if (rest) {
            float *d = dst + full * kc + kb * NR;
            for (int64_t k = 0; k < kn; k++) {
                _mm256_storeu_ps(d + k * NR, _mm256_maskload_ps(src + k * ldb + full, m0));
                _mm256_storeu_ps(d + k * NR + 8, _mm256_maskload_ps(src + k * ldb + full + 8, m1));
            }
        }
    }
}

/* op(B) k [k0, k0 + kc), columns [j0, j0 + nc) into panels of NR columns:
 * column c of panel q at k is pb[(q * kc + k) * NR + c] (zero past nc) */
AVX2 static void pack_b(const bsrc *bs, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float *pb)
{
    if (bs->tb) {
        /* B is [N, K]: column c of op(B) is B's row j + c */
        for (int64_t q = 0; q < nc; q += NR) {
            int64_t nr = nc - q < NR ? nc - q : NR;
            const float *src = bs->B + (j0 + q) * bs->ldb + k0;
            /* the next panel, when it is a whole one */
            const float *next = q + 2 * NR <= nc ? src + NR * bs->ldb : NULL;
            pack_b_rows(src, bs->ldb, nr, kc, pb + q * kc, next);
        }
        return;
    }
    if (!bs->B2) {
        pack_b_plain(bs->B, bs->ldb, k0, kc, j0, nc, pb);
        return;
    }
    /* [B | B2]: the whole panels in B, the one across the seam, those in B2 */
    int64_t in1 = bs->n1 - j0 <= 0 ? 0 : bs->n1 - j0 >= nc ? nc : (bs->n1 - j0) / NR * NR;
    if (in1 > 0)
        pack_b_plain(bs->B, bs->ldb, k0, kc, j0, in1, pb);
    int64_t q = in1;
    if (q < nc && j0 + q < bs->n1) {
        pack_seam(bs, k0, kc, j0 + q, nc - q < NR ? nc - q : NR, pb + q * kc);
        q += NR;
    }
    if (q < nc)
        pack_b_plain(bs->B2, bs->ldb2, k0, kc, j0 + q - bs->n1, nc - q, pb + q * kc);
}

/* ---- the register tile ---- */

/* 8 lanes (the first n of them, n <= 8) of a tile row into C: written
 * (mode 0), added (mode 1) or added to beta C (mode 2) */
AVX2 static inline __attribute__((always_inline)) void store8(float *c, __m256 v, int64_t n, int mode, __m256 vb)
{
    if (n >= 8) {
        if (mode == 1)
            v = _mm256_add_ps(v, _mm256_loadu_ps(c));
        else if (mode == 2)
            v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), v);
        _mm256_storeu_ps(c, v);
    } else if (n > 0) {
        if (mode) {
            __m256 old = _mm256_maskload_ps(c, lt_avx2_lanes(0, n));
            v = mode == 1 ? _mm256_add_ps(v, old) : _mm256_fmadd_ps(vb, old, v);
        }
        lt_avx2_store_first(c, v, (int)n);
    }
}

/* A tile's accumulators into its mr x nr corner of C (mode as store8) */
AVX2 static inline __attribute__((always_inline)) void store_tile(__m256 acc[MR][2], float *c, int64_t ldc,
                                                                   int64_t mr, int64_t nr, int mode, float beta)
{
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            break;
        store8(c + r * ldc, acc[r][0], nr, mode, vb);
        store8(c + r * ldc + 8, acc[r][1], nr - 8, mode, vb);
    }
}

/* the tile's rows of C towards L1 while its products run: they are
 * stored (and read, past the first slice of K) only at the end, and a
 * block of C is not revisited before its next slice */
static inline __attribute__((always_inline)) void prefetch_c(const float *c, int64_t ldc, int64_t mr)
{
    for (int64_t r = 0; r < mr; r++) {
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + 15, 1, 3);
    }
}

/* C[mr, nr] of the tile from packed panels: mode 0 stores the product, 1
 * adds it to C, 2 stores beta C + product */
AVX2 static void tile(int64_t kc, const float *pa, const float *pb, float *c, int64_t ldc, int64_t mr, int64_t nr,
                      int mode, float beta)
{
    prefetch_c(c, ldc, mr);
    __m256 acc[MR][2];
    lt_avx2_tile_sums(kc, pa, pb, acc);
    store_tile(acc, c, ldc, mr, nr, mode, beta);
}

/* The tile with op(A) read in place: a(r, k) at a0 + r * rs + k * ks (A
 * itself: rs = lda, ks = 1; A transposed: rs = 1, ks = lda), one broadcast
 * per row and k, the same sums as from a packed panel; rows past mr repeat
 * row mr - 1 and are not stored. Saves packing op(A) (through transposes
 * when A is not transposed). */
AVX2 static void tile_direct(int64_t kc, const float *a0, int64_t rs, int64_t ks, const float *pb, float *c,
                             int64_t ldc, int64_t mr, int64_t nr, int mode, float beta)
{
    const float *ar[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
        ar[r] = a0 + (r < mr ? r : mr - 1) * rs;
    prefetch_c(c, ldc, mr);
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(pb + k * NR), b1 = _mm256_loadu_ps(pb + k * NR + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m256 ak = _mm256_broadcast_ss(ar[r] + k * ks);
            acc[r][0] = _mm256_fmadd_ps(ak, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(ak, b1, acc[r][1]);
        }
    }
    store_tile(acc, c, ldc, mr, nr, mode, beta);
}

/* ---- driver ---- */

/* this thread's packing buffers (thread_buf.h); nothing in them outlives
 * a call, so a chunk's bits do not depend on the thread */
#define PA_LEN (MC * KC + SLACK)
#define PB_LEN (KC * (NC + NR))

static float *buffers(void)
{
    return lt_thread_buf(LT_THREAD_BUF_SGEMM, sizeof(float) * (PA_LEN + PB_LEN + (64 - PA_LEN % 64)));
}

/* K in slices of equal depth (multiples of 8, the transposes' height)
 * rather than KC-deep ones and a thin rest: each slice is a pass over the
 * tiles of C */
static int64_t k_step(int64_t K)
{
    int64_t nk = (K + KC - 1) / KC, kstep = ((K + nk - 1) / nk + 7) / 8 * 8;
    return kstep > KC ? KC : kstep;
}

/* M rounded up to whole panels: the rows of a slice of all of op(A) packed
 * (lt_sgemm_avx2_pack_a) */
static int64_t m_pad(int64_t M) { return (M + MR - 1) / MR * MR; }

/* alpha 1: op(A) read in place, no packed panels; a transposed A only
 * when its rows are short (a tile's KC rows of A then span few pages) */
static bool reads_a_in_place(bool ta, int64_t lda, float alpha) { return alpha == 1.0f && (!ta || lda <= 128); }

/* The product from panels: op(A) read in place, packed a block at a time
 * into pa, or (pre, not NULL) taken from lt_sgemm_avx2_pack_a's panels of
 * all of op(A), the same values pack_a would give */
AVX2 static void run(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const bsrc *bs, float beta, float *C, int64_t ldc, float *pa, float *pb, const float *pre)
{
    bool direct = !pre && reads_a_in_place(ta, lda, alpha);
    int64_t kstep = k_step(K), mpad = m_pad(M);
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
                const float *pab = pa;
                if (pre)
                    pab = pre + mpad * k0 + i0 * kc; /* panels in order, slice after slice */
                else
                    pack_a(A, lda, ta, i0, mc, k0, kc, alpha, pa);
                for (int64_t q = 0; q < nc; q += NR)
                    for (int64_t p = 0; p < mc; p += MR)
                        tile(kc, pab + p * kc, pb + q * kc, C + (i0 + p) * ldc + j0 + q, ldc,
                             mc - p < MR ? mc - p : MR, nc - q < NR ? nc - q : NR, mode, beta);
            }
        }
    }
}

/* run with this thread's packing buffers: false without AVX2 and FMA or
 * the buffers (the entry points have checked the shape) */
static bool start(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                  const bsrc *bs, float beta, float *C, int64_t ldc, const float *pre)
{
    float *buf = lt_cpu_avx2_gemm() ? buffers() : NULL;
    if (!buf)
        return false;
    run(ta, M, N, K, alpha, A, lda, bs, beta, C, ldc, buf, buf + PA_LEN + (64 - PA_LEN % 64), pre);
    return true;
}

bool lt_sgemm_avx2_here(void) { return lt_cpu_avx2_gemm() && !lt_cpu_avx512(); }

bool lt_sgemm_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    bsrc bs = {.B = B, .ldb = ldb, .tb = tb};
    return N >= 1 && M >= 1 && K >= 1 && start(ta, M, N, K, alpha, A, lda, &bs, beta, C, ldc, NULL);
}

bool lt_sgemm_avx2_packs_a(bool ta, int64_t lda, float alpha) { return !reads_a_in_place(ta, lda, alpha); }

int64_t lt_sgemm_avx2_packed_a_len(int64_t M, int64_t K) { return m_pad(M) * K + SLACK; }

bool lt_sgemm_avx2_pack_a(bool ta, int64_t M, int64_t K, float alpha, const float *A, int64_t lda, float *pa)
{
    if (!lt_cpu_avx2_gemm() || M < 1 || K < 1)
        return false;
    int64_t kstep = k_step(K), mpad = m_pad(M);
    /* slice after slice, panel after panel: each 8-lane store past a
     * panel's rows lands on what is packed after it (or the slack) */
    for (int64_t k0 = 0; k0 < K; k0 += kstep)
        pack_a(A, lda, ta, 0, M, k0, K - k0 < kstep ? K - k0 : kstep, alpha, pa + mpad * k0);
    return true;
}

bool lt_sgemm_avx2_prepacked(const float *pa, int64_t M, int64_t N, int64_t K, bool tb, const float *B,
                             int64_t ldb, float beta, float *C, int64_t ldc)
{
    bsrc bs = {.B = B, .ldb = ldb, .tb = tb};
    return N >= 1 && M >= 1 && K >= 1 && start(false, M, N, K, 1.0f, NULL, 0, &bs, beta, C, ldc, pa);
}

bool lt_sgemm_avx2_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                       float *C, int64_t ldc)
{
    if (N1 < 0 || N2 < 0 || N1 + N2 < 1 || M < 1 || K < 1)
        return false;
    bsrc bs = {.B = B1, .ldb = ldb1, .B2 = N2 > 0 ? B2 : NULL, .ldb2 = ldb2, .n1 = N1};
    return start(ta, M, N1 + N2, K, alpha, A, lda, &bs, beta, C, ldc, NULL);
}

#else

bool lt_sgemm_avx2_here(void) { return false; }

bool lt_sgemm_avx2_packs_a(bool ta, int64_t lda, float alpha) { return false; }

int64_t lt_sgemm_avx2_packed_a_len(int64_t M, int64_t K) { return 0; }

bool lt_sgemm_avx2_pack_a(bool ta, int64_t M, int64_t K, float alpha, const float *A, int64_t lda, float *pa)
{
    return false;
}

bool lt_sgemm_avx2_prepacked(const float *pa, int64_t M, int64_t N, int64_t K, bool tb, const float *B,
                             int64_t ldb, float beta, float *C, int64_t ldc)
{
    return false;
}

bool lt_sgemm_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    return false;
}

bool lt_sgemm_avx2_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                       float *C, int64_t ldc)
{
    return false;
}

#endif
