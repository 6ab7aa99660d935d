/* float32 2-D convolutions (one group) as one product over the whole batch
 * without a column matrix: y's columns (image, position) are taken 32 at a
 * time, and each such panel of the im2col matrix [C KH KW, 32] is written
 * straight from the images into a small buffer that stays in cache, in the
 * layout the register tile reads; the weights are laid out for the tile
 * once per call. A tile holds 8 output channels by the panel's 32 columns
 * in 16 AVX-512 accumulators over the whole sum (no partial sums go
 * through memory), and its rows go to y with the bias added.
 *
 * Building a panel row: the panel's columns fall into segments, each a run
 * of window positions along one grid row of one image; a segment's values
 * for tap (c, ky, kx) are a stretch of one image row at column stride 1 or
 * 2, loaded into the segment's lanes. Where each stretch lies is worked
 * out once a panel per tap and shared by all channels (pieces_of).
 *
 * Every output is one tile's sum over the taps in the same order whatever
 * the thread count, so results repeat bit for bit. */
#include "nn_util.h"
#include "nn_panels.h"
#include "cpu_features.h"
#include "linalg_util.h"
#include <omp.h>
#include <string.h>

#define MR 8  /* output channels a tile */
#define NR 32 /* columns a panel */
#define MAX_SEGS (NR + 2)

typedef lt_panel_seg seg;

