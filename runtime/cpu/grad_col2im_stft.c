/* CPU kernels: Col2ImGrad and STFTGrad, and the registrar of every
 * grad_*.c file of the sampling ops.
 *
 * Col2Im adds the columns of each image's blocks into the image, so its
 * adjoint reads each block back out: im2col of dy, one (image, channel)
 * plane at a time.
 *
 * STFTGrad takes the adjoint of the windowed frames (the AD gets it from dy
 * with an inverse DFT) and undoes the framing: each signal sample collects
 * the frames that read it, times the window; the window collects every
 * frame's adjoint times the samples it multiplied. */
#include "grad_sampling.h"
#include "nn_util.h"
#include "norm_util.h"
#include <string.h>

/* a 1-D integer input of 1..LT_MAX_RANK-2 values */
static lt_status col2im_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1);
    lt_status s;
    if (!dy || !x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs dy and the forward input");
    if (!lt_dtype_is_float(x->dtype) || dy->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy (%s) and the input (%s) must share a float type",
                         lt_dtype_name(dy->dtype), lt_dtype_name(x->dtype));
    /* the forward's own checks of image_shape, block_shape and x */
    lt_nn_col2im_plan pl;
    if ((s = lt_nn_col2im_plan_of(k, x, 2, &pl)) != LT_OK)
        return s;
    int ni = pl.ni;
    int64_t n = pl.n, c = pl.c, K = pl.K, L = pl.L, plane = pl.plane;
    const int64_t *img = pl.img;
    bool ok = dy->rank == ni + 2 && dy->dims[0] == n && dy->dims[1] == c;
    for (int i = 0; ok && i < ni; i++)
        ok = dy->dims[2 + i] == img[i];
    if (!ok)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy must have the image's shape [%lld, %lld, image_shape...]",
                         (long long)n, (long long)c);
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, 3, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    size_t esz = x->dtype == LT_F64 ? 8 : 4;
    const void *src = dy->data;
    void *dst = dx->data;
    if (x->dtype != LT_F32 && x->dtype != LT_F64) {
        src = lt_nn_f32_of(k, dy);
        dst = lt_k_scratch(k, sizeof(float) * (size_t)dx->numel);
        if (!src)
            return LT_ERR_NOMEM;
        if (!dst)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    memset(dst, 0, esz * (size_t)dx->numel);
    /* one channel of one image at a time: its K rows of the column matrix
     * are contiguous, so the planes run in parallel */
#pragma omp parallel for schedule(static) if (dx->numel >= LT_NN_PAR_MIN)
    for (int64_t t = 0; t < n * c; t++)
        lt_nn_im2col((const char *)src + (size_t)(t * plane) * esz, (char *)dst + (size_t)(t * K * L) * esz, esz,
                     &pl.g, 1, 0, L);
    if (dst != dx->data)
        lt_nn_store_f32(dx, dst);
    return LT_OK;
}

