/* GridSample's sampling, shared by the forward (image_grid.c) and
 * GridSampleGrad (grad_grid_sample.c): each output point is a small list of
 * (input offset, weight) taps, the tensor product of per-axis taps that
 * follow the ONNX reference, and for the gradient each weight's
 * derivative by the grid coordinates. */
#ifndef LT_CPU_GRID_UTIL_H
#define LT_CPU_GRID_UTIL_H

#include "image_util.h"
#include <math.h>

enum { LT_GS_LINEAR, LT_GS_NEAREST, LT_GS_CUBIC };
enum { LT_GS_ZEROS, LT_GS_BORDER, LT_GS_REFLECTION };

#define LT_GS_MAX_SPATIAL (LT_MAX_RANK - 2)

typedef struct lt_grid_params {
    int mode, pad, k;
    int maxt; /* taps of one output point at most */
    bool align;
    int64_t len[LT_GS_MAX_SPATIAL];    /* input spatial sizes, outermost first */
    int64_t stride[LT_GS_MAX_SPATIAL]; /* element strides of those axes */
} lt_grid_params;

/* The node's attributes and X's spatial sizes; fails unless grid is
 * (N, spatial..., k) with X's N. */
lt_status lt_img_grid_params(lt_kctx *k, const lt_tensor *x, const lt_tensor *grid, lt_grid_params *p);

/* x folded into [lo, hi] at the nearer border; *slope is d result / dx.
 * Out of line: only coordinates off the image take it, and inlined it
 * slows the common path of GridSampleGrad. */
__attribute__((noinline)) static double lt_gs_reflect(double x, double lo, double hi, double *slope)
{
    double rng = hi - lo;
    *slope = 1;
    if (rng <= 0) {
        *slope = 0;
        return lo;
    }
    if (x < lo || x > hi) {
        double dx = x < lo ? lo - x : x - hi, n = floor(dx / rng), r = dx - n * rng;
        bool even = fmod(n, 2) == 0;
        /* an even number of folds runs against x, an odd one with it */
        *slope = even ? -1 : 1;
        if (x < lo)
            return even ? lo + r : hi - r;
        return even ? hi - r : lo + r;
    }
    return x;
}

/* the derivative of the cubic convolution kernel (A = -0.75) */
static inline double lt_gs_keys_d(double t)
{
    const double a = -0.75;
    double sg = t < 0 ? -1 : 1;
    t = fabs(t);
    if (t <= 1)
        return sg * (3 * (a + 2) * t - 2 * (a + 3)) * t;
    if (t < 2)
        return sg * ((3 * a * t - 10 * a) * t + 8 * a);
    return 0;
}

/* Taps of one axis for normalized coordinate g: up to 4 indices (-1 where
 * the zeros padding reads 0), weights, and (dw not NULL) the weights'
 * derivatives by g. */
static inline int lt_gs_axis_taps(const lt_grid_params *p, int axis, double g, int64_t *idx, double *w, double *dw)
{
    int64_t len = p->len[axis];
    double lo = p->align ? 0 : -0.5, hi = p->align ? (double)len - 1 : (double)len - 0.5;
    double x = p->align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    double dx = p->align ? (double)(len - 1) / 2 : (double)len / 2; /* d x / d g */
    if (!(fabs(x) < 1e15)) {
        x = x > 0 ? 1e15 : -1e15; /* far outside (or NaN): keeps casts defined */
        dx = 0;
    }
    if (p->mode == LT_GS_NEAREST) {
        x = nearbyint(x); /* halves to even on every axis count, as the ONNX reference (np.rint) */
        dx = 0;
    }
    if (x < lo || x > hi) {
        if (p->pad == LT_GS_BORDER) {
            x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
            dx = 0;
        } else if (p->pad == LT_GS_REFLECTION) {
            double slope;
            x = lt_gs_reflect(x, lo, hi, &slope);
            dx *= slope;
        }
    }
    int n;
    double x0 = floor(x), t = x - x0, unused;
    int64_t first;
    if (p->mode == LT_GS_NEAREST) {
        n = 1;
        first = (int64_t)x;
        w[0] = 1;
        if (dw)
            dw[0] = 0;
    } else if (p->mode == LT_GS_LINEAR) {
        n = 2;
        first = (int64_t)x0;
        w[0] = 1 - t;
        w[1] = t;
        if (dw) {
            dw[0] = -dx;
            dw[1] = dx;
        }
    } else {
        n = 4;
        first = (int64_t)x0 - 1;
        for (int i = 0; i < 4; i++) {
            w[i] = lt_img_cubic(t + 1 - i, -0.75);
            if (dw)
                dw[i] = lt_gs_keys_d(t + 1 - i) * dx;
        }
    }
    for (int i = 0; i < n; i++) {
        int64_t j = first + i;
        if (j < 0 || j >= len) {
            if (p->pad == LT_GS_ZEROS)
                j = -1;
            else if (p->pad == LT_GS_BORDER)
                j = j < 0 ? 0 : len - 1;
            else
                j = (int64_t)lt_gs_reflect((double)j, lo, hi, &unused);
            if (j >= len) /* a degenerate axis cannot reflect further */
                j = len - 1;
        }
        idx[i] = j;
    }
    return n;
}

/* The taps of the output point at grid coordinates g: offsets into one
 * (n, c) image and weights; returns their number. Taps that read the zeros
 * padding are left out, and taps of weight 0 too unless keep_zero. When
 * dwt is not NULL, dwt[a * maxt + t] is tap t's weight differentiated by
 * the coordinate of spatial axis a (outermost first). In the header: it
 * runs per output point, and each caller's constant arguments specialise
 * it. */
static inline int lt_gs_taps(const lt_grid_params *p, const double *g, int64_t *off, double *wt, double *dwt,
                             bool keep_zero)
{
    int64_t idx[LT_GS_MAX_SPATIAL][4];
    double w[LT_GS_MAX_SPATIAL][4], dw[LT_GS_MAX_SPATIAL][4];
    int n[LT_GS_MAX_SPATIAL], cnt[LT_GS_MAX_SPATIAL] = {0}, total = 0, k = p->k;
    /* the grid's last dim lists coordinates innermost axis first (x, y, z) */
    for (int a = 0; a < k; a++)
        n[a] = lt_gs_axis_taps(p, a, g[k - 1 - a], idx[a], w[a], dwt ? dw[a] : NULL);
    for (;;) {
        int64_t o = 0;
        double ww = 1;
        bool zero = false;
        for (int a = 0; a < k; a++) {
            int64_t j = idx[a][cnt[a]];
            zero = zero || j < 0;
            o += j * p->stride[a];
            ww *= w[a][cnt[a]];
        }
        if (!zero && (keep_zero || ww != 0)) {
            off[total] = o;
            wt[total] = ww;
            for (int a = 0; dwt && a < k; a++) {
                double d = dw[a][cnt[a]];
                for (int b = 0; b < k; b++)
                    if (b != a)
                        d *= w[b][cnt[b]];
                dwt[a * p->maxt + total] = d;
            }
            total++;
        }
        int a = k - 1;
        while (a >= 0 && ++cnt[a] == n[a])
            cnt[a--] = 0;
        if (a < 0)
            break;
    }
    return total;
}

#endif
