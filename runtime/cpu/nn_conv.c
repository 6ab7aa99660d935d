/* CPU kernels: Conv, ConvInteger, QLinearConv. One im2col + GEMM core on
 * float (float16 / bfloat16 go through it) or double, depthwise
 * convolutions swept directly (nn_conv_depthwise.c); the integer
 * convolutions run it on double, which holds their sums exactly. */
#include "nn_util.h"
#include "nn_conv_depthwise.h"
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <string.h>

/* One convolution: x [N, C, img...], w [M, C/G, k...], optional bias b [M],
 * y [N, M, grid...], all float (esz 4) or double (esz 8). */
typedef struct conv_job {
    lt_nn_geom g;
    size_t esz;
    int64_t n, c, m, groups;
    const void *x, *w, *b;
    void *y;
} conv_job;

/* Sets y's rows [Mg, L] (columns j0..j1) to the bias, or leaves them to the
 * GEMM (returns false) when there is none. */
static bool fill_bias(const conv_job *j, void *yt, const void *bias, int64_t mg, int64_t L, int64_t j0, int64_t j1)
{
    if (!bias)
        return false;
    for (int64_t r = 0; r < mg; r++) {
        if (j->esz == 4) {
            float v = ((const float *)bias)[r], *row = (float *)yt + r * L;
            for (int64_t q = j0; q < j1; q++)
                row[q] = v;
        } else {
            double v = ((const double *)bias)[r], *row = (double *)yt + r * L;
            for (int64_t q = j0; q < j1; q++)
                row[q] = v;
        }
    }
    return true;
}

/* im2col tiles stay below this many bytes per thread */
#define TILE_BYTES ((int64_t)2 << 20)

static lt_status conv_run(lt_kctx *k, const conv_job *j)
{
    const lt_nn_geom *g = &j->g;
    int nsp = g->nsp;
    size_t esz = j->esz;
    int64_t cg = j->c / j->groups, mg = j->m / j->groups;
    int64_t K = lt_nn_prod(nsp, g->k), L = lt_nn_prod(nsp, g->grid), plane = lt_nn_prod(nsp, g->img), R = 0;
    int64_t tasks = j->n * j->groups;
    if (K < 0 || L < 0 || plane < 0 || !lt_nn_mul(cg, K, &R) || R > INT_MAX || L > INT_MAX || mg > INT_MAX)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution too large for one GEMM (%lld x %lld x %lld)",
                         (long long)mg, (long long)L, (long long)R);
    if (tasks == 0 || L == 0 || mg == 0)
        return LT_OK;
    if (lt_nn_regions(esz, g, j->groups, j->n, j->m, false))
        return lt_nn_conv_regions(k, g, j->n, j->c, j->m, j->x, j->w, j->b, j->y);
    /* a 1x1 kernel with unit strides and no padding reads the image as is */
    bool direct = K == 1;
    for (int i = 0; i < nsp; i++)
        direct = direct && g->s[i] == 1 && g->pb[i] == 0 && g->pe[i] == 0;
    double flops = 2.0 * (double)tasks * (double)mg * (double)L * (double)R;
    bool worth = flops >= 8.0 * LT_NN_PAR_MIN;
    /* Work items are column tiles of (image, group) tasks: small enough for
     * the im2col buffer to stay in cache, and enough of them for every
     * planned thread (par.h: the tiles, so the products' bits, do not
     * depend on the threads that run them). Widths are multiples of 16
     * for the GEMM's sake. */
    int64_t tile = R ? TILE_BYTES / (R * (int64_t)esz) : L;
    tile = tile < 64 ? 64 : tile / 16 * 16;
    if (worth && tasks < LT_PAR_PLAN) {
        int64_t split = (LT_PAR_PLAN + tasks - 1) / tasks, t2 = ((L + split - 1) / split + 15) / 16 * 16;
        tile = t2 < tile ? t2 : tile;
    }
    tile = tile > L ? L : tile;
    int64_t ntiles = (L + tile - 1) / tile, items = tasks * ntiles, bytes;
    int nt = lt_par_threads(items, worth);
    int nbuf = direct ? 0 : nt;
    char *scratch = NULL;
    if (nbuf && (!lt_nn_mul(R * tile, (int64_t)esz * nbuf, &bytes) || !(scratch = lt_k_scratch(k, (size_t)bytes))))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (im2col buffer of %lld x %lld)", (long long)R,
                         (long long)tile);
    const char *x = j->x, *w = j->w, *b = j->b;
    char *y = j->y;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t t = it / ntiles, n = t / j->groups, gi = t % j->groups;
        int64_t c0 = it % ntiles * tile, c1 = c0 + tile < L ? c0 + tile : L;
        const char *xt = x + (size_t)((n * j->c + gi * cg) * plane) * esz;
        char *yt = y + (size_t)((n * j->m + gi * mg) * L) * esz;
        const char *col = xt + (size_t)c0 * esz;
        int64_t ldb = L;
        if (!direct) {
            char *buf = scratch + (size_t)(R * tile) * esz * (size_t)omp_get_thread_num();
            lt_nn_im2col(xt, buf, esz, g, cg, c0, c1);
            col = buf;
            ldb = c1 - c0;
        }
        bool acc = fill_bias(j, yt, b ? b + (size_t)(gi * mg) * esz : NULL, mg, L, c0, c1);
        lt_nn_gemm(esz, false, mg, c1 - c0, R, w + (size_t)(gi * mg * R) * esz, R, col, ldb, acc,
                   yt + (size_t)c0 * esz, L);
    }
    return LT_OK;
}

