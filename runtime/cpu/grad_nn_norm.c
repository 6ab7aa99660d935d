/* CPU kernels: BatchNormalizationGrad, InstanceNormalizationGrad and
 * GroupNormalizationGrad. All three normalize x viewed as rows [N * C, S]
 * (one row per image and channel) with a mean mu and inverse deviation
 * istd shared by a set of rows (a channel over the batch, one row, or a
 * group of channels). With h = scale * dy and M elements in the set:
 *   dx = istd * (h - mean(h) - xhat * mean(h * xhat)),  xhat = (x - mu) * istd
 *   dscale = sum dy * xhat,  dbias = sum dy
 * which per row is dx = A * dy + B * (x - mu) + C with per-row constants
 * from two per-row sums: sum dy and sum dy * (x - mu). Constant statistics
 * (BatchNormalization in inference mode) leave only dx = scale * istd * dy. */
#include "grad_nn_util.h"
#include "norm_util.h"
#include <math.h>

/* One instance per working type. */
#define NG_CORE(T, S)                                                                                        \
    static void row_sums_##S(const T *x, const T *dy, int64_t rows, int64_t s, const double *mu, double *sdy, \
                             double *sdyx)                                                                   \
    {                                                                                                        \
        _Pragma("omp parallel for schedule(static) if (rows * s > LT_NU_PAR && rows > 1)")                  \
        for (int64_t q = 0; q < rows; q++) {                                                                 \
            const T *xp = x + q * s, *gp = dy + q * s;                                                       \
            double m = mu[q], a = 0, b = 0;                                                                  \
            _Pragma("omp simd reduction(+ : a, b)")                                                          \
            for (int64_t e = 0; e < s; e++) {                                                                \
                a += gp[e];                                                                                  \
                b += (double)gp[e] * ((double)xp[e] - m);                                                    \
            }                                                                                                \
            sdy[q] = a;                                                                                      \
            sdyx[q] = b;                                                                                     \
        }                                                                                                    \
    }                                                                                                        \
    static void row_apply_##S(const T *x, const T *dy, T *dx, int64_t rows, int64_t s, const double *mu,     \
                              const double *A, const double *B, const double *C)                             \
    {                                                                                                        \
        _Pragma("omp parallel for schedule(static) if (rows * s > LT_NU_PAR && rows > 1)")                  \
        for (int64_t q = 0; q < rows; q++) {                                                                 \
            const T *xp = x + q * s, *gp = dy + q * s;                                                       \
            T *op = dx + q * s, a = (T)A[q], b = (T)B[q], c = (T)C[q], m = (T)mu[q];                         \
            _Pragma("omp simd")                                                                              \
            for (int64_t e = 0; e < s; e++)                                                                  \
                op[e] = a * gp[e] + b * (xp[e] - m) + c;                                                     \
        }                                                                                                    \
    }
NG_CORE(float, f32)
NG_CORE(double, f64)

/* dy and x of one float type, rank >= 2, one shape; gives N, C and S. */
static lt_status ng_inputs(lt_kctx *k, const lt_tensor **dy, const lt_tensor **x, int64_t *n, int64_t *c, int64_t *s)
{
    *dy = lt_gnn_need(k, 0, "dy");
    *x = *dy ? lt_gnn_need(k, 1, "x") : NULL;
    if (!*x)
        return LT_ERR_INVALID;
    lt_status st;
    if ((st = lt_gnn_float(k, *dy, "dy")) != LT_OK || (st = lt_gnn_float(k, *x, "x")) != LT_OK ||
        (st = lt_gnn_same_shape(k, *dy, "dy", (*x)->rank, (*x)->dims)) != LT_OK)
        return st;
    if ((*dy)->dtype != (*x)->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy of type %s for x of type %s", lt_dtype_name((*dy)->dtype),
                         lt_dtype_name((*x)->dtype));
    if ((*x)->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "x must have rank >= 2 (N, C, ...), got rank %d", (*x)->rank);
    *n = (*x)->dims[0];
    *c = (*x)->dims[1];
    *s = lt_shape_numel((*x)->rank - 2, (*x)->dims + 2);
    return LT_OK;
}

/* The working-type views of x and dy and the per-row sums over rows of
 * length s against per-row means mu. */
typedef struct ng_work {
    bool f32;
    const void *x, *dy;
    double *sdy, *sdyx;
} ng_work;

