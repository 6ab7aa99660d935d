/* Conv and its data gradient on float32 2-D convolutions over small grids
 * with the batch's images in the vector lanes. Over a grid of a few
 * positions mostly reaching into the padding (ResNet's 2x2 and 1x1
 * stages), each position reads its own few taps; with the images in the
 * lanes, a position's sum runs over exactly those taps' (channel, tap)
 * pairs, and the weights need no copy: each step broadcasts 8 channels'
 * weights for one (channel, tap) straight from W [m, c, k] (any stride is
 * one scalar load), against 32 images' values of the input laid out
 * [image panel, channel, pixel, 32] once a call. A tile holds 8 channels
 * by 32 images in 16 AVX-512 accumulators over the whole sum.
 *
 * Forward: y[i, o, p] = b[o] + sum over the taps t inside at p and the
 * channels c of w[o, c, t] x[i, c, at(p, t)], tiles of 8 output channels.
 * Data gradient: dx[i, c, q] = sum over the (p, t) with at(p, t) = q and
 * the output channels o of w[o, c, t] dy[i, o, p], tiles of 8 image
 * channels. Every output is one tile's chain of multiply-adds in a fixed
 * order whatever the thread count, so results repeat bit for bit. */
#include "nn_util.h"
#include "cpu_features.h"
#include <omp.h>
#include <string.h>

#define CR 8  /* channels a tile */
#define IM 32 /* images a tile */

bool lt_nn_conv_images_usable(const lt_nn_geom *g, int64_t groups, int64_t n, int64_t sum_ch)
{
    if (!lt_cpu_avx512_gemm() || g->nsp != 2 || groups != 1 || n < IM || g->k[0] * g->k[1] < 2)
        return false;
    /* where the regions would run; and grids of up to 16 positions whose
     * sums run over 128 channels or more (ResNet's 4x4 stage), where a
     * tile's chains are long enough to beat the panels' packing */
    if (lt_nn_regions(4, g, groups, n, 1, false))
        return true;
    return g->grid[0] * g->grid[1] <= 16 && sum_ch >= 128;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include "nn_conv_tile.h"
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* src [n, rows] -> dst [panel][rows][IM], images past n 0 */
static void images_last(const float *src, int64_t n, int64_t rows, float *dst)
{
    int64_t np = (n + IM - 1) / IM;
    for (int64_t p = 0; p < np; p++)
        for (int64_t l = 0; l < IM; l++) {
            int64_t img = p * IM + l;
            float *d = dst + p * rows * IM + l;
            if (img >= n) {
                for (int64_t e = 0; e < rows; e++)
                    d[e * IM] = 0;
                continue;
            }
            const float *s = src + img * rows;
            for (int64_t e = 0; e < rows; e++)
                d[e * IM] = s[e];
        }
}

/* acc[2 k + h] (+)= sum over `steps` steps s of bp[off[k] + s bstride] *
 * vp[s vstride + 16 h + lane], going on from acc's values when `more` */
AVX512 static void tile(int64_t steps, const float *bp, int64_t bstride, const int64_t *off, const float *vp,
                        int64_t vstride, __m512 *acc, bool more)
{
    LT_CONV_TILE_BEGIN(acc, more, off);
    for (int64_t s = 0; s < steps; s++, bp += bstride, vp += vstride)
        LT_CONV_TILE_STEP(bp, vp);
    LT_CONV_TILE_END(acc);
}

/* channels [ch0, ch0 + CR) (clipped to nch) by the images of panel p
 * (clipped to n) into out [n, nch, len] at element e, plus bias (or 0);
 * acc NULL: the bias alone */
AVX512 static void tile_out(const __m512 *acc, int64_t n, int64_t nch, int64_t len, int64_t p, int64_t ch0,
                            int64_t e, const float *bias, float *out)
{
    float t[CR][IM];
    for (int k = 0; k < CR; k++) {
        _mm512_storeu_ps(t[k], acc ? acc[2 * k] : _mm512_setzero_ps());
        _mm512_storeu_ps(t[k] + 16, acc ? acc[2 * k + 1] : _mm512_setzero_ps());
    }
    int64_t nl = n - p * IM < IM ? n - p * IM : IM, nk = nch - ch0 < CR ? nch - ch0 : CR;
    for (int64_t l = 0; l < nl; l++) {
        float *d = out + ((p * IM + l) * nch + ch0) * len + e;
        for (int64_t k = 0; k < nk; k++)
            d[k * len] = t[k][l] + (bias ? bias[ch0 + k] : 0.0f);
    }
}

/* tap t of window position (oy, ox) as a pixel of the image, or -1 in the padding */
static int64_t pixel(const lt_nn_geom *g, int64_t oy, int64_t ox, int64_t t)
{
    int64_t iy = oy * g->s[0] + t / g->k[1] * g->d[0] - g->pb[0], ix = ox * g->s[1] + t % g->k[1] * g->d[1] - g->pb[1];
    return iy < 0 || iy >= g->img[0] || ix < 0 || ix >= g->img[1] ? -1 : iy * g->img[1] + ix;
}

/* the pairs (position, tap) whose tap reads a pixel: by position
 * (by_pixel false: pairs of position p at [first[p], first[p + 1])) or by
 * pixel; pos[] and tap[] hold the pairs, pix[] their pixels */
static void pairs_of(const lt_nn_geom *g, bool by_pixel, int64_t *first, int64_t *pos, int64_t *tap, int64_t *pix)
{
    int64_t L = g->grid[0] * g->grid[1], K = g->k[0] * g->k[1], plane = g->img[0] * g->img[1];
    int64_t outer = by_pixel ? plane : L, cnt = 0;
    for (int64_t u = 0; u < outer; u++) {
        first[u] = cnt;
        for (int64_t p = 0; p < L; p++) {
            if (!by_pixel && p != u)
                continue;
            for (int64_t t = 0; t < K; t++) {
                int64_t q = pixel(g, p / g->grid[1], p % g->grid[1], t);
                if (q < 0 || (by_pixel && q != u))
                    continue;
                pos[cnt] = p;
                tap[cnt] = t;
                pix[cnt] = q;
                cnt++;
            }
        }
    }
    first[outer] = cnt;
}

/* the shared driver: `out` [n, och, olen] from `in` [n, ich, ilen] (laid
 * out by images), the weights read at w + och-channel * ostride + in-channel
 * * istride + tap; units u of olen with pairs [first[u], first[u + 1]) of
 * (in element, tap) */
static lt_status run(lt_kctx *k, int64_t n, int64_t ich, int64_t ilen, int64_t och, int64_t olen, const float *in,
                     const float *w, int64_t ostride, int64_t istride, const int64_t *first, const int64_t *ein,
                     const int64_t *tap, const float *bias, float *out)
{
    int64_t np = (n + IM - 1) / IM, nb = (och + CR - 1) / CR, rows = ich * ilen, tn;
    if (!lt_nn_mul(np * IM, rows, &tn))
        return lt_k_fail(k, LT_ERR_NOMEM, "convolution too large");
    float *it = lt_k_scratch(k, sizeof(float) * (size_t)(tn + 16));
    if (!it)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution of %lld images)", (long long)n);
    it = (float *)(((uintptr_t)it + 63) & ~(uintptr_t)63);
    /* on one thread, so that no thread waits at a barrier for one the
     * system has not scheduled */
    images_last(in, n, rows, it);
    int64_t items = nb * np;
    int nth = omp_get_max_threads();
    double flops = 2.0 * (double)n * (double)och * (double)first[olen] * (double)ich;
    int nt = nth > 1 && items > 1 && flops >= 8.0 * LT_NN_PAR_MIN ? (items < nth ? (int)items : nth) : 1;
    /* items (a block of channels, an image panel) to whichever thread is
     * free, every unit of the block's rows of weights in turn */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int64_t item = 0; item < items; item++) {
        int64_t b = item / np, p = item % np, c0 = b * CR;
        int64_t off[CR];
        for (int64_t kk = 0; kk < CR; kk++)
            off[kk] = c0 + kk < och ? (c0 + kk) * ostride : c0 * ostride;
        __m512 acc[2 * CR];
        for (int64_t u = 0; u < olen; u++) {
            for (int64_t e = first[u]; e < first[u + 1]; e++)
                tile(ich, w + tap[e], istride, off, it + (p * rows + ein[e]) * IM, ilen * IM, acc, e > first[u]);
            tile_out(first[u + 1] > first[u] ? acc : NULL, n, och, olen, p, c0, u, bias, out);
        }
    }
    return LT_OK;
}