/* conv_run for lt_nn_blocked jobs: each GEMM covers a block of images (in
 * one group), their columns side by side, so the weights are packed once a
 * block rather than once an image; the product goes through a buffer into
 * y, the bias added on the way. */
static lt_status conv_run_blocked(lt_kctx *k, const conv_job *j)
{
    const lt_nn_geom *g = &j->g;
    int64_t K = lt_nn_prod(g->nsp, g->k), L = lt_nn_prod(g->nsp, g->grid), plane = lt_nn_prod(g->nsp, g->img);
    int64_t G = j->groups, cg = j->c / G, R = cg * K, M = j->m / G, n = j->n, nb = lt_nn_block_images(L, n);
    int64_t nblk = (n + nb - 1) / nb, items = nblk * G;
    int nth = omp_get_max_threads();
    bool parallel =
        nth > 1 && items > 1 && 2.0 * (double)n * (double)j->m * (double)L * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (items < nth ? (int)items : nth) : 1;
    int64_t per = (R + M) * nb * L;
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)(per * nt));
    if (!bufs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (im2col buffer of %lld x %lld)", (long long)R,
                         (long long)(nb * L));
    const float *x = j->x, *w = j->w, *b = j->b;
    float *y = j->y;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *colb = bufs + per * omp_get_thread_num(), *out = colb + R * nb * L;
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < items; item++) {
            int64_t blk = item / G, gi = item % G, i0 = blk * nb, m = n - i0 < nb ? n - i0 : nb;
            for (int64_t i = 0; i < m; i++)
                lt_nn_im2col2d_f32(x + ((i0 + i) * j->c + gi * cg) * plane, colb + i * L, m * L, g, cg);
            lt_nn_gemm(4, false, M, m * L, R, w + gi * M * R, R, colb, m * L, false, out, m * L);
            for (int64_t i = 0; i < m; i++)
                for (int64_t o = 0; o < M; o++) {
                    const float *src = out + o * m * L + i * L;
                    float *dst = y + ((i0 + i) * j->m + gi * M + o) * L, bv = b ? b[gi * M + o] : 0;
#pragma omp simd
                    for (int64_t q = 0; q < L; q++)
                        dst[q] = src[q] + bv;
                }
        }
    }
    return LT_OK;
}