bool lt_nn_conv_panels_usable(const lt_nn_geom *g, int64_t groups, int64_t c)
{
    /* AVX-512 here, AVX2 (nn_conv_panels_avx2.c) on CPUs without it */
    if (!(lt_cpu_avx512_gemm() || lt_sgemm_avx2_here()) || g->nsp != 2 || groups != 1 || g->s[0] < 1 ||
        g->s[1] < 1 || g->s[1] > 2 || g->d[0] < 1 || g->d[1] < 1 || g->pb[0] < 0 || g->pb[1] < 0 ||
        g->grid[0] < 1 || g->grid[1] < 1)
        return false;
    /* a 1x1 kernel with unit strides and no pads reads the images as they
     * are (no packing to save) unless its grid is small (the per-image
     * products are thin); with few taps x channels a tile's fixed costs
     * outweigh the packing saved */
    int64_t R = c * g->k[0] * g->k[1];
    bool direct = g->k[0] == 1 && g->k[1] == 1 && g->s[0] == 1 && g->s[1] == 1 && g->pb[0] == 0 && g->pb[1] == 0 &&
                  g->pe[0] == 0 && g->pe[1] == 0;
    return (!direct || g->grid[0] * g->grid[1] <= 16) && R >= 64;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* The segments of the panel of columns [col0, col0 + NR) clipped to ncols
 * (nn_panels.h) */
static int segments(int64_t col0, int64_t ncols, int64_t L, int64_t OW, bool by_image, seg *out)
{
    return lt_panel_segments(col0, ncols, L, OW, by_image, NR / 2, out);
}

/* lanes [lo, hi) of 16, clipped to 0..16 */
static inline __mmask16 lanes(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? 0 : lo;
    hi = hi > 16 ? 16 : hi;
    if (hi <= lo)
        return 0;
    return (__mmask16)((hi >= 16 ? 0xffffu : (1u << hi) - 1) & ~((1u << lo) - 1));
}

/* One segment's stretch for one tap, as lanes of the segment's half: lane
 * l reads the channel plane at off + s l (s the column stride) for the
 * lanes [at, at + n) of the segment. Unit stride: one load through a
 * pointer shifted by the lane; stride 2: two loads of the 32 floats from
 * off on and their even lanes. Masks: the loaded lanes that belong to the
 * segment and lie inside the image row (ma, mb), the segment's lanes
 * (mine). The segments of a tap whose row lies in the padding are left
 * out. */
typedef struct piece {
    int64_t off;
    __mmask16 ma, mb, mine;
} piece;

/* For each tap t and half h, the pieces [first[2 t + h], first[2 t + h + 1]) */
static void pieces_of(const lt_nn_geom *g, int64_t plane, int64_t C, const seg *sg, int nseg, piece *pc,
                      int *first)
{
    int64_t H = g->img[0], W = g->img[1], KH = g->k[0], KW = g->k[1], sw = g->s[1];
    int cnt = 0;
    for (int64_t ky = 0; ky < KH; ky++)
        for (int64_t kx = 0; kx < KW; kx++)
            for (int h = 0; h < 2; h++) {
                first[2 * (ky * KW + kx) + h] = cnt;
                for (int q = 0; q < nseg; q++) {
                    const seg *s = &sg[q];
                    int64_t at = s->lane - 16 * h;
                    if (at < 0 || at >= 16)
                        continue;
                    int64_t iy = s->oy * g->s[0] + ky * g->d[0] - g->pb[0];
                    if (iy < 0 || iy >= H)
                        continue;
                    int64_t p = s->ox * sw + kx * g->d[1] - g->pb[1], p0 = p - sw * at;
                    /* loaded positions j (columns p0 + j) the segment needs, inside the row */
                    int64_t lo = sw * at, hi = sw * (at + s->n - 1) + 1;
                    lo = lo > -p0 ? lo : -p0;
                    hi = hi < W - p0 ? hi : W - p0;
                    __mmask16 ma = lanes(lo, hi), mb = sw == 2 ? lanes(lo - 16, hi - 16) : 0;
                    if (!ma && !mb)
                        continue; /* wholly in the padding */
                    pc[cnt++] = (piece){s->img * C * plane + iy * W + p0, ma, mb, lanes(at, at + s->n)};
                }
            }
    first[2 * KH * KW] = cnt;
}

/* The panel [R, NR] of the im2col matrix from its pieces (x [n, C, H,
 * W]); lanes without a column are 0 */
AVX512 static void pack_panel(const lt_nn_geom *g, int64_t C, const float *x, const piece *pc, const int *first,
                              float *pb)
{
    int64_t plane = g->img[0] * g->img[1], K = g->k[0] * g->k[1];
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    bool two = g->s[1] == 2;
    for (int64_t t = 0; t < K; t++) {
        const piece *p0 = pc + first[2 * t], *p1 = pc + first[2 * t + 1], *p2 = pc + first[2 * t + 2];
        float *d = pb + t * NR;
        const float *xc = x;
        for (int64_t c = 0; c < C; c++, d += K * NR, xc += plane) {
            __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
            if (!two) {
                for (const piece *p = p0; p < p1; p++)
                    lo = _mm512_mask_loadu_ps(lo, p->ma, xc + p->off);
                for (const piece *p = p1; p < p2; p++)
                    hi = _mm512_mask_loadu_ps(hi, p->ma, xc + p->off);
            } else {
                for (const piece *p = p0; p < p2; p++) {
                    __m512 a = _mm512_maskz_loadu_ps(p->ma, xc + p->off);
                    __m512 b = p->mb ? _mm512_maskz_loadu_ps(p->mb, xc + p->off + 16) : _mm512_setzero_ps();
                    __m512 v = _mm512_permutex2var_ps(a, even, b);
                    if (p < p1)
                        lo = _mm512_mask_mov_ps(lo, p->mine, v);
                    else
                        hi = _mm512_mask_mov_ps(hi, p->mine, v);
                }
            }
            _mm512_store_ps(d, lo);
            _mm512_store_ps(d + 16, hi);
        }
    }
}

/* w [M, R] -> panels of MR rows (nn_panels.h) */
static void pack_weights(const float *w, int64_t M, int64_t R, float *pa, int64_t p0, int64_t p1)
{
    lt_panel_pack_weights(w, M, R, MR, pa, p0, p1);
}

/* the register tile: acc[i][h] = sum over r of pa[r MR + i] * pb[r NR + 16 h + lane] */
AVX512 static void tile(int64_t R, const float *pa, const float *pb, __m512 *out)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
    for (int64_t r = 0; r < R; r++, pa += MR, pb += NR) {
        __m512 lo = _mm512_load_ps(pb), hi = _mm512_load_ps(pb + 16), v;
        v = _mm512_set1_ps(pa[0]);
        a0 = _mm512_fmadd_ps(v, lo, a0);
        b0 = _mm512_fmadd_ps(v, hi, b0);
        v = _mm512_set1_ps(pa[1]);
        a1 = _mm512_fmadd_ps(v, lo, a1);
        b1 = _mm512_fmadd_ps(v, hi, b1);
        v = _mm512_set1_ps(pa[2]);
        a2 = _mm512_fmadd_ps(v, lo, a2);
        b2 = _mm512_fmadd_ps(v, hi, b2);
        v = _mm512_set1_ps(pa[3]);
        a3 = _mm512_fmadd_ps(v, lo, a3);
        b3 = _mm512_fmadd_ps(v, hi, b3);
        v = _mm512_set1_ps(pa[4]);
        a4 = _mm512_fmadd_ps(v, lo, a4);
        b4 = _mm512_fmadd_ps(v, hi, b4);
        v = _mm512_set1_ps(pa[5]);
        a5 = _mm512_fmadd_ps(v, lo, a5);
        b5 = _mm512_fmadd_ps(v, hi, b5);
        v = _mm512_set1_ps(pa[6]);
        a6 = _mm512_fmadd_ps(v, lo, a6);
        b6 = _mm512_fmadd_ps(v, hi, b6);
        v = _mm512_set1_ps(pa[7]);
        a7 = _mm512_fmadd_ps(v, lo, a7);
        b7 = _mm512_fmadd_ps(v, hi, b7);
    }
    out[0] = a0, out[1] = b0, out[2] = a1, out[3] = b1, out[4] = a2, out[5] = b2, out[6] = a3, out[7] = b3;
    out[8] = a4, out[9] = b4, out[10] = a5, out[11] = b5, out[12] = a6, out[13] = b6, out[14] = a7, out[15] = b7;
}

