/* The convolution panels of nn_conv_panels.c for CPUs with AVX2 and FMA
 * but no AVX-512: float32 2-D convolutions and their filter gradients as
 * one product over the batch, with no column matrix in memory.
 *
 * Forward: y's columns (image, position) 16 at a time; each panel of the
 * im2col matrix [C KH KW, 16] is built straight from the images into a
 * small buffer, in the layout the register tile reads, and a tile holds 6
 * output channels by the panel's 16 columns in 12 ymm accumulators over
 * the whole sum (avx2_tile.h). Filter gradient: tiles of 6 output
 * channels by 16 taps, the sum over the batch's positions in registers,
 * chunk by chunk of KCOLS positions.
 *
 * Loads that fall partly outside an image row are masked loads (fast on
 * AMD, unlike masked stores, which are not used); a masked-off lane reads
 * as +0, and the pieces of a panel row cover disjoint lanes, so they are
 * merged with a bitwise or. Every output is one tile's sum in the same
 * order whatever the thread count, so results repeat bit for bit. */
#include "nn_util.h"
#include "nn_panels.h"
#include <omp.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "avx2_tail.h"
#include "avx2_tile.h"

#define MR LT_AVX2_MR /* output channels a tile (6) */
#define NR LT_AVX2_NR /* columns a panel (16) */
#define HALF 8
#define MAX_SEGS (NR + 2)
#define AVX2 __attribute__((target("avx2,fma")))

/* ---- forward ---- */

/* One segment's stretch for one tap in one half: lane l reads the channel
 * plane at off + s l (s the column stride, 1 or 2); ma masks the loaded
 * positions 0..7 that belong to the segment and lie inside the image row,
 * mb positions 8..15 (stride 2 only). */
typedef struct piece {
    __m256i ma, mb;
    int64_t off;
} piece;

/* For each tap t and half h, the pieces [first[2 t + h], first[2 t + h +
 * 1]); a segment whose row lies in the padding has none */
AVX2 static void pieces_of(const lt_nn_geom *g, int64_t plane, int64_t C, const lt_panel_seg *sg, int nseg, piece *pc,
                      int *first)
{
    int64_t H = g->img[0], W = g->img[1], KH = g->k[0], KW = g->k[1], sw = g->s[1];
    int cnt = 0;
    for (int64_t ky = 0; ky < KH; ky++)
        for (int64_t kx = 0; kx < KW; kx++)
            for (int h = 0; h < 2; h++) {
                first[2 * (ky * KW + kx) + h] = cnt;
                for (int q = 0; q < nseg; q++) {
                    const lt_panel_seg *s = &sg[q];
                    int64_t at = s->lane - HALF * h;
                    if (at < 0 || at >= HALF)
                        continue;
                    int64_t iy = s->oy * g->s[0] + ky * g->d[0] - g->pb[0];
                    if (iy < 0 || iy >= H)
                        continue;
                    int64_t p = s->ox * sw + kx * g->d[1] - g->pb[1], p0 = p - sw * at;
                    /* loaded positions j (columns p0 + j) the segment needs, inside the row */
                    int64_t lo = sw * at, hi = sw * (at + s->n - 1) + 1;
                    lo = lo > -p0 ? lo : -p0;
                    hi = hi < W - p0 ? hi : W - p0;
                    if (hi <= lo)
                        continue; /* wholly in the padding */
                    pc[cnt].ma = lt_avx2_lanes(lo, hi);
                    pc[cnt].mb = lt_avx2_lanes(lo - HALF, hi - HALF);
                    pc[cnt].off = s->img * C * plane + iy * W + p0;
                    cnt++;
                }
            }
    first[2 * KH * KW] = cnt;
}

/* lanes 0..7 of the even positions of the 16 floats a, b */
AVX2 static inline __m256 evens(__m256 a, __m256 b)
{
    __m256 v = _mm256_shuffle_ps(a, b, 0x88); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xd8));
}

/* The panel [R, NR] of the im2col matrix from its pieces (x [n, C, H,
 * W]); lanes without a column are 0. pb is 32-byte aligned. */
