/* CPU kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over
 * (N, C, d1, ..., dk) inputs with (N, d1, ..., dk) targets: reduction
 * none/sum/mean, per-class weights, ignore_index, and SCE's optional
 * log_prob output. Losses accumulate in double. */
#include "reduce_util.h"
#include <math.h>
#include <string.h>

enum { RED_NONE, RED_SUM, RED_MEAN };

/* Shared checks: scores rank >= 2, target (N, d1..dk) of integers, weight of
 * C floats. Sets *n, *c, *d (product of d1..dk) and the reduction. */
static lt_status loss_check(lt_kctx *k, const lt_tensor *x, const lt_tensor *t, const lt_tensor *w, int64_t *n,
                            int64_t *c, int64_t *d, int *red)
{
    if (!x || !t)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs 0 and 1 are required");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported (float types only)",
                         lt_dtype_name(x->dtype));
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_INVALID, "input must be (N, C, ...), got rank %d", x->rank);
    if (!lt_dtype_is_int(t->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "target must be an integer tensor, got %s", lt_dtype_name(t->dtype));
    bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; ok && i < t->rank; i++)
        ok = t->dims[i] == x->dims[i + 1];
    if (!ok)
        return lt_k_fail(k, LT_ERR_INVALID, "target shape must be the input's without its class axis (N, d1, ...)");
    *n = x->dims[0];
    *c = x->dims[1];
    *d = lt_red_prod(x->dims, 2, x->rank);
    if (*d < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    if (w && (!lt_dtype_is_float(w->dtype) || w->rank != 1 || w->dims[0] != *c))
        return lt_k_fail(k, LT_ERR_INVALID, "weight must be a float tensor of shape (%lld)", (long long)*c);
    const char *r = lt_attr_str(k->node, "reduction", "mean");
    if (!strcmp(r, "none"))
        *red = RED_NONE;
    else if (!strcmp(r, "sum"))
        *red = RED_SUM;
    else if (!strcmp(r, "mean"))
        *red = RED_MEAN;
    else
        return lt_k_fail(k, LT_ERR_INVALID, "reduction must be none, sum or mean, got '%s'", r);
    return LT_OK;
}

/* loss[n, d] = -lp[n, t[n, d], d] * weight[t[n, d]], zero where t is
 * ignore_index; then reduced. lp is float or double (f64) in (N, C, D)
 * layout. Writes output 0 in dtype dt. */
static lt_status nll_core(lt_kctx *k, const void *lp, bool f64, lt_dtype dt, const lt_tensor *t, const lt_tensor *w,
                          int64_t n, int64_t c, int64_t d, int red)
{
    bool has_ii = lt_attr_find(k->node, "ignore_index") != NULL;
    int64_t ii = lt_attr_int(k->node, "ignore_index", 0);
    lt_tensor *y;
    lt_status s = red == RED_NONE ? lt_k_out(k, 0, dt, t->rank, t->dims, &y) : lt_k_out(k, 0, dt, 0, NULL, &y);
    if (s != LT_OK)
        return s;
    double lsum = 0, wsum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) {
            int64_t pos = i * d + j, cls = lt_tensor_get_i64(t, pos);
            double loss = 0, wt = 0;
            if (!(has_ii && cls == ii)) {
                if (cls < 0 || cls >= c)
                    return lt_k_fail(k, LT_ERR_INVALID, "target %lld at position %lld is outside [0, %lld)",
                                     (long long)cls, (long long)pos, (long long)c);
                int64_t at = (i * c + cls) * d + j;
                double v = f64 ? ((const double *)lp)[at] : ((const float *)lp)[at];
                wt = w ? lt_tensor_get_f64(w, cls) : 1.0;
                loss = -v * wt;
            }
            if (red == RED_NONE)
                lt_tensor_set_f64(y, pos, loss);
            lsum += loss;
            wsum += wt;
        }
    /* mean divides by the total weight of the counted targets (their number
     * without weights); nothing counted gives 0/0 = NaN, as the reference */
    if (red == RED_SUM)
        lt_tensor_set_f64(y, 0, lsum);
    else if (red == RED_MEAN)
        lt_tensor_set_f64(y, 0, lsum / wsum);
    return LT_OK;
}

static lt_status k_nll_loss(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *t = lt_k_in(k, 1), *w = lt_k_in(k, 2);
    int64_t n, c, d;
    int red;
    lt_status s = loss_check(k, x, t, w, &n, &c, &d, &red);
    if (s != LT_OK)
        return s;
    bool f64 = x->dtype == LT_F64;
    const void *lp = f64 ? (const void *)x->data : (const void *)lt_red_load_f32(k, x);
    if (!lp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    return nll_core(k, lp, f64, x->dtype, t, w, n, c, d, red);
}

static lt_status k_sce_loss(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *t = lt_k_in(k, 1), *w = lt_k_in(k, 2);
    int64_t n, c, d;
    int red;
    lt_status s = loss_check(k, x, t, w, &n, &c, &d, &red);
    if (s != LT_OK)
        return s;
    bool f64 = x->dtype == LT_F64, native = f64 || x->dtype == LT_F32;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    lt_tensor *lpt = NULL;
    if (lt_k_want(k, 1) && (s = lt_k_out(k, 1, x->dtype, x->rank, x->dims, &lpt)) != LT_OK)
        return s;
    /* log-probabilities straight into the log_prob output when its type is
     * the compute type, else into scratch */
    void *lp = lpt && native ? lpt->data : lt_k_scratch(k, es * (size_t)(x->numel ? x->numel : 1));
    const void *src = native ? (const void *)x->data : (const void *)lt_red_load_f32(k, x);
    if (!lp || !src)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    if (f64)
        lt_red_softmax_f64(src, lp, n, c, d, LT_RED_LOGSOFTMAX);
    else
        lt_red_softmax_any_f32(src, lp, n, c, d, LT_RED_LOGSOFTMAX);
    if (lpt && !native)
        lt_red_store_f32(lp, lpt);
    return nll_core(k, lp, f64, x->dtype, t, w, n, c, d, red);
}

void lt_cpu_register_reduce_loss(lt_kernel_fn *tab)
{
    tab[LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = k_nll_loss;
    tab[LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = k_sce_loss;
}