/* One panel: every row tile, its rows into y [n, M, L] by the output
 * segments os, the bias added */
AVX512 static void panel_out(int64_t M, int64_t R, int64_t L, const float *pa, const float *pb, const float *bias,
                             const seg *os, int nos, float *y)
{
    for (int64_t p = 0; p < (M + MR - 1) / MR; p++) {
        __m512 acc[2 * MR];
        tile(R, pa + p * R * MR, pb, acc);
        for (int64_t i = 0; i < MR && p * MR + i < M; i++) {
            int64_t o = p * MR + i;
            __m512 bv = _mm512_set1_ps(bias ? bias[o] : 0.0f);
            for (int q = 0; q < nos; q++) {
                const seg *s = &os[q];
                int h = s->lane >= 16;
                int64_t at = s->lane - 16 * h;
                __m512 v = _mm512_add_ps(acc[2 * i + h], bv);
                if (at)
                    v = _mm512_maskz_compress_ps(lanes(at, at + s->n), v);
                _mm512_mask_storeu_ps(y + (s->img * M + o) * L + s->pos, lanes(0, s->n), v);
            }
        }
    }
}

lt_status lt_nn_conv_panels(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y)
{
    if (!lt_cpu_avx512_gemm())
        return lt_nn_conv_panels_avx2(k, g, n, c, m, x, w, bias, y);
    int64_t OW = g->grid[1], L = g->grid[0] * OW, R = c * g->k[0] * g->k[1], ncols = n * L;
    int64_t npan = (ncols + NR - 1) / NR, mp = (m + MR - 1) / MR;
    int nth = omp_get_max_threads();
    bool parallel = nth > 1 && npan > 1 && 2.0 * (double)ncols * (double)m * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (npan < nth ? (int)npan : nth) : 1;
    float *pa = lt_k_scratch(k, sizeof(float) * (size_t)(mp * MR * R));
    /* panel buffers 64-byte aligned */
    float *pbs = lt_k_scratch(k, sizeof(float) * (size_t)(R * NR * nt + 16));
    int64_t K = g->k[0] * g->k[1], per = MAX_SEGS * K; /* a tap's pieces, both halves */
    size_t tab_bytes = (sizeof(piece) * (size_t)per + sizeof(int) * (size_t)(2 * K + 1) + 63) / 64 * 64;
    char *tabs = lt_k_scratch(k, tab_bytes * (size_t)nt);
    if (!pa || !pbs || !tabs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution panels of %lld rows)", (long long)R);
    pbs = (float *)(((uintptr_t)pbs + 63) & ~(uintptr_t)63);
    /* a copy of the weights: on one thread, so that no thread waits at a
     * barrier for one the system has not scheduled */
    pack_weights(w, m, R, pa, 0, mp);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *pb = pbs + R * NR * t;
        piece *pc = (piece *)(tabs + tab_bytes * (size_t)t);
        int *first = (int *)(pc + per);
        seg in[MAX_SEGS], out[MAX_SEGS];
        /* a few panels at a time to whichever thread is free (with the
         * other core busy one thread may get little time); every output is
         * one tile's, so the results do not depend on who takes what */
#pragma omp for schedule(dynamic, 4)
        for (int64_t q = 0; q < npan; q++) {
            int nin = segments(q * NR, ncols, L, OW, false, in), nout = segments(q * NR, ncols, L, OW, true, out);
            pieces_of(g, g->img[0] * g->img[1], c, in, nin, pc, first);
            pack_panel(g, c, x, pc, first, pb);
            panel_out(m, R, L, pa, pb, bias, out, nout, y);
        }
    }
    return LT_OK;
}