static lt_status ng_sums(lt_kctx *k, const lt_tensor *x, const lt_tensor *dy, int64_t rows, int64_t s,
                         const double *mu, ng_work *w)
{
    w->f32 = x->dtype == LT_F32;
    w->x = lt_nu_work_in(k, x, w->f32);
    w->dy = w->x ? lt_nu_work_in(k, dy, w->f32) : NULL;
    w->sdy = w->dy ? lt_nu_scratch(k, 2 * rows, sizeof(double)) : NULL;
    if (!w->sdy)
        return LT_ERR_RUNTIME;
    w->sdyx = w->sdy + rows;
    if (w->f32)
        row_sums_f32(w->x, w->dy, rows, s, mu, w->sdy, w->sdyx);
    else
        row_sums_f64(w->x, w->dy, rows, s, mu, w->sdy, w->sdyx);
    return LT_OK;
}

/* output 0 = A * dy + B * (x - mu) + C per row, when wanted */
static lt_status ng_dx(lt_kctx *k, const lt_tensor *x, const ng_work *w, int64_t rows, int64_t s, const double *mu,
                       const double *A, const double *B, const double *C)
{
    if (!lt_k_want(k, 0))
        return LT_OK;
    lt_tensor *dx;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx);
    if (st != LT_OK || dx->numel == 0)
        return st;
    void *o = lt_nu_work_out(k, dx, w->f32);
    if (!o)
        return LT_ERR_RUNTIME;
    if (w->f32)
        row_apply_f32(w->x, w->dy, o, rows, s, mu, A, B, C);
    else
        row_apply_f64(w->x, w->dy, o, rows, s, mu, A, B, C);
    lt_nu_work_store(dx, o, w->f32);
    return LT_OK;
}

/* dscale and dbias (outputs 1 and 2) shaped like their templates */
static lt_status ng_params(lt_kctx *k, const lt_tensor *st, const double *ds, const lt_tensor *bt, const double *db)
{
    lt_status s = LT_OK;
    if (lt_k_want(k, 1))
        s = lt_nu_out_like(k, 1, st, ds);
    if (s == LT_OK && lt_k_want(k, 2))
        s = lt_nu_out_like(k, 2, bt, db);
    return s;
}

