/* CPU kernels: norm family. BatchNormalization (inference and training,
 * every opset's outputs) and InstanceNormalization live here; Layer/Group
 * normalization in norm_layer.c, LRN and Dropout in norm_misc.c. */
#include "norm_util.h"
#include "norm_kernels.h"
#include <math.h>

/* Channel count and per-channel spatial size of X (N, C, D1, ...). */
static lt_status chan_split(lt_kctx *k, const lt_tensor *x, int64_t *n, int64_t *c, int64_t *s)
{
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must have rank >= 2 (N, C, ...), got rank %d", x->rank);
    *n = x->dims[0];
    *c = x->dims[1];
    *s = lt_shape_numel(x->rank - 2, x->dims + 2);
    return LT_OK;
}

static lt_status need_float(lt_kctx *k, const lt_tensor *x)
{
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be a float tensor, got %s", lt_dtype_name(x->dtype));
    return LT_OK;
}

/* Y = X * a[c] + b[c] in the working type of X, written to output 0. */
static lt_status affine_out(lt_kctx *k, const lt_tensor *x, int64_t n, int64_t c, int64_t s, const double *a,
                            const double *b, int per_n)
{
    bool f32 = x->dtype == LT_F32;
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK)
        return st;
    const void *xw = lt_nu_work_in(k, x, f32);
    void *yw = xw ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME; /* the helper has set the message */
    if (f32)
        lt_nu_chan_affine_f32(xw, yw, n, c, s, a, b, per_n);
    else
        lt_nu_chan_affine_f64(xw, yw, n, c, s, a, b, per_n);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}

/* ---- BatchNormalization ---- */

/* Whether this node computes batch statistics. Opset 14 says so with
 * training_mode; opsets 7-13 by asking for the statistics outputs; opsets 1
 * and 6 with is_test = 0 and those outputs. */
static bool bn_training(const lt_kctx *k)
{
    const lt_node *n = k->node;
    if (n->opset >= 14)
        return lt_attr_int(n, "training_mode", 0) != 0;
    bool stats = false;
    for (int i = 1; i < 5; i++)
        stats = stats || lt_k_want(k, i);
    if (n->opset < 7)
        return stats && lt_attr_int(n, "is_test", 0) == 0;
    return stats;
}

/* Training mode's outputs 1-4: the running statistics, moved towards the
 * batch's bm, bv by 1 - momentum (the variance towards bv's unbiased form
 * where the node says so: cnt values a channel), and the batch's own. */
static lt_status bn_stats_out(lt_kctx *k, const lt_tensor *mean_in, const lt_tensor *var_in, const double *m,
                              const double *v, double mom, const double *bm, const double *bv, int64_t cnt)
{
    int64_t c = mean_in->numel;
    lt_status st;
    double *rm = lt_nu_scratch(k, 2 * c, sizeof *rm);
    if (!rm)
        return LT_ERR_NOMEM;
    double *rv = rm + c;
    double vs = lt_attr_int(k->node, LT_BN_UNBIASED_ATTR, 0) && cnt > 1 ? (double)cnt / (double)(cnt - 1) : 1.0;
    for (int64_t j = 0; j < c; j++) {
        rm[j] = m[j] * mom + bm[j] * (1 - mom);
        rv[j] = v[j] * mom + bv[j] * vs * (1 - mom);
    }
    if (lt_k_want(k, 1) && (st = lt_nu_out_like(k, 1, mean_in, rm)) != LT_OK)
        return st;
    if (lt_k_want(k, 2) && (st = lt_nu_out_like(k, 2, var_in, rv)) != LT_OK)
        return st;
    if (lt_k_want(k, 3) && (st = lt_nu_out_like(k, 3, mean_in, bm)) != LT_OK)
        return st;
    if (lt_k_want(k, 4) && (st = lt_nu_out_like(k, 4, var_in, bv)) != LT_OK)
        return st;
    return LT_OK;
}