/* ---- the filter gradient: dW [m, R] = sum over the batch's positions j of
 * dy[:, j] (x) column j of the im2col matrix. Tiles of 8 output channels
 * by 32 taps, the sum over positions in registers (chunks of KCOLS
 * positions added into dW in order); dy laid out for the tile once a call,
 * and each thread builds the column panels of the taps it takes, position
 * after position, from runs of a window row's taps (unit column dilation:
 * a run of kernel columns reads a run of image columns). ---- */

#define KCOLS 8192

/* One run of panel taps for one window position: lanes `mask` of a half
 * read the image from offset `off` (relative to the image's start) shifted
 * by the lane. */
typedef struct run_at {
    int64_t off;
    __mmask16 mask;
} run_at;

/* the runs of taps [r0, r0 + NR) (clipped to R) at every grid position of
 * one image: runs of position pos and half h are [first[2 pos + h],
 * first[2 pos + h + 1]) */
static void runs_of(const lt_nn_geom *g, int64_t C, int64_t r0, run_at *ru, int *first)
{
    int64_t H = g->img[0], W = g->img[1], KH = g->k[0], KW = g->k[1], OW = g->grid[1], L = g->grid[0] * OW;
    int64_t R = C * KH * KW, r1 = r0 + NR < R ? r0 + NR : R;
    int cnt = 0;
    for (int64_t pos = 0; pos < L; pos++) {
        int64_t oy = pos / OW, ox = pos % OW;
        for (int h = 0; h < 2; h++) {
            first[2 * pos + h] = cnt;
            int64_t lo = r0 + 16 * h, hi = lo + 16 < r1 ? lo + 16 : r1;
            for (int64_t r = lo; r < hi;) {
                int64_t c = r / (KH * KW), ky = r / KW % KH, kx = r % KW;
                int64_t n = KW - kx < hi - r ? KW - kx : hi - r, at = r - lo;
                int64_t iy = oy * g->s[0] + ky * g->d[0] - g->pb[0], ix = ox * g->s[1] + kx - g->pb[1];
                if (iy >= 0 && iy < H) {
                    /* lane at + e reads column ix + e */
                    int64_t e0 = -ix > 0 ? -ix : 0, e1 = W - ix < n ? W - ix : n;
                    __mmask16 m = lanes(at + e0, at + e1);
                    if (m)
                        ru[cnt++] = (run_at){(c * H + iy) * W + ix - at, m};
                }
                r += n;
            }
        }
    }
    first[2 * L] = cnt;
}

/* dy [n, m, L] -> panels of MR channels over all positions: pa[(p N + j)
 * MR + i] = dy[j / L, p MR + i, j % L], 0 past m. Two positions' 8
 * channels a gather. */
AVX512 static void pack_dy(const float *dy, int64_t n, int64_t m, int64_t L, float *pa)
{
    int64_t N = n * L;
    /* lane l: channel l % 8 of position l / 8 */
    __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7),
                                                      _mm512_set1_epi32((int)L)),
                                   _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    for (int64_t p = 0; p < (m + MR - 1) / MR; p++) {
        int64_t rows = m - p * MR < MR ? m - p * MR : MR;
        __mmask16 mk = (__mmask16)(((1u << rows) - 1) | (((1u << rows) - 1) << 8));
        for (int64_t img = 0; img < n; img++) {
            float *d = pa + (p * N + img * L) * MR;
            const float *s = dy + (img * m + p * MR) * L;
            int64_t pos = 0;
            for (; pos + 2 <= L; pos += 2)
                _mm512_storeu_ps(d + pos * MR, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, s + pos, 4));
            for (; pos < L; pos++)
                for (int64_t i = 0; i < MR; i++)
                    d[pos * MR + i] = i < rows ? s[i * L + pos] : 0.0f;
        }
    }
}