/* (dy, x, scale, bias, mean, var) -> dx, dscale, dbias */
static lt_status k_batch_norm_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    int64_t n, c, s;
    lt_status st = ng_inputs(k, &dy, &x, &n, &c, &s);
    if (st != LT_OK)
        return st;
    const lt_tensor *scale = lt_gnn_need(k, 2, "scale"), *bias = lt_k_in(k, 3);
    if (!scale)
        return LT_ERR_INVALID;
    const lt_node *node = k->node;
    /* spatial = 0 (opsets < 9): statistics per activation */
    if (node->opset < 9 && lt_attr_int(node, "spatial", 1) == 0) {
        c *= s;
        s = 1;
    }
    if (bias && bias->numel != c)
        return lt_k_fail(k, LT_ERR_RUNTIME, "B has %lld elements, expected %lld", (long long)bias->numel,
                         (long long)c);
    double eps = lt_attr_float(node, "epsilon", 1e-5f);
    bool training = lt_attr_int(node, "training_mode", 0) != 0;
    const double *g = lt_nu_vec(k, scale, c, "scale");
    double *mean = g ? lt_nu_scratch(k, 6 * c, sizeof(double)) : NULL;
    if (mean && training && x->dtype == LT_F32 && lt_nu_bn_fits(n, c, s)) {
        /* the blocked float32 kernel; dx may take dy's storage */
        double *ds = mean + 2 * c, *db = ds + c;
        lt_tensor *dx = NULL;
        if (lt_k_want(k, 0) && (st = lt_k_out_over(k, 0, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK)
            return st;
        if ((st = lt_nu_bn_train_grad_f32(k, x->data, dy->data, dx ? dx->data : NULL, n, c, s, g, eps, ds, db)) !=
            LT_OK)
            return st;
        return ng_params(k, scale, ds, bias ? bias : scale, db);
    }
    double *mu = mean ? lt_nu_scratch(k, 4 * n * c, sizeof(double)) : NULL;
    if (!mu)
        return LT_ERR_RUNTIME;
    double *var = mean + c, *ds = var + c, *db = ds + c, *sdy = db + c, *sdyx = sdy + c;
    double *A = mu + n * c, *B = A + n * c, *C = B + n * c;
    if (training) {
        bool f32 = x->dtype == LT_F32;
        const void *xw = lt_nu_work_in(k, x, f32);
        if (!xw)
            return LT_ERR_RUNTIME;
        if (f32)
            lt_nu_chan_stats_f32(xw, n, c, s, mean, var);
        else
            lt_nu_chan_stats_f64(xw, n, c, s, mean, var);
    } else {
        const lt_tensor *mi = lt_gnn_need(k, 4, "mean"), *vi = mi ? lt_gnn_need(k, 5, "var") : NULL;
        const double *m = vi ? lt_nu_vec(k, mi, c, "mean") : NULL, *v = m ? lt_nu_vec(k, vi, c, "var") : NULL;
        if (!v)
            return LT_ERR_RUNTIME;
        for (int64_t j = 0; j < c; j++) {
            mean[j] = m[j];
            var[j] = v[j];
        }
    }
    for (int64_t q = 0; q < n * c; q++)
        mu[q] = mean[q % c];
    ng_work w;
    if ((st = ng_sums(k, x, dy, n * c, s, mu, &w)) != LT_OK)
        return st;
    for (int64_t j = 0; j < c; j++)
        sdy[j] = sdyx[j] = 0;
    for (int64_t q = 0; q < n * c; q++) {
        sdy[q % c] += w.sdy[q];
        sdyx[q % c] += w.sdyx[q];
    }
    double M = (double)n * (double)s;
    for (int64_t j = 0; j < c; j++) {
        double istd = 1 / sqrt(var[j] + eps);
        ds[j] = sdyx[j] * istd;
        db[j] = sdy[j];
        for (int64_t i = 0; i < n; i++) {
            int64_t q = i * c + j;
            A[q] = g[j] * istd;
            B[q] = training ? -g[j] * istd * istd * istd * sdyx[j] / M : 0;
            C[q] = training ? -g[j] * istd * sdy[j] / M : 0;
        }
    }
    if ((st = ng_dx(k, x, &w, n * c, s, mu, A, B, C)) != LT_OK)
        return st;
    return ng_params(k, scale, ds, bias ? bias : scale, db);
}

/* (dy, x, scale) -> dx, dscale, dbias; dbias is shaped like scale, or like
 * an optional fourth input B */
static lt_status k_instance_norm_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    int64_t n, c, s;
    lt_status st = ng_inputs(k, &dy, &x, &n, &c, &s);
    if (st != LT_OK)
        return st;
    const lt_tensor *scale = lt_gnn_need(k, 2, "scale"), *bias = lt_k_in(k, 3);
    if (!scale)
        return LT_ERR_INVALID;
    if (bias && bias->numel != c)
        return lt_k_fail(k, LT_ERR_RUNTIME, "B has %lld elements, expected %lld", (long long)bias->numel,
                         (long long)c);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    const double *g = lt_nu_vec(k, scale, c, "scale");
    double *ds = g ? lt_nu_scratch(k, 2 * c, sizeof(double)) : NULL;
    double *mu = ds ? lt_nu_scratch(k, 5 * n * c, sizeof(double)) : NULL;
    bool f32 = x->dtype == LT_F32;
    const void *xw = mu ? lt_nu_work_in(k, x, f32) : NULL;
    if (!xw)
        return LT_ERR_RUNTIME;
    double *db = ds + c, *var = mu + n * c, *A = var + n * c, *B = A + n * c, *C = B + n * c;
    if (f32)
        lt_nu_row_stats_f32(xw, n * c, s, mu, var);
    else
        lt_nu_row_stats_f64(xw, n * c, s, mu, var);
    ng_work w;
    if ((st = ng_sums(k, x, dy, n * c, s, mu, &w)) != LT_OK)
        return st;
    for (int64_t j = 0; j < c; j++)
        ds[j] = db[j] = 0;
    for (int64_t q = 0; q < n * c; q++) {
        int64_t j = q % c;
        double istd = 1 / sqrt(var[q] + eps);
        ds[j] += w.sdyx[q] * istd;
        db[j] += w.sdy[q];
        A[q] = g[j] * istd;
        B[q] = s ? -g[j] * istd * istd * istd * w.sdyx[q] / (double)s : 0;
        C[q] = s ? -g[j] * istd * w.sdy[q] / (double)s : 0;
    }
    if ((st = ng_dx(k, x, &w, n * c, s, mu, A, B, C)) != LT_OK)
        return st;
    return ng_params(k, scale, ds, bias ? bias : scale, db);
}