/* Checks x and w of a convolution and fills the job's shapes and geometry;
 * allocates y [N, M, grid...] of dtype ydt. */
static lt_status conv_setup(lt_kctx *k, const lt_tensor *x, const lt_tensor *w, lt_dtype ydt, conv_job *j,
                            lt_tensor **y)
{
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    if (w->rank != x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d with weights of rank %d", x->rank, w->rank);
    int64_t groups = lt_attr_int(k->node, "group", 1);
    if (groups < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "group %lld", (long long)groups);
    memset(j, 0, sizeof *j);
    j->n = x->dims[0];
    j->c = x->dims[1];
    j->m = w->dims[0];
    j->groups = groups;
    if (j->c != w->dims[1] * groups)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input has %lld channels, weights expect %lld x group %lld",
                         (long long)j->c, (long long)w->dims[1], (long long)groups);
    if (j->m % groups)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%lld output channels do not split into %lld groups", (long long)j->m,
                         (long long)groups);
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    lt_status s = lt_nn_kernel(k, nsp, w->dims + 2, kernel);
    if (s != LT_OK)
        return s;
    char why[256];
    if (!lt_nn_window(k->node, nsp, x->dims + 2, kernel, false, &j->g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    int64_t dims[LT_MAX_RANK] = {j->n, j->m};
    for (int i = 0; i < nsp; i++)
        dims[i + 2] = j->g.grid[i];
    return lt_k_out(k, 0, ydt, x->rank, dims, y);
}

static lt_status check_bias(lt_kctx *k, const lt_tensor *b, int64_t m, bool any_type, lt_dtype dt)
{
    if (!b)
        return LT_OK;
    if (b->rank != 1 || b->dims[0] != m)
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias of %lld values for %lld output channels", (long long)b->numel,
                         (long long)m);
    if (!any_type && b->dtype != dt)
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias of type %s, expected %s", lt_dtype_name(b->dtype),
                         lt_dtype_name(dt));
    return LT_OK;
}

