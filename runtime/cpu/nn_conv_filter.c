/* The filter gradient of a float32 2-D convolution (one group) with the
 * output channels in the vector lanes: dW^T [R, m] = sum over the batch's
 * positions j of im2col(x)[:, j] (x) dy[:, j], R = c KH KW taps. A tile
 * holds 8 taps by 32 output channels in 16 AVX-512 accumulators over the
 * whole sum; each step of it loads 32 channels of dy at one position (dy
 * laid out [channel panel, position, 32] once a call) and broadcasts each
 * of its 8 taps' image values at that position straight from the images,
 * which a copy with the pads written as zeros (once a call) lets every
 * tap read at one fixed offset from the position's window corner. No
 * column matrix is built: the image side needs no packing at all, where
 * taps in the lanes would need a gather of each position's window.
 *
 * Every dW element is one tile's chain of multiply-adds over the
 * positions in order (image, row, column), whatever the thread count, so
 * results repeat bit for bit. */
#include "nn_util.h"
#include "cpu_features.h"
#include <omp.h>
#include <string.h>

#define TR 8  /* taps a tile */
#define TC 32 /* output channels a tile */
#define CHUNK 256 /* positions (32 KiB of a panel of dy) summed over a group of tiles before the next */

bool lt_nn_conv_filter_lanes_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m)
{
    /* from 32 output channels (the lanes' width) to 128: beyond, the
     * panels' column gathers (nn_conv_panels.c) serve enough channels to
     * cost less than these tiles' one broadcast per tap and position */
    if (!lt_cpu_avx512_gemm() || g->nsp != 2 || groups != 1 || m < 32 || m > 128)
        return false;
    /* grids of at most 4096 positions: the padded copy of the images
     * stays near their size */
    for (int a = 0; a < 2; a++)
        if (g->s[a] < 1 || g->d[a] < 1 || g->k[a] < 1 || g->pb[a] < 0 || g->grid[a] < 1 || g->img[a] < 1)
            return false;
    if (g->grid[0] * g->grid[1] > 4096)
        return false;
    /* a plain 1x1 kernel's products read the images as they are */
    bool plain = g->k[0] == 1 && g->k[1] == 1 && g->s[0] == 1 && g->s[1] == 1 && g->pb[0] == 0 && g->pb[1] == 0 &&
                 g->pe[0] == 0 && g->pe[1] == 0;
    return !plain && c * g->k[0] * g->k[1] >= 64;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include "nn_conv_tile.h"
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* x [n, c, H, W] -> xp [n, c, PH, PW] with pb rows / columns of zeros
 * before and the rest of each row and plane zero after */
static void pad_images(const float *x, int64_t planes, int64_t H, int64_t W, int64_t pbh, int64_t pbw, int64_t PH,
                       int64_t PW, float *xp)
{
    memset(xp, 0, sizeof(float) * (size_t)(planes * PH * PW));
    for (int64_t p = 0; p < planes; p++)
        for (int64_t y = 0; y < H; y++) {
            const float *s = x + (p * H + y) * W;
            float *d = xp + (p * PH + pbh + y) * PW + pbw;
            for (int64_t i = 0; i < W; i++)
                d[i] = s[i];
        }
}

/* dy [n, m, L] -> dyt [m / TC panels][n L][TC], channels past m 0 */
AVX512 static void pack_dy(const float *dy, int64_t n, int64_t m, int64_t L, float *dyt)
{
    int64_t N = n * L, nq = (m + TC - 1) / TC;
    __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                     _mm512_set1_epi32((int)L));
    for (int64_t q = 0; q < nq; q++)
        for (int h = 0; h < 2; h++) {
            int64_t o0 = q * TC + 16 * h, rows = m - o0 < 16 ? m - o0 : 16;
            __mmask16 mk = rows <= 0 ? 0 : rows >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rows) - 1);
            float *d = dyt + q * N * TC + 16 * h;
            for (int64_t img = 0; img < n; img++) {
                const float *s = dy + (img * m + (mk ? o0 : 0)) * L;
                for (int64_t pos = 0; pos < L; pos++, d += TC)
                    _mm512_store_ps(d, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, s + pos, 4));
            }
        }
}

/* One tile over N positions: taps at offsets off[0..7] from a window's
 * corner, position j's corner at xp + at[j], channels of the panel dyt;
 * acc[2 i + h] (+)= tap i's sums for channels 16 h + lane, going on from
 * acc's values when `more` (one chain of multiply-adds whatever the
 * stretches of positions it is run in) */
AVX512 static void tile(int64_t N, const float *xp, const int64_t *at, const int64_t *off, const float *dyt,
                        __m512 *acc, bool more)
{
    LT_CONV_TILE_BEGIN(acc, more, off);
    for (int64_t j = 0; j < N; j++, dyt += TC)
        LT_CONV_TILE_STEP(xp + at[j], dyt);
    LT_CONV_TILE_END(acc);
}

/* taps [r0, r0 + TR) (clipped to R) by channels [o0, o0 + TC) (clipped to
 * m) of dW [m, R] */