/* (dy, x, scale, bias) -> dx, dscale, dbias. scale and bias hold one value
 * per group (opset 18) or per channel (opset 21), as the forward decides. */
static lt_status k_group_norm_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    int64_t n, c, s;
    lt_status st = ng_inputs(k, &dy, &x, &n, &c, &s);
    if (st != LT_OK)
        return st;
    const lt_tensor *scale = lt_gnn_need(k, 2, "scale"), *bias = lt_k_in(k, 3);
    if (!scale)
        return LT_ERR_INVALID;
    int64_t G = lt_attr_int(k->node, "num_groups", -1);
    if (G <= 0 || c % G != 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "num_groups %lld must be positive and divide the %lld channels",
                         (long long)G, (long long)c);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    bool per_group = k->node->opset < 21 ? scale->numel == G : scale->numel != c && scale->numel == G;
    int64_t np = per_group ? G : c, cg = c / G;
    if (bias && bias->numel != np)
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias has %lld elements, expected %lld", (long long)bias->numel,
                         (long long)np);
    const double *gam = lt_nu_vec(k, scale, np, "scale");
    double *ds = gam ? lt_nu_scratch(k, 2 * np, sizeof(double)) : NULL;
    double *gmean = ds ? lt_nu_scratch(k, 4 * n * G + 4 * n * c, sizeof(double)) : NULL;
    bool f32 = x->dtype == LT_F32;
    const void *xw = gmean ? lt_nu_work_in(k, x, f32) : NULL;
    if (!xw)
        return LT_ERR_RUNTIME;
    double *db = ds + np, *gvar = gmean + n * G, *S1 = gvar + n * G, *S2 = S1 + n * G;
    double *mu = S2 + n * G, *A = mu + n * c, *B = A + n * c, *C = B + n * c;
    if (f32)
        lt_nu_row_stats_f32(xw, n * G, cg * s, gmean, gvar);
    else
        lt_nu_row_stats_f64(xw, n * G, cg * s, gmean, gvar);
    /* channel rows q = i * C + j belong to group row q / cg */
    for (int64_t q = 0; q < n * c; q++)
        mu[q] = gmean[q / cg];
    ng_work w;
    if ((st = ng_sums(k, x, dy, n * c, s, mu, &w)) != LT_OK)
        return st;
    for (int64_t p = 0; p < np; p++)
        ds[p] = db[p] = 0;
    for (int64_t r = 0; r < n * G; r++)
        S1[r] = S2[r] = 0;
    for (int64_t q = 0; q < n * c; q++) {
        int64_t r = q / cg, j = q % c, p = per_group ? j / cg : j;
        double istd = 1 / sqrt(gvar[r] + eps);
        S1[r] += gam[p] * w.sdy[q];
        S2[r] += gam[p] * w.sdyx[q];
        ds[p] += w.sdyx[q] * istd;
        db[p] += w.sdy[q];
    }
    double M = (double)cg * (double)s;
    for (int64_t q = 0; q < n * c; q++) {
        int64_t r = q / cg, j = q % c, p = per_group ? j / cg : j;
        double istd = 1 / sqrt(gvar[r] + eps);
        A[q] = gam[p] * istd;
        B[q] = M > 0 ? -istd * istd * istd * S2[r] / M : 0;
        C[q] = M > 0 ? -istd * S1[r] / M : 0;
    }
    if ((st = ng_dx(k, x, &w, n * c, s, mu, A, B, C)) != LT_OK)
        return st;
    return ng_params(k, scale, ds, bias ? bias : scale, db);
}

void lt_gnn_register_norm(lt_kernel_fn *tab)
{
    tab[LT_OP_BATCH_NORM_GRAD] = k_batch_norm_grad;
    tab[LT_OP_INSTANCE_NORM_GRAD] = k_instance_norm_grad;
    tab[LT_OP_GROUP_NORM_GRAD] = k_group_norm_grad;
}
