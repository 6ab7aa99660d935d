/* im2col, im2row and col2im for float32 2-D windows with unit strides and
 * dilations over small images (a padded row fits 16 lanes), with AVX-512
 * masked moves: each image row is loaded once into a register, and every
 * tap's stretch of a grid row is one masked store (or load) through a
 * shifted pointer; the general loops in nn.c spend most of their time on
 * the bounds of those short stretches. im2col and im2row also cover any
 * image width with strides 1 or 2 (a 7x7 stride-2 stem, a stride-2 3x3):
 * 16 window positions of a tap, or one position's run of taps, per masked
 * load, the stride-2 columns picked out by a permute. The callers fall
 * back when these decline. */
#include "nn_util.h"
#include "cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* Unit strides and dilations, non-negative pads, and a padded image row
 * (W plus both pads = grid width + kernel width - 1) that fits one 16-lane
 * register. */
static bool usable(const lt_nn_geom *g)
{
    return lt_cpu_avx512() && g->nsp == 2 && g->s[0] == 1 && g->s[1] == 1 && g->d[0] == 1 && g->d[1] == 1 && g->pb[0] >= 0 &&
           g->pb[1] >= 0 && g->pe[1] >= 0 && g->img[1] + g->pb[1] + g->pe[1] <= 16;
}

static inline __mmask16 span(int64_t from, int64_t n) { return (__mmask16)(((1u << n) - 1) << from); }

/* Lanes are padded row positions: lane j holds image column j - pw. Masked
 * moves through pointers offset by the lane shift never touch the lanes
 * outside their mask, which may point outside the arrays. */
AVX512 static inline __m512 load_row(const float *src, int64_t W, int64_t pw)
{
    return _mm512_maskz_loadu_ps(span(pw, W), src - pw);
}

AVX512 static void im2col(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1];
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++) {
            float *dst = col + (c * KH + ky) * KW * ldc;
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                __m512 v = iy < 0 || iy >= H ? _mm512_setzero_ps() : load_row(img + (c * H + iy) * W, W, pw);
                float *d = dst + oy * OW;
                /* tap kx reads padded positions kx .. kx + OW - 1 */
                for (int64_t kx = 0; kx < KW; kx++)
                    _mm512_mask_storeu_ps(d + kx * ldc - kx, span(kx, OW), v);
            }
        }
}

AVX512 static void im2row(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1];
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                __m512 v = iy < 0 || iy >= H ? _mm512_setzero_ps() : load_row(img + (c * H + iy) * W, W, pw);
                float *d = row + oy * OW * ldr + (c * KH + ky) * KW;
                /* position ox reads padded positions ox .. ox + KW - 1 */
                for (int64_t ox = 0; ox < OW; ox++)
                    _mm512_mask_storeu_ps(d + ox * ldr - ox, span(ox, KW), v);
            }
}

AVX512 static void col2im(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1];
    __mmask16 mw = span(pw, W);
    for (int64_t c = ch0; c < ch1; c++)
        for (int64_t ky = 0; ky < KH; ky++) {
            const float *src = col + (c * KH + ky) * KW * ldc;
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                if (iy < 0 || iy >= H)
                    continue;
                /* the taps' stretches summed along the padded row in a
                 * register, then its image part added into the image */
                const float *s = src + oy * OW;
                __m512 acc = _mm512_setzero_ps();
                for (int64_t kx = 0; kx < KW; kx++)
                    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(span(kx, OW), s + kx * ldc - kx));
                float *d = img + (c * H + iy) * W - pw;
                _mm512_mask_storeu_ps(d, mw, _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mw, d)));
            }
        }
}

/* ---- any image width, strides 1 or 2, any dilation ---- */

/* Strides 1 and 2 with any dilation and non-negative pads: a stretch of up
 * to 16 window positions along a grid row reads image columns p, p + s,
 * ..., one or two registers' worth. */
