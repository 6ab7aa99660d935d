/* Private helpers shared by the nn-family kernels (runtime/cpu/nn*.c):
 * im2col / col2im over the window geometry of ir/shape_nn.h, GEMM on
 * float or double, and conversions for the dtypes without a fast path. */
#ifndef LT_CPU_NN_UTIL_H
#define LT_CPU_NN_UTIL_H

#include "../runtime.h"
#include "par.h"
#include "../../ir/shape_nn.h"

/* Below this much work (elements or flops) a loop stays on one thread. */
#define LT_NN_PAR_MIN LT_PAR_ELEMS

/* Columns c0..c1 of the column matrix of one image [channels, img...]: row
 * (c, tap) holds, for every window position of g's grid, the image element
 * that tap reads, or 0 where it falls into the padding. The full matrix is
 * [channels * prod(k), prod(grid)]; col receives its [*, c1 - c0] tile.
 * esz is 4 (float) or 8 (double). */
void lt_nn_im2col(const void *img, void *col, size_t esz, const lt_nn_geom *g, int64_t channels, int64_t c0,
                  int64_t c1);
/* The adjoint on a tile: adds the rows of channels ch0..ch1 of the
 * [*, c1 - c0] tile col into the image (accumulates; parts of windows
 * outside the image are dropped). */
void lt_nn_col2im(const void *col, void *img, size_t esz, const lt_nn_geom *g, int64_t ch0, int64_t ch1, int64_t c0,
                  int64_t c1);
/* The same for float32 2-D windows over whole grids, the column matrix
 * having row stride ldc (several images side by side): im2col writes rows
 * (c, ky, kx) of `channels` channels; col2im adds those of channels
 * ch0..ch1 (rows counted from channel 0) into the image. */
void lt_nn_im2col2d_f32(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels);
void lt_nn_col2im2d_f32(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1);
/* im2col's transpose: row p (grid position) holds the `channels` * k taps
 * of its window, (c, ky, kx) order, row stride ldr */
void lt_nn_im2row2d_f32(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels);
/* The three with AVX-512 for unit strides and dilations over images whose
 * padded rows fit 16 floats, and im2col (im2row: unit column dilation,
 * kernels up to 16 wide) for column strides 1 or 2 over any image width
 * (nn_cols_avx512.c); false, with nothing written, otherwise. */
bool lt_nn_im2col2d_avx512(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels);
bool lt_nn_im2row2d_avx512(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels);
bool lt_nn_col2im2d_avx512(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1);

/* MaxPool and MaxPoolGrad (dy to the first maximum of each window in scan
 * order) on `planes` float32 planes with 3x3 windows, stride 2, unit
 * dilation, all wholly inside the image (lt_nn_plain2d), with AVX-512
 * (pool_max3s2_avx512.c); bit for bit the scalar kernels' results. false,
 * with nothing written, for other geometries (the gradient: grids over
 * 1024 wide too) or without AVX-512. */
/* MaxPool on float32 planes with 2x2 windows, stride 2, all inside the
 * image (lt_nn_plain2d), with AVX-512 (pool_max2s2_avx512.c); bit for bit
 * the scalar kernel's result. false, with nothing written, otherwise. */
bool lt_nn_maxpool2s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y);
bool lt_nn_maxpool3s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y);
bool lt_nn_maxpool3s2_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx);
/* The same for 3x3 stride-2 windows with unit dilation and any pads or
 * ceil_mode (windows the image clips), grids up to 4096 wide. */
bool lt_nn_maxpool3s2_any_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y);
bool lt_nn_maxpool3s2_any_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx);

/* Row-major C[m,n] (+)= op(A)[m,k] * B[k,n] on float (esz 4) or double
 * (esz 8); op(A) = A^T when trans_a. Any size may be 0. */
void lt_nn_gemm(size_t esz, bool trans_a, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                int64_t ldb, bool accumulate, void *c, int64_t ldc);

/* t's elements as double in scratch memory (NULL, with k failed, on OOM). */
double *lt_nn_f64_of(lt_kctx *k, const lt_tensor *t);
/* t's elements as float: t's own data when already float32, else a scratch copy. */
const float *lt_nn_f32_of(lt_kctx *k, const lt_tensor *t);
/* Writes n values into t, converting (integer types saturate and round to
 * nearest even). */
void lt_nn_store_f64(lt_tensor *t, const double *v);
void lt_nn_store_f32(lt_tensor *t, const float *v);

/* Reads a conv-like node's kernel: kernel_shape when given (it must agree
 * with the weights' spatial dims w_dims, when w_dims is not NULL). */
lt_status lt_nn_kernel(lt_kctx *k, int nsp, const int64_t *w_dims, int64_t *kernel);

/* size checks: a * b with overflow detection; false on overflow */
static inline bool lt_nn_mul(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out) && *out >= 0;
}

/* A 2-D window with unit dilation whose every position lies wholly inside
 * the image (no padding reached): the pools' direct fast path. */
static inline bool lt_nn_plain2d(const lt_nn_geom *g)
{
    if (g->nsp != 2)
        return false;
    for (int i = 0; i < 2; i++)
        if (g->d[i] != 1 || g->pb[i] != 0 || g->s[i] < 1 || g->k[i] < 1 || g->grid[i] < 1 ||
            (g->grid[i] - 1) * g->s[i] + g->k[i] > g->img[i])
            return false;
    return true;
}