static lt_status batch_norm(lt_kctx *k)
{
    const lt_node *node = k->node;
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *bias = lt_k_in(k, 2);
    const lt_tensor *mean_in = lt_k_in(k, 3), *var_in = lt_k_in(k, 4);
    if (!x || !scale || !bias || !mean_in || !var_in)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X, scale, B, mean and var");
    lt_status st = need_float(k, x);
    int64_t n = 0, c = 0, s = 0;
    if (st != LT_OK || (st = chan_split(k, x, &n, &c, &s)) != LT_OK)
        return st;
    /* spatial = 0 (opsets < 9): statistics per activation, not per channel */
    if (node->opset < 9 && lt_attr_int(node, "spatial", 1) == 0) {
        c *= s;
        s = 1;
    }
    double eps = lt_attr_float(node, "epsilon", 1e-5f);
    double mom = lt_attr_float(node, "momentum", 0.9f);
    const double *g = lt_nu_vec(k, scale, c, "scale");
    const double *b = g ? lt_nu_vec(k, bias, c, "B") : NULL;
    const double *m = b ? lt_nu_vec(k, mean_in, c, "mean") : NULL;
    const double *v = m ? lt_nu_vec(k, var_in, c, "var") : NULL;
    double *a = v ? lt_nu_scratch(k, 4 * c, sizeof *a) : NULL;
    if (!a)
        return LT_ERR_RUNTIME;
    double *off = a + c, *bm = a + 2 * c, *bv = a + 3 * c;
    bool training = bn_training(k);
    if (training && x->dtype == LT_F32 && lt_nu_bn_fits(n, c, s)) {
        /* statistics and output in one blocked sweep; y may take x's storage */
        lt_tensor *y;
        if ((st = lt_k_out_over(k, 0, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK ||
            (st = lt_nu_bn_train_fwd_f32(k, x->data, y->data, n, c, s, g, b, eps, bm, bv)) != LT_OK)
            return st;
        return bn_stats_out(k, mean_in, var_in, m, v, mom, bm, bv, n * s);
    }
    if (training) {
        bool f32 = x->dtype == LT_F32;
        const void *xw = lt_nu_work_in(k, x, f32);
        if (!xw)
            return LT_ERR_NOMEM;
        if (f32)
            lt_nu_chan_stats_f32(xw, n, c, s, bm, bv);
        else
            lt_nu_chan_stats_f64(xw, n, c, s, bm, bv);
    } else {
        for (int64_t j = 0; j < c; j++) {
            bm[j] = m[j];
            bv[j] = v[j];
        }
    }
    for (int64_t j = 0; j < c; j++) {
        a[j] = g[j] / sqrt(bv[j] + eps);
        off[j] = b[j] - bm[j] * a[j];
    }
    if ((st = affine_out(k, x, n, c, s, a, off, 0)) != LT_OK)
        return st;
    if (training)
        return bn_stats_out(k, mean_in, var_in, m, v, mom, bm, bv, n * s);
    /* inference: statistics outputs, where a model still lists them, pass
     * the running values through */
    for (int i = 1; i < k->nout && i < 5; i++)
        if (lt_k_want(k, i)) {
            const lt_tensor *src = (i % 2) ? mean_in : var_in;
            if ((st = lt_k_out_view(k, i, src, src->rank, src->dims)) != LT_OK)
                return st;
        }
    return LT_OK;
}

/* ---- InstanceNormalization ---- */
static lt_status instance_norm(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *bias = lt_k_in(k, 2);
    if (!x || !scale || !bias)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs input, scale and B");
    lt_status st = need_float(k, x);
    int64_t n = 0, c = 0, s = 0;
    if (st != LT_OK || (st = chan_split(k, x, &n, &c, &s)) != LT_OK)
        return st;
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    const double *g = lt_nu_vec(k, scale, c, "scale");
    const double *b = g ? lt_nu_vec(k, bias, c, "B") : NULL;
    double *mean = b ? lt_nu_scratch(k, 4 * n * c, sizeof *mean) : NULL;
    bool f32 = x->dtype == LT_F32;
    const void *xw = mean ? lt_nu_work_in(k, x, f32) : NULL;
    if (!xw)
        return LT_ERR_RUNTIME;
    double *var = mean + n * c, *a = var + n * c, *off = a + n * c;
    if (f32)
        lt_nu_row_stats_f32(xw, n * c, s, mean, var);
    else
        lt_nu_row_stats_f64(xw, n * c, s, mean, var);
    for (int64_t q = 0; q < n * c; q++) {
        a[q] = g[q % c] / sqrt(var[q] + eps);
        off[q] = b[q % c] - mean[q] * a[q];
    }
    return affine_out(k, x, n, c, s, a, off, 1);
}

void lt_cpu_register_norm(lt_kernel_fn *tab)
{
    tab[LT_OP_BATCH_NORMALIZATION] = batch_norm;
    tab[LT_OP_INSTANCE_NORMALIZATION] = instance_norm;
    tab[LT_OP_LAYER_NORMALIZATION] = lt_cpu_layer_norm;
    tab[LT_OP_RMS_NORMALIZATION] = lt_cpu_rms_norm;
    tab[LT_OP_GROUP_NORMALIZATION] = lt_cpu_group_norm;
    tab[LT_OP_LRN] = lt_cpu_lrn;
    tab[LT_OP_DROPOUT] = lt_cpu_dropout;
}