static bool usable_wide(const lt_nn_geom *g)
{
    return lt_cpu_avx512() && g->nsp == 2 && g->s[1] >= 1 && g->s[1] <= 2 && g->s[0] >= 1 && g->d[0] >= 1 &&
           g->d[1] >= 1 && g->pb[0] >= 0 && g->pb[1] >= 0;
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

/* n (1..16) values of image row src (W columns) at columns p, p + s, ...
 * (s 1 or 2), 0 outside the row; lanes from n on are 0. The loads touch
 * only the columns inside the row. */
AVX512 static inline __m512 row_stretch(const float *src, int64_t W, int64_t p, int64_t s, int64_t n)
{
    if (s == 1)
        return _mm512_maskz_loadu_ps(lanes(-p, W - p < n ? W - p : n), src + p);
    /* columns p .. p + 2 (n - 1): lanes j of the two registers hold p + j and p + 16 + j */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int64_t last = 2 * (n - 1) + 1; /* columns needed: p .. p + last - 1 */
    int64_t hi = W - p < last ? W - p : last;
    __mmask16 ma = lanes(-p, hi), mb = lanes(-p - 16, hi - 16);
    __m512 a = _mm512_maskz_loadu_ps(ma, src + p);
    __m512 b = mb ? _mm512_maskz_loadu_ps(mb, src + p + 16) : _mm512_setzero_ps();
    return _mm512_permutex2var_ps(a, even, b);
}

AVX512 static void im2col_wide(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t sh = g->s[0], sw = g->s[1], dh = g->d[0], dw = g->d[1], ph = g->pb[0], pw = g->pb[1];
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++) {
            float *dst = col + (c * KH + ky) * KW * ldc;
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy * sh + ky * dh - ph;
                bool inside = iy >= 0 && iy < H;
                const float *src = img + (c * H + (inside ? iy : 0)) * W;
                for (int64_t ox = 0; ox < OW; ox += 16) {
                    int64_t n = OW - ox < 16 ? OW - ox : 16;
                    __mmask16 mn = lanes(0, n);
                    for (int64_t kx = 0; kx < KW; kx++) {
                        __m512 v = inside ? row_stretch(src, W, ox * sw + kx * dw - pw, sw, n) : _mm512_setzero_ps();
                        _mm512_mask_storeu_ps(dst + kx * ldc + oy * OW + ox, mn, v);
                    }
                }
            }
        }
}

/* im2row: per position, a window row's KW taps (KW <= 16) with unit
 * dilation are one run of the image row */
AVX512 static void im2row_wide(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t sh = g->s[0], sw = g->s[1], dh = g->d[0], ph = g->pb[0], pw = g->pb[1];
    __mmask16 mk = lanes(0, KW);
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy * sh + ky * dh - ph;
                float *d = row + oy * OW * ldr + (c * KH + ky) * KW;
                if (iy < 0 || iy >= H) {
                    for (int64_t ox = 0; ox < OW; ox++)
                        _mm512_mask_storeu_ps(d + ox * ldr, mk, _mm512_setzero_ps());
                    continue;
                }
                const float *src = img + (c * H + iy) * W;
                for (int64_t ox = 0; ox < OW; ox++) {
                    int64_t p = ox * sw - pw;
                    __mmask16 m = lanes(-p, W - p < KW ? W - p : KW);
                    _mm512_mask_storeu_ps(d + ox * ldr, mk, _mm512_maskz_loadu_ps(m, src + p));
                }
            }
}

bool lt_nn_im2col2d_avx512(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    if (usable(g))
        im2col(img, col, ldc, g, channels);
    else if (usable_wide(g))
        im2col_wide(img, col, ldc, g, channels);
    else
        return false;
    return true;
}

bool lt_nn_im2row2d_avx512(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    if (usable(g))
        im2row(img, row, ldr, g, channels);
    else if (usable_wide(g) && g->d[1] == 1 && g->k[1] <= 16)
        im2row_wide(img, row, ldr, g, channels);
    else
        return false;
    return true;
}

bool lt_nn_col2im2d_avx512(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    if (!usable(g))
        return false;
    col2im(col, ldc, img, g, ch0, ch1);
    return true;
}

#else

bool lt_nn_im2col2d_avx512(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    return false;
}

bool lt_nn_im2row2d_avx512(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    return false;
}

bool lt_nn_col2im2d_avx512(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    return false;
}

#endif
