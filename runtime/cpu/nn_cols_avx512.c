/* im2col, im2row and col2im for float32 2-D windows with unit strides and
 * dilations and grids at most 16 wide, with AVX-512 masked moves: each
 * image row is copied once into a zero-padded buffer, and every tap's
 * stretch of a grid row is then one masked load and store (the general
 * loops in nn.c spend most of their time on the bounds of those short
 * stretches). The callers in nn.c fall back when these decline. */
#include "nn_util.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define PADDED 128 /* image row plus both pads, in floats */

static bool usable(const lt_nn_geom *g)
{
    static int have = -1; /* benign race: every thread computes the same */
    if (have < 0)
        have = __builtin_cpu_supports("avx512f");
    return have && g->nsp == 2 && g->s[0] == 1 && g->s[1] == 1 && g->d[0] == 1 && g->d[1] == 1 &&
           g->grid[1] <= 16 && g->k[1] <= 16 && g->pb[1] >= 0 && g->pe[1] >= 0 &&
           g->img[1] + g->pb[1] + g->pe[1] + 16 <= PADDED;
}

static inline __mmask16 mask_of(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* buf[pw .. pw + W) = src[0 .. W); the rest of buf stays as it was (zero) */
AVX512 static inline void load_row(float *buf, const float *src, int64_t W, int64_t pw)
{
    for (int64_t x = 0; x < W; x += 16)
        _mm512_storeu_ps(buf + pw + x, _mm512_maskz_loadu_ps(mask_of(W - x), src + x));
}

AVX512 static void im2col(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1];
    __mmask16 mo = mask_of(OW);
    float buf[PADDED + 16];
    memset(buf, 0, sizeof buf);
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++) {
            float *dst = col + (c * KH + ky) * KW * ldc;
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                float *d = dst + oy * OW;
                if (iy < 0 || iy >= H) {
                    for (int64_t kx = 0; kx < KW; kx++)
                        _mm512_mask_storeu_ps(d + kx * ldc, mo, _mm512_setzero_ps());
                    continue;
                }
                load_row(buf, img + (c * H + iy) * W, W, pw);
                for (int64_t kx = 0; kx < KW; kx++)
                    _mm512_mask_storeu_ps(d + kx * ldc, mo, _mm512_maskz_loadu_ps(mo, buf + kx));
            }
        }
}

AVX512 static void im2row(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1];
    __mmask16 mk = mask_of(KW);
    float buf[PADDED + 16];
    memset(buf, 0, sizeof buf);
    for (int64_t c = 0; c < channels; c++)
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                float *d = row + oy * OW * ldr + (c * KH + ky) * KW;
                if (iy < 0 || iy >= H) {
                    for (int64_t ox = 0; ox < OW; ox++)
                        _mm512_mask_storeu_ps(d + ox * ldr, mk, _mm512_setzero_ps());
                    continue;
                }
                load_row(buf, img + (c * H + iy) * W, W, pw);
                for (int64_t ox = 0; ox < OW; ox++)
                    _mm512_mask_storeu_ps(d + ox * ldr, mk, _mm512_maskz_loadu_ps(mk, buf + ox));
            }
}

AVX512 static void col2im(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t ph = g->pb[0], pw = g->pb[1], wide = W + pw + g->pe[1];
    __mmask16 mo = mask_of(OW);
    float buf[PADDED + 16];
    for (int64_t c = ch0; c < ch1; c++)
        for (int64_t ky = 0; ky < KH; ky++) {
            const float *src = col + (c * KH + ky) * KW * ldc;
            for (int64_t oy = 0; oy < OH; oy++) {
                int64_t iy = oy + ky - ph;
                if (iy < 0 || iy >= H)
                    continue;
                /* the taps' stretches summed along the padded row, then the
                 * image part of it added into the image */
                for (int64_t x = 0; x < wide; x += 16)
                    _mm512_storeu_ps(buf + x, _mm512_setzero_ps());
                const float *s = src + oy * OW;
                for (int64_t kx = 0; kx < KW; kx++) {
                    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mo, buf + kx), _mm512_maskz_loadu_ps(mo, s + kx * ldc));
                    _mm512_mask_storeu_ps(buf + kx, mo, v);
                }
                float *d = img + (c * H + iy) * W;
                for (int64_t x = 0; x < W; x += 16) {
                    __mmask16 m = mask_of(W - x);
                    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + x), _mm512_maskz_loadu_ps(m, buf + pw + x));
                    _mm512_mask_storeu_ps(d + x, m, v);
                }
            }
        }
}

bool lt_nn_im2col2d_avx512(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    if (!usable(g))
        return false;
    im2col(img, col, ldc, g, channels);
    return true;
}

bool lt_nn_im2row2d_avx512(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    if (!usable(g))
        return false;
    im2row(img, row, ldr, g, channels);
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