AVX2 static void pack_panel(const lt_nn_geom *g, int64_t C, const float *x, const piece *pc, const int *first,
                            float *pb)
{
    int64_t plane = g->img[0] * g->img[1], K = g->k[0] * g->k[1];
    bool two = g->s[1] == 2;
    for (int64_t t = 0; t < K; t++) {
        const piece *p0 = pc + first[2 * t], *p1 = pc + first[2 * t + 1], *p2 = pc + first[2 * t + 2];
        float *d = pb + t * NR;
        const float *xc = x;
        for (int64_t c = 0; c < C; c++, d += K * NR, xc += plane) {
            __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
            if (!two) {
                for (const piece *p = p0; p < p1; p++)
                    lo = _mm256_or_ps(lo, _mm256_maskload_ps(xc + p->off, p->ma));
                for (const piece *p = p1; p < p2; p++)
                    hi = _mm256_or_ps(hi, _mm256_maskload_ps(xc + p->off, p->ma));
            } else {
                for (const piece *p = p0; p < p1; p++)
                    lo = _mm256_or_ps(lo, evens(_mm256_maskload_ps(xc + p->off, p->ma),
                                                _mm256_maskload_ps(xc + p->off + HALF, p->mb)));
                for (const piece *p = p1; p < p2; p++)
                    hi = _mm256_or_ps(hi, evens(_mm256_maskload_ps(xc + p->off, p->ma),
                                                _mm256_maskload_ps(xc + p->off + HALF, p->mb)));
            }
            _mm256_store_ps(d, lo);
            _mm256_store_ps(d + HALF, hi);
        }
    }
}

/* The tile's sums (avx2_tile.h) into out [MR][NR]: the accumulators stay
 * in registers only while their indices are constants, so the callers,
 * which pick rows and halves at run time, read them from here */
AVX2 static void tile(int64_t kc, const float *pa, const float *pb, float *out)
{
    __m256 acc[MR][2];
    lt_avx2_tile_sums(kc, pa, pb, acc);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        _mm256_store_ps(out + r * NR, acc[r][0]);
        _mm256_store_ps(out + r * NR + HALF, acc[r][1]);
    }
}

/* One panel: every row tile, its rows into y [n, M, L] by the output
 * segments os, the bias added */
AVX2 static void panel_out(int64_t M, int64_t R, int64_t L, const float *pa, const float *pb, const float *bias,
                           const lt_panel_seg *os, int nos, float *y)
{
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t p = 0; p < (M + MR - 1) / MR; p++) {
        _Alignas(32) float acc[MR * NR];
        tile(R, pa + p * R * MR, pb, acc);
        for (int64_t i = 0; i < MR && p * MR + i < M; i++) {
            int64_t o = p * MR + i;
            __m256 bv = _mm256_set1_ps(bias ? bias[o] : 0.0f);
            for (int q = 0; q < nos; q++) {
                const lt_panel_seg *s = &os[q];
                int h = s->lane >= HALF;
                int64_t at = s->lane - HALF * h;
                __m256 v = _mm256_add_ps(_mm256_load_ps(acc + i * NR + HALF * h), bv);
                if (at) /* the segment's lanes down to lane 0 */
                    v = _mm256_permutevar8x32_ps(v, _mm256_add_epi32(idx, _mm256_set1_epi32((int)at)));
                lt_avx2_store_first(y + (s->img * M + o) * L + s->pos, v, (int)s->n);
            }
        }
    }
}

lt_status lt_nn_conv_panels_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                                 const float *w, const float *bias, float *y)
{
    int64_t OW = g->grid[1], L = g->grid[0] * OW, R = c * g->k[0] * g->k[1], ncols = n * L;
    int64_t npan = (ncols + NR - 1) / NR, mp = (m + MR - 1) / MR;
    int nth = omp_get_max_threads();
    bool parallel = nth > 1 && npan > 1 && 2.0 * (double)ncols * (double)m * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (npan < nth ? (int)npan : nth) : 1;
    float *pa = lt_k_scratch(k, sizeof(float) * (size_t)(mp * MR * R));
    float *pbs = lt_k_scratch(k, sizeof(float) * (size_t)(R * NR * nt + 8));
    int64_t K = g->k[0] * g->k[1], per = MAX_SEGS * K; /* a tap's pieces, both halves */
    size_t tab_bytes = (sizeof(piece) * (size_t)per + sizeof(int) * (size_t)(2 * K + 1) + 63) / 64 * 64;
    char *tabs = lt_k_scratch(k, tab_bytes * (size_t)nt + 32);
    if (!pa || !pbs || !tabs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution panels of %lld rows)", (long long)R);
    /* panel buffers and piece tables 32-byte aligned (aligned stores; the masks) */
    pbs = (float *)(((uintptr_t)pbs + 31) & ~(uintptr_t)31);
    tabs = (char *)(((uintptr_t)tabs + 31) & ~(uintptr_t)31);
    /* a copy of the weights: on one thread, so that no thread waits at a
     * barrier for one the system has not scheduled */
    lt_panel_pack_weights(w, m, R, MR, pa, 0, mp);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *pb = pbs + R * NR * t;
        piece *pc = (piece *)(tabs + tab_bytes * (size_t)t);
        int *first = (int *)(pc + per);
        lt_panel_seg in[MAX_SEGS], out[MAX_SEGS];
        /* a few panels at a time to whichever thread is free; every output
         * is one tile's, so the results do not depend on who takes what */
#pragma omp for schedule(dynamic, 8)
        for (int64_t q = 0; q < npan; q++) {
            int nin = lt_panel_segments(q * NR, ncols, L, OW, false, HALF, in);
            int nout = lt_panel_segments(q * NR, ncols, L, OW, true, HALF, out);
            pieces_of(g, g->img[0] * g->img[1], c, in, nin, pc, first);
            pack_panel(g, c, x, pc, first, pb);
            panel_out(m, R, L, pa, pb, bias, out, nout, y);
        }
    }
    return LT_OK;
}