AVX512 static void tile_out(const __m512 *acc, int64_t m, int64_t R, int64_t o0, int64_t r0, float *dw)
{
    float t[TR][TC];
    for (int i = 0; i < TR; i++) {
        _mm512_storeu_ps(t[i], acc[2 * i]);
        _mm512_storeu_ps(t[i] + 16, acc[2 * i + 1]);
    }
    int64_t nr = R - r0 < TR ? R - r0 : TR, nc = m - o0 < TC ? m - o0 : TC;
    for (int64_t l = 0; l < nc; l++) {
        float *d = dw + (o0 + l) * R + r0;
        for (int64_t i = 0; i < nr; i++)
            d[i] = t[i][l];
    }
}

lt_status lt_nn_conv_filter_lanes(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                  const float *x, float *dw)
{
    int64_t KH = g->k[0], KW = g->k[1], K = KH * KW, R = c * K, L = g->grid[0] * g->grid[1], N = n * L;
    int64_t H = g->img[0], W = g->img[1];
    int64_t PH = g->pb[0] + H + (g->pe[0] > 0 ? g->pe[0] : 0), PW = g->pb[1] + W + (g->pe[1] > 0 ? g->pe[1] : 0);
    int64_t nq = (m + TC - 1) / TC, nr = (R + TR - 1) / TR, items, pp, cpp, xpn, dyn;
    if (!lt_nn_mul(PH, PW, &pp) || !lt_nn_mul(c, pp, &cpp) || !lt_nn_mul(n, cpp, &xpn) ||
        !lt_nn_mul(nq * TC, N, &dyn))
        return lt_k_fail(k, LT_ERR_NOMEM, "convolution filter gradient too large");
    /* no pads: the images as they are */
    bool copy = PH != H || PW != W;
    float *xp = copy ? lt_k_scratch(k, sizeof(float) * (size_t)xpn) : (float *)x;
    float *dyt = lt_k_scratch(k, sizeof(float) * (size_t)(dyn + 16));
    int64_t *offs = lt_k_scratch(k, sizeof(int64_t) * (size_t)(nr * TR + N));
    if (!xp || !dyt || !offs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (filter gradient of %lld taps)", (long long)R);
    dyt = (float *)(((uintptr_t)dyt + 63) & ~(uintptr_t)63);
    /* where each tap reads, from its window's corner in the padded image;
     * the taps past R read the corner (their sums are dropped) */
    for (int64_t r = 0; r < nr * TR; r++) {
        int64_t ch = r / K, ky = r / KW % KH, kx = r % KW;
        offs[r] = r < R ? ch * pp + ky * g->d[0] * PW + kx * g->d[1] : 0;
    }
    /* where each position's window corner lies */
    int64_t *at = offs + nr * TR, OW = g->grid[1];
    for (int64_t j = 0; j < N; j++) {
        int64_t img = j / L, pos = j % L;
        at[j] = img * cpp + pos / OW * g->s[0] * PW + pos % OW * g->s[1];
    }
    /* the copies on one thread, so that no thread waits at a barrier for
     * one the system has not scheduled */
    if (copy)
        pad_images(x, n * c, H, W, g->pb[0], g->pb[1], PH, PW, xp);
    pack_dy(dy, n, m, L, dyt);
    /* an item: a group of tap tiles of one channel panel, summed over a
     * stretch of positions (CHUNK: its dy stays in the caches) tile after
     * tile, stretch after stretch; groups small enough for every thread */
    int nth = omp_get_max_threads();
    bool parallel = nth > 1 && 2.0 * (double)N * (double)m * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int64_t per = nr, ngr = 1;
    if (parallel && nq < 4 * nth) {
        ngr = (4 * nth + nq - 1) / nq;
        ngr = ngr > nr ? nr : ngr;
        per = (nr + ngr - 1) / ngr;
        ngr = (nr + per - 1) / per;
    }
    items = nq * ngr;
    int nt = parallel ? (items < nth ? (int)items : nth) : 1;
    __m512 *accs = lt_k_scratch(k, sizeof(__m512) * (size_t)(2 * TR * per * nt + 1));
    if (!accs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (filter gradient of %lld taps)", (long long)R);
    accs = (__m512 *)(((uintptr_t)accs + 63) & ~(uintptr_t)63);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        __m512 *acc = accs + 2 * TR * per * omp_get_thread_num();
        /* items to whichever thread is free; each tile's sums in the same
         * order whoever takes it */
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            int64_t q = it / ngr, t0 = it % ngr * per, t1 = t0 + per < nr ? t0 + per : nr;
            const float *dq = dyt + q * N * TC;
            for (int64_t j0 = 0; j0 < N; j0 += CHUNK) {
                int64_t nj = N - j0 < CHUNK ? N - j0 : CHUNK;
                for (int64_t t = t0; t < t1; t++)
                    tile(nj, xp, at + j0, offs + t * TR, dq + j0 * TC, acc + 2 * TR * (t - t0), j0 > 0);
            }
            for (int64_t t = t0; t < t1; t++)
                tile_out(acc + 2 * TR * (t - t0), m, R, q * TC, t * TR, dw);
        }
    }
    return LT_OK;
}

#else

lt_status lt_nn_conv_filter_lanes(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                  const float *x, float *dw)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "the filter gradient by lanes needs AVX-512");
}

#endif