static lt_status k_conv(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *w = lt_k_in(k, 1), *b = lt_k_in(k, 2);
    if (!x || !w)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input and weights");
    if (w->dtype != x->dtype || !lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s with weights of type %s (float types expected)",
                         lt_dtype_name(x->dtype), lt_dtype_name(w->dtype));
    conv_job j;
    lt_tensor *y;
    lt_status s = conv_setup(k, x, w, x->dtype, &j, &y);
    if (s == LT_OK)
        s = check_bias(k, b, j.m, false, x->dtype);
    if (s != LT_OK || y->numel == 0)
        return s;
    bool depthwise = lt_nn_depthwise_usable(&j.g, j.groups, j.c, j.m);
    if (x->dtype == LT_F32 || x->dtype == LT_F64) {
        j.esz = x->dtype == LT_F32 ? 4 : 8;
        j.x = x->data;
        j.w = w->data;
        j.b = b ? b->data : NULL;
        j.y = y->data;
        if (depthwise) {
            lt_nn_depthwise_fwd(j.esz, &j.g, j.n, j.c, j.m, j.x, j.w, j.b, j.y);
            return LT_OK;
        }
        if (j.esz == 4) {
            int64_t K = lt_nn_prod(j.g.nsp, j.g.k), L = lt_nn_prod(j.g.nsp, j.g.grid);
            bool direct = K == 1;
            for (int i = 0; i < j.g.nsp; i++)
                direct = direct && j.g.s[i] == 1 && j.g.pb[i] == 0 && j.g.pe[i] == 0;
            bool regions = lt_nn_regions(j.esz, &j.g, j.groups, j.n, j.m, false);
            /* a 1x1 kernel over a small grid: panels before regions (both
             * avoid thin per-image products; the panels skip the gathers) */
            if (K == 1 && lt_nn_conv_panels_usable(&j.g, j.groups, j.c))
                return lt_nn_conv_panels(k, &j.g, j.n, j.c, j.m, j.x, j.w, j.b, j.y);
            if (lt_nn_conv_images_usable(&j.g, j.groups, j.n, j.c))
                return lt_nn_conv_images(k, &j.g, j.n, j.c, j.m, j.x, j.w, j.b, j.y);
            if (!regions && lt_nn_conv_panels_usable(&j.g, j.groups, j.c))
                return lt_nn_conv_panels(k, &j.g, j.n, j.c, j.m, j.x, j.w, j.b, j.y);
            if (!regions && lt_nn_blocked(j.esz, &j.g, j.groups, direct, L, j.n))
                return conv_run_blocked(k, &j);
        }
        return conv_run(k, &j);
    }
    /* half types: through float */
    j.esz = 4;
    j.x = lt_nn_f32_of(k, x);
    j.w = lt_nn_f32_of(k, w);
    j.b = b ? lt_nn_f32_of(k, b) : NULL;
    float *yf = lt_k_scratch(k, sizeof(float) * (size_t)y->numel);
    if (!j.x || !j.w || (b && !j.b))
        return LT_ERR_NOMEM;
    if (!yf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    j.y = yf;
    if (depthwise)
        lt_nn_depthwise_fwd(j.esz, &j.g, j.n, j.c, j.m, j.x, j.w, j.b, j.y);
    else
        s = conv_run(k, &j);
    if (s == LT_OK)
        lt_nn_store_f32(y, yf);
    return s;
}

/* A zero point: 0 when absent; a scalar (or, where per_channel > 0, one
 * value per output channel) of the given integer types. Returns the count
 * of values (1 or per_channel) in *n. */
static lt_status zero_point(lt_kctx *k, const lt_tensor *z, const char *what, lt_dtype want, int64_t per_channel,
                            const double **v, int64_t *n)
{
    static const double zero = 0;
    *v = &zero;
    *n = 1;
    if (!z)
        return LT_OK;
    if (z->dtype != want)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s of type %s, expected %s", what, lt_dtype_name(z->dtype),
                         lt_dtype_name(want));
    if (z->numel != 1 && !(per_channel > 0 && z->rank == 1 && z->numel == per_channel))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s has %lld values (expected 1%s)", what, (long long)z->numel,
                         per_channel > 0 ? " or one per output channel" : "");
    double *d = lt_nn_f64_of(k, z);
    if (!d)
        return LT_ERR_NOMEM;
    *v = d;
    *n = z->numel;
    return LT_OK;
}

static bool is_8bit(lt_dtype t) { return t == LT_U8 || t == LT_I8; }

/* Shared by ConvInteger and QLinearConv: runs (x - xz) * (w - wz) (+ bias)
 * in double; returns the result of shape y in *acc. */
static lt_status conv_int(lt_kctx *k, const lt_tensor *x, const lt_tensor *xz, const lt_tensor *w,
                          const lt_tensor *wz, const lt_tensor *b, lt_dtype ydt, lt_tensor **y, double **acc,
                          conv_job *j)
{
    if (!is_8bit(x->dtype) || !is_8bit(w->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s with weights of type %s (8-bit integers expected)",
                         lt_dtype_name(x->dtype), lt_dtype_name(w->dtype));
    lt_status s = conv_setup(k, x, w, ydt, j, y);
    if (s != LT_OK)
        return s;
    const double *xzv, *wzv;
    int64_t nxz, nwz;
    if ((s = zero_point(k, xz, "the input zero point", x->dtype, 0, &xzv, &nxz)) != LT_OK ||
        (s = zero_point(k, wz, "the weight zero point", w->dtype, j->m, &wzv, &nwz)) != LT_OK)
        return s;
    if (b && (b->dtype != LT_I32 || b->rank != 1 || b->dims[0] != j->m))
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias must be int32 with one value per output channel");
    double *xd = lt_nn_f64_of(k, x), *wd = lt_nn_f64_of(k, w), *bd = b ? lt_nn_f64_of(k, b) : NULL;
    *acc = lt_k_scratch(k, sizeof(double) * (size_t)((*y)->numel ? (*y)->numel : 1));
    if (!xd || !wd || (b && !bd))
        return LT_ERR_NOMEM;
    if (!*acc)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < x->numel; i++)
        xd[i] -= xzv[0];
    int64_t per_m = j->m ? w->numel / j->m : 0;
    for (int64_t i = 0; i < w->numel; i++)
        wd[i] -= wzv[nwz > 1 ? i / per_m : 0];
    if ((*y)->numel == 0)
        return LT_OK;
    j->esz = 8;
    j->x = xd;
    j->w = wd;
    j->b = bd;
    j->y = *acc;
    return conv_run(k, j);
}