/* float32 2-D convolutions and their gradients with one group, a real
 * im2col (not 1x1 stride 1) and a small grid (L positions per image) run
 * their products on blocks of nb images, their columns side by side, about
 * LT_NN_BLOCK_COLS columns a block (nn_conv.c, grad_nn_conv.c). */
#define LT_NN_BLOCK_COLS 512

static inline bool lt_nn_blocked(size_t esz, const lt_nn_geom *g, int64_t groups, bool direct, int64_t L, int64_t n)
{
    return esz == 4 && g->nsp == 2 && groups >= 1 && !direct && L > 0 && L < LT_NN_BLOCK_COLS / 2 && n > 1;
}

static inline int64_t lt_nn_block_images(int64_t L, int64_t n)
{
    int64_t nb = LT_NN_BLOCK_COLS / L;
    return nb > n ? n : nb;
}

/* float32 2-D convolutions and their gradients with one group and a batch
 * whose small grid (under 256 positions an image) is mostly padding where
 * the windows reach it (less than half of its im2col read from the image),
 * or is at most 16 positions (filter gradient: 1) of a 1x1 kernel with m
 * >= 16 grid channels,
 * run by regions, a block of images a product (nn_conv_regions.c): x [n,
 * c, img], w [m, c, k], bias [m] or NULL, y and dy [n, m, grid]; dx and dw
 * are written whole. */
bool lt_nn_regions(size_t esz, const lt_nn_geom *g, int64_t groups, int64_t n, int64_t m, bool filter);
lt_status lt_nn_conv_regions(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                             const float *w, const float *bias, float *y);
lt_status lt_nn_conv_regions_data(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                  const float *w, float *dx);
lt_status lt_nn_conv_regions_filter(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m,
                                    const float *dy, const float *x, float *dw);

/* float32 2-D convolutions with one group, column strides 1 or 2,
 * non-negative pads, at least 64 taps x channels and not a plain 1x1 over
 * more than 16 positions (and lantern's own AVX-512 or AVX2 matrix kernels:
 * lt_nn_conv_panels_usable) as
 * one product over the batch, 32 output columns a panel built straight
 * from the images (nn_conv_panels.c): x [n, c, img], w [m, c, k], bias [m]
 * or NULL, y [n, m, grid] */
bool lt_nn_conv_panels_usable(const lt_nn_geom *g, int64_t groups, int64_t c);
lt_status lt_nn_conv_panels(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y);

/* The same with AVX2 and FMA (nn_conv_panels_avx2.c: 16 columns a panel),
 * which lt_nn_conv_panels hands the job on CPUs without AVX-512 */
lt_status lt_nn_conv_panels_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                                 const float *w, const float *bias, float *y);

/* The filter gradient the same way (lt_nn_conv_panels_filter_usable: one
 * group, any strides, unit column dilation, non-negative pads, at most
 * 4096 positions an image, 16 grid channels and 64 taps x image channels
 * or more, not a plain 1x1): dy [n, m, grid], x [n, c, img] -> dw [m, c,
 * k], written whole */
bool lt_nn_conv_panels_filter_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m);
lt_status lt_nn_conv_panels_filter(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                   const float *x, float *dw);
lt_status lt_nn_conv_panels_filter_avx2(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m,
                                        const float *dy, const float *x, float *dw);

/* The filter gradient with the output channels in the vector lanes and
 * each tap's image value broadcast from a zero-padded copy of the images
 * (nn_conv_filter.c; lt_nn_conv_filter_lanes_usable: one group, 32 to 128
 * output channels, 64 taps x image channels or more, non-negative begin
 * pads, any strides and dilations, not a plain 1x1, AVX-512): dy [n, m,
 * grid], x [n, c, img] -> dw [m, c, k], written whole */
bool lt_nn_conv_filter_lanes_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m);
lt_status lt_nn_conv_filter_lanes(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                  const float *x, float *dw);

/* Conv and its data gradient with the batch's images in the vector lanes
 * (nn_conv_images.c) for taps beyond one, one group, 32 images or more and
 * AVX-512, where the regions would run (lt_nn_regions: small grids mostly
 * reaching into the padding) or on grids of at most 16 positions whose
 * sums run over sum_ch >= 128 channels (the forward's image channels c,
 * the data gradient's output channels m): x [n, c, img], w [m, c, k],
 * bias [m] or NULL, y and dy [n, m, grid]; y and dx written whole */
bool lt_nn_conv_images_usable(const lt_nn_geom *g, int64_t groups, int64_t n, int64_t sum_ch);
lt_status lt_nn_conv_images(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                            const float *w, const float *bias, float *y);
lt_status lt_nn_conv_images_data(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                 const float *w, float *dx);

/* Registrars of the family's files, called by lt_cpu_register_nn. */
void lt_nn_register_conv(lt_kernel_fn *tab);
void lt_nn_register_convt(lt_kernel_fn *tab);
void lt_nn_register_pool(lt_kernel_fn *tab);
void lt_nn_register_roi(lt_kernel_fn *tab);

/* Col2Im's geometry: image_shape and block_shape from inputs first and
 * first + 1 checked against the column input x [N, C x block, L]. */
typedef struct lt_nn_col2im_plan {
    int ni;                         /* spatial dims */
    int64_t img[LT_MAX_RANK];       /* image_shape */
    lt_nn_geom g;
    int64_t n, c, K, L, plane;      /* batch, channels, block size, positions, image size */
} lt_nn_col2im_plan;
lt_status lt_nn_col2im_plan_of(lt_kctx *k, const lt_tensor *x, int first, lt_nn_col2im_plan *p);

#endif
