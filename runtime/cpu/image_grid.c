/* CPU kernel: GridSample (opset 16's 2-d form and opset 20's N-d form).
 * Each output point is a small list of (input offset, weight) taps, the
 * tensor product of per-axis taps that follow the ONNX reference: grid
 * coordinates are denormalized, padded (border, reflection), and every tap
 * reads through the padding rule (zeros, clamp or reflect). The taps and
 * their derivatives by the grid are shared with GridSampleGrad. */
#include "image_util.h"
#include "norm_util.h"
#include <math.h>
#include <string.h>

/* x folded into [lo, hi] at the nearer border; *slope is d result / dx */
static double reflect(double x, double lo, double hi, double *slope)
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

/* the cubic convolution kernel (A = -0.75) and its derivative */
static double keys(double t)
{
    const double a = -0.75;
    t = fabs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

static double keys_d(double t)
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
static int axis_taps(const lt_grid_params *p, int axis, double g, int64_t *idx, double *w, double *dw)
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
        x = p->k == 3 ? round(x) : nearbyint(x); /* as PyTorch's 3-d and 2-d kernels */
        dx = 0;
    }
    if (x < lo || x > hi) {
        if (p->pad == LT_GS_BORDER) {
            x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
            dx = 0;
        } else if (p->pad == LT_GS_REFLECTION) {
            double slope;
            x = reflect(x, lo, hi, &slope);
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
            w[i] = keys(t + 1 - i);
            if (dw)
                dw[i] = keys_d(t + 1 - i) * dx;
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
                j = (int64_t)reflect((double)j, lo, hi, &unused);
            if (j >= len) /* a degenerate axis cannot reflect further */
                j = len - 1;
        }
        idx[i] = j;
    }
    return n;
}

int lt_img_grid_taps(const lt_grid_params *p, const double *g, int64_t *off, double *wt, double *dwt, bool keep_zero)
{
    int64_t idx[LT_GS_MAX_SPATIAL][4];
    double w[LT_GS_MAX_SPATIAL][4], dw[LT_GS_MAX_SPATIAL][4];
    int n[LT_GS_MAX_SPATIAL], cnt[LT_GS_MAX_SPATIAL] = {0}, total = 0, k = p->k;
    /* the grid's last dim lists coordinates innermost axis first (x, y, z) */
    for (int a = 0; a < k; a++)
        n[a] = axis_taps(p, a, g[k - 1 - a], idx[a], w[a], dwt ? dw[a] : NULL);
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

lt_status lt_img_grid_params(lt_kctx *k, const lt_tensor *x, const lt_tensor *grid, lt_grid_params *p)
{
    const lt_node *node = k->node;
    memset(p, 0, sizeof *p);
    p->k = x->rank - 2;
    if (p->k < 1 || p->k > LT_GS_MAX_SPATIAL || grid->rank != x->rank || grid->dims[grid->rank - 1] != p->k ||
        grid->dims[0] != x->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "grid must be (N, spatial..., %d) with X's N; X has rank %d", p->k,
                         x->rank);
    static const char *const modes[] = {"linear", "bilinear", "nearest", "cubic", "bicubic"};
    static const int mode_ids[] = {LT_GS_LINEAR, LT_GS_LINEAR, LT_GS_NEAREST, LT_GS_CUBIC, LT_GS_CUBIC};
    const char *m = lt_attr_str(node, "mode", node->opset >= 20 ? "linear" : "bilinear");
    p->mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, modes[i]) == 0)
            p->mode = mode_ids[i];
    const char *pm = lt_attr_str(node, "padding_mode", "zeros");
    p->pad = strcmp(pm, "zeros") == 0 ? LT_GS_ZEROS : strcmp(pm, "border") == 0 ? LT_GS_BORDER
                                                  : strcmp(pm, "reflection") == 0 ? LT_GS_REFLECTION : -1;
    if (p->mode < 0 || p->pad < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported mode '%s' or padding_mode '%s'", m, pm);
    p->align = lt_attr_int(node, "align_corners", 0) != 0;
    int64_t st = 1;
    for (int a = p->k - 1; a >= 0; a--) {
        p->len[a] = x->dims[2 + a];
        p->stride[a] = st;
        st *= p->len[a];
    }
    p->maxt = 1;
    for (int a = 0; a < p->k; a++)
        p->maxt *= p->mode == LT_GS_CUBIC ? 4 : p->mode == LT_GS_LINEAR ? 2 : 1;
    return LT_OK;
}

#define GS_APPLY(T, S)                                                                                          \
    static void apply_##S(const lt_grid_params *p, const T *x, const double *grid, T *y, int64_t nb, int64_t c,   \
                          int64_t img, int64_t pts)                                                               \
    {                                                                                                           \
        _Pragma("omp parallel for if (nb * pts * c > LT_NU_PAR && nb * pts > 1) schedule(static)")              \
        for (int64_t np = 0; np < nb * pts; np++) {                                                             \
            int64_t b = np / pts, q = np % pts, off[p->maxt];                                                   \
            double wt[p->maxt];                                                                                 \
            int nt = lt_img_grid_taps(p, grid + np * p->k, off, wt, NULL, false);                               \
            for (int64_t ch = 0; ch < c; ch++) {                                                                \
                const T *xi = x + (b * c + ch) * img;                                                           \
                double acc = 0;                                                                                 \
                for (int t = 0; t < nt; t++)                                                                    \
                    acc += wt[t] * xi[off[t]];                                                                  \
                y[(b * c + ch) * pts + q] = (T)acc;                                                             \
            }                                                                                                   \
        }                                                                                                       \
    }
GS_APPLY(float, f32)
GS_APPLY(double, f64)

lt_status lt_cpu_grid_sample(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *grid = lt_k_in(k, 1);
    if (!x || !grid)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X and grid");
    if (!lt_dtype_is_float(x->dtype) && !lt_dtype_is_int(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be numeric, got %s", lt_dtype_name(x->dtype));
    lt_grid_params p;
    lt_status s = lt_img_grid_params(k, x, grid, &p);
    if (s != LT_OK)
        return s;
    int64_t nb = x->dims[0], c = x->dims[1], img = lt_shape_numel(p.k, x->dims + 2);
    int64_t ydims[LT_MAX_RANK];
    ydims[0] = nb;
    ydims[1] = c;
    for (int a = 0; a < p.k; a++)
        ydims[2 + a] = grid->dims[1 + a];
    int64_t pts = lt_shape_numel(p.k, ydims + 2);
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, ydims, &y)) != LT_OK || y->numel == 0)
        return s;
    if (img == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot sample from an empty image");
    bool f32 = x->dtype == LT_F32;
    const void *xw = lt_nu_work_in(k, x, f32);
    const double *gw = xw ? lt_nu_as_f64(k, grid) : NULL;
    void *yw = gw ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME;
    if (f32)
        apply_f32(&p, xw, gw, yw, nb, c, img, pts);
    else
        apply_f64(&p, xw, gw, yw, nb, c, img, pts);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}
