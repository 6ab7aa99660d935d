/* CPU kernel: GridSample (opset 16's 2-d form and opset 20's N-d form).
 * Each output point is a small list of (input offset, weight) taps, the
 * tensor product of per-axis taps that follow the ONNX reference: grid
 * coordinates are denormalized, padded (border, reflection), and every tap
 * reads through the padding rule (zeros, clamp or reflect). */
#include "image_util.h"
#include "norm_util.h"
#include <math.h>
#include <string.h>

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_MAX_SPATIAL (LT_MAX_RANK - 2)

typedef struct gs_params {
    int mode, pad, k;
    bool align;
    int64_t len[GS_MAX_SPATIAL];    /* input spatial sizes, outermost first */
    int64_t stride[GS_MAX_SPATIAL]; /* element strides of those axes */
} gs_params;

/* Reflects x into [lo, hi] by folding at the nearer border. */
static double reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0)
        return lo;
    if (x < lo) {
        double dx = lo - x, n = floor(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, n = floor(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? hi - r : lo + r;
    }
    return x;
}

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

/* Taps of one axis of length len for normalized coordinate g: up to 4
 * indices (-1 where the zeros padding reads 0) and weights. */
static int axis_taps(const gs_params *p, int axis, double g, int64_t *idx, double *w)
{
    int64_t len = p->len[axis];
    double lo = p->align ? 0 : -0.5, hi = p->align ? (double)len - 1 : (double)len - 0.5;
    double x = p->align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    if (!(fabs(x) < 1e15))
        x = x > 0 ? 1e15 : -1e15; /* far outside (or NaN): keeps casts defined */
    if (p->mode == GS_NEAREST)
        x = p->k == 3 ? round(x) : nearbyint(x); /* as PyTorch's 3-d and 2-d kernels */
    if (x < lo || x > hi) {
        if (p->pad == GS_BORDER)
            x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
        else if (p->pad == GS_REFLECTION)
            x = reflect(x, lo, hi);
    }
    int n;
    double x0 = floor(x), t = x - x0;
    int64_t first;
    if (p->mode == GS_NEAREST) {
        n = 1;
        first = (int64_t)x;
        w[0] = 1;
    } else if (p->mode == GS_LINEAR) {
        n = 2;
        first = (int64_t)x0;
        w[0] = 1 - t;
        w[1] = t;
    } else {
        n = 4;
        first = (int64_t)x0 - 1;
        for (int i = 0; i < 4; i++)
            w[i] = keys(t + 1 - i);
    }
    for (int i = 0; i < n; i++) {
        int64_t j = first + i;
        if (j < 0 || j >= len) {
            if (p->pad == GS_ZEROS)
                j = -1;
            else if (p->pad == GS_BORDER)
                j = j < 0 ? 0 : len - 1;
            else
                j = (int64_t)reflect((double)j, lo, hi);
            if (j >= len) /* a degenerate axis cannot reflect further */
                j = len - 1;
        }
        idx[i] = j;
    }
    return n;
}

/* The taps of one output point: offsets into one (n, c) image and weights;
 * returns their number (taps reading zeros padding are left out). */
static int point_taps(const gs_params *p, const double *g, int64_t *off, double *wt)
{
    int64_t idx[GS_MAX_SPATIAL][4];
    double w[GS_MAX_SPATIAL][4];
    int n[GS_MAX_SPATIAL], cnt[GS_MAX_SPATIAL] = {0}, total = 0;
    /* the grid's last dim lists coordinates innermost axis first (x, y, z) */
    for (int a = 0; a < p->k; a++)
        n[a] = axis_taps(p, a, g[p->k - 1 - a], idx[a], w[a]);
    for (;;) {
        int64_t o = 0;
        double ww = 1;
        bool zero = false;
        for (int a = 0; a < p->k; a++) {
            int64_t j = idx[a][cnt[a]];
            zero = zero || j < 0;
            o += j * p->stride[a];
            ww *= w[a][cnt[a]];
        }
        if (!zero && ww != 0) {
            off[total] = o;
            wt[total++] = ww;
        }
        int a = p->k - 1;
        while (a >= 0 && ++cnt[a] == n[a])
            cnt[a--] = 0;
        if (a < 0)
            break;
    }
    return total;
}

#define GS_APPLY(T, S)                                                                                          \
    static void apply_##S(const gs_params *p, const T *x, const double *grid, T *y, int64_t nb, int64_t c,        \
                          int64_t img, int64_t pts, int maxt)                                                     \
    {                                                                                                           \
        _Pragma("omp parallel for if (nb * pts * c > LT_NU_PAR && nb * pts > 1) schedule(static)")              \
        for (int64_t np = 0; np < nb * pts; np++) {                                                             \
            int64_t b = np / pts, q = np % pts, off[maxt];                                                      \
            double wt[maxt];                                                                                    \
            int nt = point_taps(p, grid + np * p->k, off, wt);                                                  \
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
    const lt_node *node = k->node;
    const lt_tensor *x = lt_k_in(k, 0), *grid = lt_k_in(k, 1);
    if (!x || !grid)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X and grid");
    if (!lt_dtype_is_float(x->dtype) && !lt_dtype_is_int(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be numeric, got %s", lt_dtype_name(x->dtype));
    gs_params p;
    memset(&p, 0, sizeof p);
    p.k = x->rank - 2;
    if (p.k < 1 || grid->rank != x->rank || grid->dims[grid->rank - 1] != p.k || grid->dims[0] != x->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "grid must be (N, spatial..., %d) with X's N; X has rank %d", p.k,
                         x->rank);
    static const char *const modes[] = {"linear", "bilinear", "nearest", "cubic", "bicubic"};
    static const int mode_ids[] = {GS_LINEAR, GS_LINEAR, GS_NEAREST, GS_CUBIC, GS_CUBIC};
    const char *m = lt_attr_str(node, "mode", node->opset >= 20 ? "linear" : "bilinear");
    p.mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, modes[i]) == 0)
            p.mode = mode_ids[i];
    const char *pm = lt_attr_str(node, "padding_mode", "zeros");
    p.pad = strcmp(pm, "zeros") == 0 ? GS_ZEROS : strcmp(pm, "border") == 0 ? GS_BORDER
                                                : strcmp(pm, "reflection") == 0 ? GS_REFLECTION : -1;
    if (p.mode < 0 || p.pad < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported mode '%s' or padding_mode '%s'", m, pm);
    p.align = lt_attr_int(node, "align_corners", 0) != 0;
    int64_t st = 1;
    for (int a = p.k - 1; a >= 0; a--) {
        p.len[a] = x->dims[2 + a];
        p.stride[a] = st;
        st *= p.len[a];
    }
    int64_t nb = x->dims[0], c = x->dims[1], img = st;
    int64_t ydims[LT_MAX_RANK];
    ydims[0] = nb;
    ydims[1] = c;
    for (int a = 0; a < p.k; a++)
        ydims[2 + a] = grid->dims[1 + a];
    int64_t pts = lt_shape_numel(p.k, ydims + 2);
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, ydims, &y);
    if (s != LT_OK || y->numel == 0)
        return s;
    if (img == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot sample from an empty image");
    int maxt = 1;
    for (int a = 0; a < p.k; a++)
        maxt *= p.mode == GS_CUBIC ? 4 : p.mode == GS_LINEAR ? 2 : 1;
    bool f32 = x->dtype == LT_F32;
    const void *xw = lt_nu_work_in(k, x, f32);
    const double *gw = xw ? lt_nu_as_f64(k, grid) : NULL;
    void *yw = gw ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME;
    if (f32)
        apply_f32(&p, xw, gw, yw, nb, c, img, pts, maxt);
    else
        apply_f64(&p, xw, gw, yw, nb, c, img, pts, maxt);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}