/* ---- the filter gradient: dW [m, R] = sum over the batch's positions j of
 * dy[:, j] (x) column j of the im2col matrix ---- */

/* positions a chunk: the chunk's panel of 16 taps (256 KiB) stays in L2 */
#define KCOLS 4096

/* One run of panel taps for one window position: lanes `mask` of a half
 * read the image from offset `off` (relative to the image's start) shifted
 * by the lane. */
typedef struct run_at {
    __m256i mask;
    int64_t off;
} run_at;

/* the runs of taps [r0, r0 + NR) (clipped to R) at every grid position of
 * one image: runs of position pos and half h are [first[2 pos + h],
 * first[2 pos + h + 1]) */
AVX2 static void runs_of(const lt_nn_geom *g, int64_t C, int64_t r0, run_at *ru, int *first)
{
    int64_t H = g->img[0], W = g->img[1], KH = g->k[0], KW = g->k[1], OW = g->grid[1], L = g->grid[0] * OW;
    int64_t R = C * KH * KW, r1 = r0 + NR < R ? r0 + NR : R;
    int cnt = 0;
    for (int64_t pos = 0; pos < L; pos++) {
        int64_t oy = pos / OW, ox = pos % OW;
        for (int h = 0; h < 2; h++) {
            first[2 * pos + h] = cnt;
            int64_t lo = r0 + HALF * h, hi = lo + HALF < r1 ? lo + HALF : r1;
            for (int64_t r = lo; r < hi;) {
                int64_t c = r / (KH * KW), ky = r / KW % KH, kx = r % KW;
                int64_t n = KW - kx < hi - r ? KW - kx : hi - r, at = r - lo;
                int64_t iy = oy * g->s[0] + ky * g->d[0] - g->pb[0], ix = ox * g->s[1] + kx - g->pb[1];
                if (iy >= 0 && iy < H) {
                    /* lane at + e reads column ix + e */
                    int64_t e0 = -ix > 0 ? -ix : 0, e1 = W - ix < n ? W - ix : n;
                    if (e1 > e0) {
                        ru[cnt].mask = lt_avx2_lanes(at + e0, at + e1);
                        ru[cnt].off = (c * H + iy) * W + ix - at;
                        cnt++;
                    }
                }
                r += n;
            }
        }
    }
    first[2 * L] = cnt;
}

/* dy [n, m, L] -> panels of MR channels over all positions: pa[(p N + j)
 * MR + i] = dy[j / L, p MR + i, j % L], 0 past m. Eight positions at a
 * time through a transpose, each position's 8 lanes stored in order: the
 * 2 past its MR land on the next position's, stored after (and the last
 * on 8 floats of slack past pa). */
AVX2 static void pack_dy(const float *dy, int64_t n, int64_t m, int64_t L, float *pa)
{
    int64_t N = n * L;
    for (int64_t p = 0; p < (m + MR - 1) / MR; p++) {
        int64_t rows = m - p * MR < MR ? m - p * MR : MR;
        for (int64_t img = 0; img < n; img++) {
            float *d = pa + (p * N + img * L) * MR;
            const float *s = dy + (img * m + p * MR) * L;
            int64_t pos = 0;
            for (; pos + 8 <= L; pos += 8) {
                __m256 r[8];
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++)
                    r[i] = i < rows ? _mm256_loadu_ps(s + i * L + pos) : _mm256_setzero_ps();
                lt_avx2_tr8(r);
#pragma GCC unroll 8
                for (int q = 0; q < 8; q++)
                    _mm256_storeu_ps(d + (pos + q) * MR, r[q]);
            }
            for (; pos < L; pos++)
                for (int64_t i = 0; i < MR; i++)
                    d[pos * MR + i] = i < rows ? s[i * L + pos] : 0.0f;
        }
    }
}