/* columns [j0, j1) of the panel of taps from runs ru (first) into pb [j1 - j0][NR] */
AVX512 static void pack_rows(const float *x, int64_t C, int64_t plane, int64_t L, const run_at *ru, const int *first,
                             int64_t j0, int64_t j1, float *pb)
{
    for (int64_t j = j0; j < j1; j++, pb += NR) {
        int64_t img = j / L, pos = j % L;
        const float *xi = x + img * C * plane;
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        for (const run_at *r = ru + first[2 * pos], *e = ru + first[2 * pos + 1]; r < e; r++)
            lo = _mm512_mask_loadu_ps(lo, r->mask, xi + r->off);
        for (const run_at *r = ru + first[2 * pos + 1], *e = ru + first[2 * pos + 2]; r < e; r++)
            hi = _mm512_mask_loadu_ps(hi, r->mask, xi + r->off);
        _mm512_store_ps(pb, lo);
        _mm512_store_ps(pb + 16, hi);
    }
}

/* dW's columns [r0, r0 + NR) (clipped to R), every row tile */
AVX512 static void filter_taps(const lt_nn_geom *g, int64_t c, int64_t m, int64_t N, int64_t kc, const float *pa,
                               const float *x, int64_t r0, run_at *ru, int *first, float *pb, float *dw)
{
    int64_t L = g->grid[0] * g->grid[1], R = c * g->k[0] * g->k[1], plane = g->img[0] * g->img[1];
    int64_t nr = R - r0 < NR ? R - r0 : NR, mp = (m + MR - 1) / MR;
    __mmask16 m0 = lanes(0, nr), m1 = lanes(0, nr - 16);
    runs_of(g, c, r0, ru, first);
    for (int64_t j0 = 0; j0 < N; j0 += kc) {
        int64_t j1 = j0 + kc < N ? j0 + kc : N;
        pack_rows(x, c, plane, L, ru, first, j0, j1, pb);
        for (int64_t p = 0; p < mp; p++) {
            __m512 acc[2 * MR];
            tile(j1 - j0, pa + (p * N + j0) * MR, pb, acc);
            for (int64_t i = 0; i < MR && p * MR + i < m; i++) {
                float *d = dw + (p * MR + i) * R + r0;
                __m512 v0 = acc[2 * i], v1 = acc[2 * i + 1];
                if (j0) {
                    v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, d), v0);
                    v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, d + 16), v1);
                }
                _mm512_mask_storeu_ps(d, m0, v0);
                _mm512_mask_storeu_ps(d + 16, m1, v1);
            }
        }
    }
}

bool lt_nn_conv_panels_filter_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m)
{
    if (!(lt_cpu_avx512_gemm() || lt_sgemm_avx2_here()) || g->nsp != 2 || groups != 1 || g->d[1] != 1 ||
        g->d[0] < 1 || g->s[0] < 1 || g->s[1] < 1 || g->pb[0] < 0 || g->pb[1] < 0 || g->grid[0] < 1 ||
        g->grid[1] < 1 || g->grid[0] * g->grid[1] > 4096 || m < 16 || c * g->k[0] * g->k[1] < 64)
        return false;
    /* a plain 1x1 kernel's products read the images as they are */
    return !(g->k[0] == 1 && g->k[1] == 1 && g->s[0] == 1 && g->s[1] == 1 && g->pb[0] == 0 && g->pb[1] == 0 &&
             g->pe[0] == 0 && g->pe[1] == 0);
}

lt_status lt_nn_conv_panels_filter(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                   const float *x, float *dw)
{
    if (!lt_cpu_avx512_gemm())
        return lt_nn_conv_panels_filter_avx2(k, g, n, c, m, dy, x, dw);
    int64_t L = g->grid[0] * g->grid[1], R = c * g->k[0] * g->k[1], N = n * L;
    int64_t nq = (R + NR - 1) / NR, mp = (m + MR - 1) / MR, kc = N < KCOLS ? N : KCOLS;
    int nth = omp_get_max_threads();
    bool parallel = nth > 1 && nq > 1 && 2.0 * (double)N * (double)m * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (nq < nth ? (int)nq : nth) : 1;
    int64_t maxruns = 2 * L * (NR / 2 + 2); /* a half holds at most 16 runs (plus cuts) */
    size_t per = (sizeof(float) * (size_t)(kc * NR) + sizeof(run_at) * (size_t)maxruns +
                  sizeof(int) * (size_t)(2 * L + 1) + 127) / 64 * 64;
    float *pa = lt_k_scratch(k, sizeof(float) * (size_t)(mp * MR * N));
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

bool lt_nn_conv_panels_filter_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m) { return false; }

lt_status lt_nn_conv_panels_filter(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                   const float *x, float *dw)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution panels need AVX-512");
}

lt_status lt_nn_conv_panels(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution panels need AVX-512");
}

#endif
