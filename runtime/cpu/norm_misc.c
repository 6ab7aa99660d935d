/* CPU kernels: LRN and Dropout. */
#include "norm_util.h"
#include "norm_kernels.h"
#include <math.h>
#include <string.h>

/* ---- LRN ---- */

/* One instance per working type: y = x / (bias + alpha/size * sum of x^2
 * over the channel window)^beta, the window being [c - lo, c + hi]. */
#define LRN_CORE(T, S)                                                                                    \
    static void lrn_##S(const T *x, T *y, int64_t n, int64_t c, int64_t s, int64_t lo, int64_t hi,         \
                        double alpha_n, double beta, double bias)                                          \
    {                                                                                                      \
        _Pragma("omp parallel for if (n * c * s > LT_NU_PAR && n * c > 1) schedule(static)")              \
        for (int64_t ij = 0; ij < n * c; ij++) {                                                           \
            int64_t i = ij / c, j = ij % c;                                                                \
            int64_t j0 = j - lo < 0 ? 0 : j - lo, j1 = j + hi >= c ? c - 1 : j + hi;                        \
            const T *xp = x + ij * s;                                                                      \
            T *yp = y + ij * s;                                                                            \
            for (int64_t e = 0; e < s; e++) {                                                              \
                double sq = 0;                                                                             \
                for (int64_t q = j0; q <= j1; q++) {                                                       \
                    double v = x[(i * c + q) * s + e];                                                     \
                    sq += v * v;                                                                           \
                }                                                                                          \
                yp[e] = (T)(xp[e] / pow(bias + alpha_n * sq, beta));                                       \
            }                                                                                              \
        }                                                                                                  \
    }
LRN_CORE(float, f32)
LRN_CORE(double, f64)

lt_status lt_cpu_lrn(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a float tensor, got %s", lt_dtype_name(x->dtype));
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
    int64_t size = lt_attr_int(k->node, "size", 0);
    if (size <= 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "size must be a positive integer, got %lld", (long long)size);
    double alpha = lt_attr_float(k->node, "alpha", 1e-4f), beta = lt_attr_float(k->node, "beta", 0.75f);
    double bias = lt_attr_float(k->node, "bias", 1.0f);
    int64_t n = x->dims[0], c = x->dims[1], s = lt_shape_numel(x->rank - 2, x->dims + 2);
    bool f32 = x->dtype == LT_F32;
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    const void *xw = lt_nu_work_in(k, x, f32);
    void *yw = xw ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME;
    /* the window leans forward when size is even: floor below, ceil above */
    int64_t lo = (size - 1) / 2, hi = size / 2;
    if (f32)
        lrn_f32(xw, yw, n, c, s, lo, hi, alpha / (double)size, beta, bias);
    else
        lrn_f64(xw, yw, n, c, s, lo, hi, alpha / (double)size, beta, bias);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}

/* ---- Dropout ---- */

/* The mask output: bool from opset 10 on, X's type before. keep == NULL
 * means everything is kept. */
static lt_status dropout_mask(lt_kctx *k, const lt_tensor *x, const uint8_t *keep)
{
    if (!lt_k_want(k, 1))
        return LT_OK;
    lt_dtype dt = k->node->opset >= 10 ? LT_BOOL : x->dtype;
    lt_tensor *m;
    lt_status st = lt_k_out(k, 1, dt, x->rank, x->dims, &m);
    if (st != LT_OK)
        return st;
    if (dt == LT_BOOL) {
        if (keep)
            memcpy(m->data, keep, (size_t)x->numel);
        else
            memset(m->data, 1, (size_t)x->numel);
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            lt_tensor_set_f64(m, i, keep ? keep[i] : 1);
    }
    return LT_OK;
}

lt_status lt_cpu_dropout(lt_kctx *k)
{
    const lt_node *node = k->node;
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs data");
    double ratio = lt_attr_float(node, "ratio", 0.5f);
    bool training = false;
    if (node->opset >= 12) {
        /* ratio and training_mode became inputs; before that Dropout only ran
         * as inference here (is_test of opsets 1 and 6 is ignored, as other
         * runtimes do) */
        double t = 0;
        lt_status st = lt_nu_scalar(k, lt_k_in(k, 1), 0.5, "ratio", &ratio);
        if (st == LT_OK)
            st = lt_nu_scalar(k, lt_k_in(k, 2), 0, "training_mode", &t);
        if (st != LT_OK)
            return st;
        training = t != 0;
    }
    if (!(ratio >= 0 && ratio <= 1))
        return lt_k_fail(k, LT_ERR_RUNTIME, "ratio %g is outside [0, 1]", ratio);
    if (!training || ratio == 0) {
        lt_status st = lt_k_out_view(k, 0, x, x->rank, x->dims);
        return st != LT_OK ? st : dropout_mask(k, x, NULL);
    }
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "data must be a float tensor, got %s", lt_dtype_name(x->dtype));
    uint8_t *keep = lt_nu_scratch(k, x->numel, 1);
    if (!keep)
        return LT_ERR_NOMEM;
    /* keep an element when u >= ratio for u uniform in [0, 1); a seed
     * attribute selects numpy's stream so results match the reference */
    if (lt_attr_find(node, "seed")) {
        lt_mt19937 *g = lt_nu_scratch(k, 1, sizeof *g);
        if (!g)
            return LT_ERR_NOMEM;
        lt_mt19937_seed(g, (uint32_t)lt_attr_int(node, "seed", 0));
        for (int64_t i = 0; i < x->numel; i++)
            keep[i] = lt_mt19937_double(g) >= ratio;
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            keep[i] = (double)(lt_k_rand_u64(k) >> 11) * 0x1.0p-53 >= ratio;
    }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    if (x->dtype == LT_F32) {
        /* ratio 1 drops everything: 0, not 0 * inf */
        const float sc = ratio < 1 ? (float)(1.0 / (1.0 - ratio)) : 0.0f;
        const float *xp = x->data;
        float *yp = y->data;
#pragma omp parallel for if (x->numel > LT_NU_PAR) schedule(static)
        for (int64_t i = 0; i < x->numel; i++)
            yp[i] = keep[i] ? xp[i] * sc : 0.0f;
    } else {
        const double sc = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
        for (int64_t i = 0; i < x->numel; i++)
            lt_tensor_set_f64(y, i, keep[i] ? lt_tensor_get_f64(x, i) * sc : 0.0);
    }
    return dropout_mask(k, x, keep);
}