/* columns [j0, j1) of the panel of taps from runs ru (first) into pb [j1 - j0][NR] */
AVX2 static void pack_rows(const float *x, int64_t C, int64_t plane, int64_t L, const run_at *ru, const int *first,
                           int64_t j0, int64_t j1, float *pb)
{
    for (int64_t j = j0; j < j1; j++, pb += NR) {
        int64_t img = j / L, pos = j % L;
        const float *xi = x + img * C * plane;
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        for (const run_at *r = ru + first[2 * pos], *e = ru + first[2 * pos + 1]; r < e; r++)
            lo = _mm256_or_ps(lo, _mm256_maskload_ps(xi + r->off, r->mask));
        for (const run_at *r = ru + first[2 * pos + 1], *e = ru + first[2 * pos + 2]; r < e; r++)
            hi = _mm256_or_ps(hi, _mm256_maskload_ps(xi + r->off, r->mask));
        _mm256_store_ps(pb, lo);
        _mm256_store_ps(pb + HALF, hi);
    }
}

/* dW's columns [r0, r0 + NR) (clipped to R), every row tile */
AVX2 static void filter_taps(const lt_nn_geom *g, int64_t c, int64_t m, int64_t N, int64_t kc, const float *pa,
                             const float *x, int64_t r0, run_at *ru, int *first, float *pb, float *dw)
{
    int64_t L = g->grid[0] * g->grid[1], R = c * g->k[0] * g->k[1], plane = g->img[0] * g->img[1];
    int64_t nr = R - r0 < NR ? R - r0 : NR, mp = (m + MR - 1) / MR;
    int n0 = nr < HALF ? (int)nr : HALF, n1 = (int)nr - n0;
    __m256i m0 = lt_avx2_lanes(0, n0), m1 = lt_avx2_lanes(0, n1);
    runs_of(g, c, r0, ru, first);
    for (int64_t j0 = 0; j0 < N; j0 += kc) {
        int64_t j1 = j0 + kc < N ? j0 + kc : N;
        pack_rows(x, c, plane, L, ru, first, j0, j1, pb);
        for (int64_t p = 0; p < mp; p++) {
            _Alignas(32) float acc[MR * NR];
            tile(j1 - j0, pa + (p * N + j0) * MR, pb, acc);
            for (int64_t i = 0; i < MR && p * MR + i < m; i++) {
                float *d = dw + (p * MR + i) * R + r0;
                __m256 v0 = _mm256_load_ps(acc + i * NR), v1 = _mm256_load_ps(acc + i * NR + HALF);
                if (j0) {
                    v0 = _mm256_add_ps(_mm256_maskload_ps(d, m0), v0);
                    v1 = _mm256_add_ps(_mm256_maskload_ps(d + HALF, m1), v1);
                }
                lt_avx2_store_first(d, v0, n0);
                if (n1)
                    lt_avx2_store_first(d + HALF, v1, n1);
            }
        }
    }
}

lt_status lt_nn_conv_panels_filter_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m,
                                        const float *dy, const float *x, float *dw)
{
    int64_t L = g->grid[0] * g->grid[1], R = c * g->k[0] * g->k[1], N = n * L;
    int64_t nq = (R + NR - 1) / NR, mp = (m + MR - 1) / MR, kc = N < KCOLS ? N : KCOLS;
    int nth = omp_get_max_threads();
    bool parallel = nth > 1 && nq > 1 && 2.0 * (double)N * (double)m * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (nq < nth ? (int)nq : nth) : 1;
    int64_t maxruns = 2 * L * (HALF + 2); /* a half holds at most 8 runs (plus cuts) */
    size_t per = (sizeof(float) * (size_t)(kc * NR) + sizeof(run_at) * (size_t)maxruns +
                  sizeof(int) * (size_t)(2 * L + 1) + 127) / 64 * 64;
    /* pa with the slack pack_dy's last 8-lane store lands on */
    float *pa = lt_k_scratch(k, sizeof(float) * (size_t)(mp * MR * N + 8));
    char *bufs = lt_k_scratch(k, per * (size_t)nt + 64);
    if (!pa || !bufs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (filter gradient panels of %lld columns)", (long long)kc);
    bufs = (char *)(((uintptr_t)bufs + 63) & ~(uintptr_t)63);
    pack_dy(dy, n, m, L, pa);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        char *mine = bufs + per * (size_t)omp_get_thread_num();
        float *pb = (float *)mine;
        run_at *ru = (run_at *)(pb + kc * NR);
        int *first = (int *)(ru + maxruns);
        /* tap panels to whichever thread is free; each dW element is one
         * tile's, summed in the same order whatever the thread count */
#pragma omp for schedule(dynamic, 1)
        for (int64_t q = 0; q < nq; q++)
            filter_taps(g, c, m, N, kc, pa, x, q * NR, ru, first, pb, dw);
    }
    return LT_OK;
}

#else

lt_status lt_nn_conv_panels_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                                 const float *w, const float *bias, float *y)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution panels need AVX2 or AVX-512");
}

lt_status lt_nn_conv_panels_filter_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m,
                                        const float *dy, const float *x, float *dw)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution panels need AVX2 or AVX-512");
}

#endif