#define STFT_GRAD(T, S)                                                                                          \
    static void stft_grad_##S(const T *dz, const T *x, const T *w, T *dx, T *dw, int64_t nb, int64_t len,       \
                              int64_t c, int64_t frames, int64_t fl, int64_t step)                                \
    {                                                                                                            \
        if (dx) {                                                                                                \
            _Pragma("omp parallel for schedule(static) if (nb * len * c > LT_NU_PAR)")                             \
            for (int64_t bt = 0; bt < nb * len; bt++) {                                                          \
                int64_t b = bt / len, t = bt % len;                                                              \
                /* the frames f with f * step <= t < f * step + fl */                                           \
                int64_t f0 = t < fl ? 0 : (t - fl) / step + 1, f1 = t / step < frames ? t / step : frames - 1; \
                for (int64_t ch = 0; ch < c; ch++) {                                                             \
                    T acc = 0;                                                                                   \
                    for (int64_t f = f0; f <= f1; f++) {                                                         \
                        int64_t j = t - f * step;                                                                \
                        acc += dz[((b * frames + f) * fl + j) * 2 + ch] * (w ? w[j] : (T)1);                    \
                    }                                                                                            \
                    dx[bt * c + ch] = acc;                                                                       \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
        if (dw) {                                                                                                \
            _Pragma("omp parallel for schedule(static) if (nb * frames * fl * c > LT_NU_PAR)")                     \
            for (int64_t j = 0; j < fl; j++) {                                                                   \
                double acc = 0;                                                                                  \
                for (int64_t bf = 0; bf < nb * frames; bf++) {                                                   \
                    int64_t b = bf / frames, f = bf % frames;                                                    \
                    const T *xs = x + (b * len + f * step + j) * c;                                              \
                    for (int64_t ch = 0; ch < c; ch++)                                                           \
                        acc += (double)dz[(bf * fl + j) * 2 + ch] * xs[ch];                                      \
                }                                                                                                \
                dw[j] = (T)acc;                                                                                  \
            }                                                                                                    \
        }                                                                                                        \
    }
STFT_GRAD(float, f32)
STFT_GRAD(double, f64)

static lt_status stft_grad(lt_kctx *k)
{
    const lt_tensor *dz = lt_k_in(k, 0), *x = lt_k_in(k, 1), *st = lt_k_in(k, 2), *win = lt_k_in(k, 3);
    if (!dz || !x || !st)
        return lt_k_fail(k, LT_ERR_INVALID, "needs dframes, the signal and frame_step");
    if (!lt_dtype_is_float(dz->dtype) || !lt_dtype_is_float(x->dtype) || (win && !lt_dtype_is_float(win->dtype)))
        return lt_k_fail(k, LT_ERR_RUNTIME, "dframes, the signal and the window must be float tensors");
    if (!(x->rank == 3 && (x->dims[2] == 1 || x->dims[2] == 2)) && x->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "signal must be [batch, length, 1 or 2]");
    int64_t nb = x->dims[0], len = x->dims[1], c = x->rank == 3 ? x->dims[2] : 1;
    if (st->numel != 1 || !lt_dtype_is_int(st->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "frame_step must be an integer scalar");
    int64_t step = lt_tensor_get_i64(st, 0);
    if (dz->rank != 4 || dz->dims[0] != nb || dz->dims[3] != 2 || dz->dims[2] < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dframes must be [%lld, frames, frame_length, 2]", (long long)nb);
    int64_t fl = dz->dims[2], frames = dz->dims[1];
    if (win && (win->rank != 1 || win->dims[0] != fl))
        return lt_k_fail(k, LT_ERR_RUNTIME, "window must be 1-D with %lld elements", (long long)fl);
    if (step < 1 || len < fl || frames != (len - fl) / step + 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%lld frames of %lld with step %lld do not fit a signal of %lld",
                         (long long)frames, (long long)fl, (long long)step, (long long)len);
    bool f32 = dz->dtype == LT_F32 && x->dtype == LT_F32 && (!win || win->dtype == LT_F32);
    lt_tensor *dx = NULL, *dw = NULL;
    lt_status s = LT_OK;
    if (lt_k_want(k, 0))
        s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx);
    if (s == LT_OK && win && lt_k_want(k, 1))
        s = lt_k_out(k, 1, win->dtype, 1, win->dims, &dw);
    if (s != LT_OK)
        return s;
    if (dx && dx->numel == 0)
        dx = NULL;
    const void *zw = lt_nu_work_in(k, dz, f32), *xw = lt_nu_work_in(k, x, f32);
    const void *ww = win ? lt_nu_work_in(k, win, f32) : NULL;
    void *dxw = dx ? lt_nu_work_out(k, dx, f32) : NULL, *dww = dw ? lt_nu_work_out(k, dw, f32) : NULL;
    if (!zw || !xw || (win && !ww) || (dx && !dxw) || (dw && !dww))
        return LT_ERR_RUNTIME;
    if (f32)
        stft_grad_f32(zw, xw, ww, dxw, dww, nb, len, c, frames, fl, step);
    else
        stft_grad_f64(zw, xw, ww, dxw, dww, nb, len, c, frames, fl, step);
    if (dx)
        lt_nu_work_store(dx, dxw, f32);
    if (dw)
        lt_nu_work_store(dw, dww, f32);
    return LT_OK;
}

void lt_cpu_register_grad_sampling(lt_kernel_fn *tab)
{
    tab[LT_OP_GRID_SAMPLE_GRAD] = lt_gx_grid_sample_grad;
    tab[LT_OP_ROI_ALIGN_GRAD] = lt_gx_roi_align_grad;
    tab[LT_OP_MAX_ROI_POOL_GRAD] = lt_gx_max_roi_pool_grad;
    tab[LT_OP_COL2_IM_GRAD] = col2im_grad;
    tab[LT_OP_STFT_GRAD] = stft_grad;
}