static lt_status k_conv_integer(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *w = lt_k_in(k, 1);
    if (!x || !w)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input and weights");
    lt_tensor *y;
    double *acc = NULL;
    conv_job j;
    lt_status s = conv_int(k, x, lt_k_in(k, 2), w, lt_k_in(k, 3), NULL, LT_I32, &y, &acc, &j);
    if (s == LT_OK)
        lt_nn_store_f64(y, acc);
    return s;
}

/* a positive float scale: a scalar, or one per output channel */
static lt_status scale_of(lt_kctx *k, const lt_tensor *t, const char *what, int64_t per_channel, const float **v,
                          int64_t *n)
{
    if (!t || t->dtype != LT_F32)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be a float32 tensor", what);
    if (t->numel != 1 && !(per_channel > 0 && t->rank == 1 && t->numel == per_channel))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s has %lld values", what, (long long)t->numel);
    *v = t->data;
    *n = t->numel;
    return LT_OK;
}

static lt_status k_qlinear_conv(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *w = lt_k_in(k, 3), *yz = lt_k_in(k, 7);
    if (!x || !w || !yz)
        return lt_k_fail(k, LT_ERR_INVALID, "needs x, w and y's zero point");
    if (!is_8bit(yz->dtype) || yz->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "y's zero point must be one 8-bit integer");
    lt_tensor *y;
    double *acc = NULL;
    conv_job j;
    lt_status s = conv_int(k, x, lt_k_in(k, 2), w, lt_k_in(k, 5), lt_k_in(k, 8), yz->dtype, &y, &acc, &j);
    if (s != LT_OK)
        return s;
    const float *xs = NULL, *ws = NULL, *ys = NULL;
    int64_t n1 = 0, nws = 0, n2 = 0;
    if ((s = scale_of(k, lt_k_in(k, 1), "x_scale", 0, &xs, &n1)) != LT_OK ||
        (s = scale_of(k, lt_k_in(k, 4), "w_scale", j.m, &ws, &nws)) != LT_OK ||
        (s = scale_of(k, lt_k_in(k, 6), "y_scale", 0, &ys, &n2)) != LT_OK)
        return s;
    double zp = lt_tensor_get_f64(yz, 0);
    int64_t L = lt_nn_prod(j.g.nsp, j.g.grid);
    /* requantize as float, as reference runtimes do */
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t m = i / L % j.m;
        float scale = xs[0] * ws[nws > 1 ? m : 0] / ys[0];
        acc[i] = nearbyintf((float)acc[i] * scale) + zp;
    }
    lt_nn_store_f64(y, acc);
    return LT_OK;
}

void lt_nn_register_conv(lt_kernel_fn *tab)
{
    tab[LT_OP_CONV] = k_conv;
    tab[LT_OP_CONV_INTEGER] = k_conv_integer;
    tab[LT_OP_Q_LINEAR_CONV] = k_qlinear_conv;
}