lt_status lt_nn_conv_images(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y)
{
    int64_t L = g->grid[0] * g->grid[1], K = g->k[0] * g->k[1];
    int64_t *first = lt_k_scratch(k, sizeof(int64_t) * (size_t)(L + 1 + 3 * L * K));
    if (!first)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution pairs)");
    int64_t *pos = first + L + 1, *tap = pos + L * K, *pix = tap + L * K;
    pairs_of(g, false, first, pos, tap, pix);
    /* a pair's input element: its pixel */
    return run(k, n, c, g->img[0] * g->img[1], m, L, x, w, c * K, K, first, pix, tap, bias, y);
}

lt_status lt_nn_conv_images_data(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                 const float *w, float *dx)
{
    int64_t L = g->grid[0] * g->grid[1], K = g->k[0] * g->k[1], plane = g->img[0] * g->img[1];
    int64_t *first = lt_k_scratch(k, sizeof(int64_t) * (size_t)(plane + 1 + 3 * L * K));
    if (!first)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution pairs)");
    int64_t *pos = first + plane + 1, *tap = pos + L * K, *pix = tap + L * K;
    pairs_of(g, true, first, pos, tap, pix);
    /* a pair's input element: its position of dy; the weights of image
     * channel c and output channel o at w + o c K + c K + t */
    return run(k, n, m, L, c, plane, dy, w, K, c * K, first, pos, tap, NULL, dx);
}

#else

lt_status lt_nn_conv_images(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution by image lanes needs AVX-512");
}

lt_status lt_nn_conv_images_data(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                 const float *w, float *dx)
{
    return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution by image lanes needs AVX-512");
}

#endif
