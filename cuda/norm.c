/* BatchNormalization (training and inference) and BatchNormalizationGrad
 * on the device, per channel over (N, C, spatial...) with spatial = 1.
 *
 * The large sums (batch statistics, the gradient's sums of dy and
 * dy (x - mean)) run on the device in double; the per-channel arithmetic
 * on the C values (scale, bias and running statistics) runs on the device
 * too, in double with the CPU kernel's operations in its order, and one
 * elementwise pass applies the coefficients. Everything is queued on the
 * stream: the host never waits for the device in these nodes. */
#include "cuda_internal.h"
#include "../runtime/cpu/norm_util.h"
#include <math.h>
#include <string.h>

#define F64(t) ((t)->dtype == LT_F64)

static bool float_in(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] && (n->in[i]->type.dtype == LT_F32 || n->in[i]->type.dtype == LT_F64);
}

static bool fits_bn(const lt_node *n)
{
    if (n->op == LT_OP_BATCH_NORMALIZATION) {
        for (int i = 1; i < 5; i++)
            if (!float_in(n, i))
                return false;
    } else {
        for (int i = 2; i < n->nin; i++)
            if (n->in[i] && !float_in(n, i))
                return false;
    }
    return !(n->opset < 9 && lt_attr_int(n, "spatial", 1) == 0);
}

/* (N, C, s): s the product of the spatial dims */
static lt_status chan_split(lt_kctx *k, const lt_tensor *x, int64_t *n, int64_t *c, int64_t *s)
{
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_INVALID, "input of rank %d (needs N and C)", x->rank);
    if (x->dtype != LT_F32 && x->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s on cuda", lt_dtype_name(x->dtype));
    *n = x->dims[0];
    *c = x->dims[1];
    *s = 1;
    for (int i = 2; i < x->rank; i++)
        *s *= x->dims[i];
    return LT_OK;
}


/* A per-channel input of c values on the device. */
static lt_status chan_vec(lt_kctx *k, const lt_tensor *t, int64_t c, const char *what, lt_cu_vec *v)
{
    if (!t || t->numel != c)
        return lt_k_fail(k, LT_ERR_INVALID, "%s must hold %lld values", what, (long long)c);
    *v = (lt_cu_vec){t->data, F64(t)};
    return LT_OK;
}

/* Output i shaped and typed like `like`, on the device ({NULL}: not wanted). */
static lt_status chan_out(lt_kctx *k, int i, const lt_tensor *like, lt_cu_out *o)
{
    *o = (lt_cu_out){NULL, false};
    if (!lt_k_want(k, i))
        return LT_OK;
    lt_tensor *t;
    lt_status s = lt_k_out(k, i, like->dtype, like->rank, like->dims, &t);
    if (s == LT_OK && t->numel > 0)
        *o = (lt_cu_out){t->data, F64(t)};
    return s;
}

static lt_status launched(lt_kctx *k, cudaError_t e, const char *what, int line)
{
    return e == cudaSuccess ? LT_OK : lt_cuda_kfail(k, __FILE__, line, what, "CUDA", cudaGetErrorString(e));
}

/* As the CPU decides: training_mode from opset 14, else whether the node
 * wants the statistics outputs (and, before opset 7, is_test is 0). */
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

/* BatchNormalization (X, scale, B, mean, var) -> Y[, running_mean,
 * running_var, batch mean, batch var]: the batch's statistics, the
 * per-channel coefficients and the affine pass all queued on the stream,
 * nothing read back to the host. */
static lt_status k_batch_norm(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *mean_in = lt_k_in(k, 3), *var_in = lt_k_in(k, 4);
    if (!x || !lt_k_in(k, 1) || !lt_k_in(k, 2) || !mean_in || !var_in)
        return lt_k_fail(k, LT_ERR_INVALID, "needs X, scale, B, mean and var");
    int64_t n, c, sp;
    lt_status s = chan_split(k, x, &n, &c, &sp);
    if (s != LT_OK)
        return s;
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f), mom = lt_attr_float(k->node, "momentum", 0.9f);
    lt_cu_vec g, b, m, v;
    if ((s = chan_vec(k, lt_k_in(k, 1), c, "scale", &g)) != LT_OK || (s = chan_vec(k, lt_k_in(k, 2), c, "B", &b)) ||
        (s = chan_vec(k, mean_in, c, "mean", &m)) || (s = chan_vec(k, var_in, c, "var", &v)))
        return s;
    bool training = bn_training(k);
    /* the unbiased variance for the running one where the trainer asks (ir.h) */
    int64_t cnt = n * sp;
    double vs = lt_attr_int(k->node, LT_BN_UNBIASED_ATTR, 0) && cnt > 1 ? (double)cnt / (double)(cnt - 1) : 1.0;
    cudaStream_t st = lt_cuda_of(k->be)->stream;
    lt_buf *dev;
    if ((s = lt_cuda_scratch(k, sizeof(double) * 4 * (size_t)(c ? c : 1), &dev)) != LT_OK)
        return s;
    double *bm = dev->data, *bv = bm + c, *a = bm + 2 * c, *off = bm + 3 * c;
    if (training) {
        s = launched(k, lt_cu_chan_stats(st, F64(x), x->data, n, c, sp, bm, bv), "lt_cu_chan_stats", __LINE__);
    } else {
        s = launched(k, lt_cu_vec_f64(st, m, bm, c), "lt_cu_vec_f64", __LINE__);
        if (s == LT_OK)
            s = launched(k, lt_cu_vec_f64(st, v, bv, c), "lt_cu_vec_f64", __LINE__);
    }
    /* training: running statistics, then the batch's; inference: the
     * running values passed through */
    lt_cu_out rm, rv, om, ov;
    if (s == LT_OK && (s = chan_out(k, 1, mean_in, &rm)) == LT_OK && (s = chan_out(k, 2, var_in, &rv)) == LT_OK &&
        (s = chan_out(k, 3, mean_in, &om)) == LT_OK && (s = chan_out(k, 4, var_in, &ov)) == LT_OK)
        s = launched(k, lt_cu_bn_coeffs(st, c, training, eps, mom, vs, g, b, m, v, bm, bv, a, off, rm, rv, om, ov),
                     "lt_cu_bn_coeffs", __LINE__);
    lt_tensor *y = NULL;
    if (s == LT_OK)
        s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (s == LT_OK)
        s = launched(k, lt_cu_chan_affine(st, F64(x), x->data, y->data, n, c, sp, a, off), "lt_cu_chan_affine",
                     __LINE__);
    lt_buf_release(dev); /* the stream's later work only: the pool hands it out to kernels queued after these */
    return s;
}

/* BatchNormalizationGrad (dy, x, scale, bias, mean, var) -> dx, dscale,
 * dbias, all on the stream like the forward */
static lt_status k_batch_norm_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *scale = lt_k_in(k, 2), *bias = lt_k_in(k, 3);
    if (!dy || !x || !scale)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs dy, x and scale are required");
    int64_t n, c, sp;
    lt_status s = chan_split(k, x, &n, &c, &sp);
    if (s != LT_OK)
        return s;
    if (dy->dtype != x->dtype || dy->numel != x->numel)
        return lt_k_fail(k, LT_ERR_INVALID, "dy and x differ in type or size");
    if (bias && bias->numel != c)
        return lt_k_fail(k, LT_ERR_INVALID, "B has %lld elements, expected %lld", (long long)bias->numel,
                         (long long)c);
    double eps = lt_attr_float(k->node, "epsilon", 1e-5f);
    bool training = lt_attr_int(k->node, "training_mode", 0) != 0;
    lt_cu_vec g, m = {0}, v = {0};
    if ((s = chan_vec(k, scale, c, "scale", &g)) != LT_OK)
        return s;
    if (!training && ((s = chan_vec(k, lt_k_in(k, 4), c, "mean", &m)) != LT_OK ||
                      (s = chan_vec(k, lt_k_in(k, 5), c, "var", &v)) != LT_OK))
        return s;
    cudaStream_t st = lt_cuda_of(k->be)->stream;
    lt_buf *dev;
    if ((s = lt_cuda_scratch(k, sizeof(double) * 7 * (size_t)(c ? c : 1), &dev)) != LT_OK)
        return s;
    double *mu = dev->data, *var = mu + c, *sdy = mu + 2 * c, *sdyx = mu + 3 * c, *A = mu + 4 * c, *B = mu + 5 * c,
           *C = mu + 6 * c;
    if (training) {
        s = launched(k, lt_cu_chan_stats(st, F64(x), x->data, n, c, sp, mu, var), "lt_cu_chan_stats", __LINE__);
    } else {
        s = launched(k, lt_cu_vec_f64(st, m, mu, c), "lt_cu_vec_f64", __LINE__);
        if (s == LT_OK)
            s = launched(k, lt_cu_vec_f64(st, v, var, c), "lt_cu_vec_f64", __LINE__);
    }
    /* sums of dy and dy (x - mu) per channel */
    if (s == LT_OK)
        s = launched(k, lt_cu_chan_sums(st, F64(x), x->data, dy->data, mu, n, c, sp, sdy, sdyx), "lt_cu_chan_sums",
                     __LINE__);
    lt_cu_out ds, db;
    if (s == LT_OK && (s = chan_out(k, 1, scale, &ds)) == LT_OK && (s = chan_out(k, 2, bias ? bias : scale, &db)) == LT_OK)
        s = launched(k,
                     lt_cu_bn_grad_coeffs(st, c, training, eps, (double)n * (double)sp, g, var, sdy, sdyx, A, B, C, ds,
                                          db),
                     "lt_cu_bn_grad_coeffs", __LINE__);
    lt_tensor *dx;
    if (s == LT_OK && lt_k_want(k, 0) && (s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) == LT_OK)
        s = launched(k, lt_cu_bn_dx(st, F64(x), dy->data, x->data, dx->data, n, c, sp, mu, A, B, C), "lt_cu_bn_dx",
                     __LINE__);
    lt_buf_release(dev); /* as in the forward */
    return s;
}

/* Dropout (data[, ratio, training_mode]): the mask is drawn on the host
 * from the same generator and in the same order as the CPU kernel draws it
 * (the executor's stream, or mt19937 from a seed attribute), so both
 * backends drop the same elements; the device scales. The mask output is
 * bool (float before opset 10, which the fits rule leaves to the host). */
static bool fits_dropout(const lt_node *n)
{
    return n->opset >= 10 && (n->nin < 2 || !n->in[1] || float_in(n, 1));
}

static lt_status k_dropout(lt_kctx *k)
{
    const lt_node *node = k->node;
    const lt_tensor *x = lt_k_in(k, 0), *tr = lt_k_in(k, 1), *tm = lt_k_in(k, 2);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs data");
    if (x->dtype != LT_F32 && x->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s on cuda", lt_dtype_name(x->dtype));
    double ratio = lt_attr_float(node, "ratio", 0.5f);
    bool training = false;
    if (node->opset >= 12) {
        if ((tr && tr->numel != 1) || (tm && tm->numel != 1))
            return lt_k_fail(k, LT_ERR_INVALID, "ratio and training_mode must be scalars");
        ratio = tr ? lt_tensor_get_f64(tr, 0) : 0.5;
        training = tm && lt_tensor_get_f64(tm, 0) != 0;
    }
    if (!(ratio >= 0 && ratio <= 1))
        return lt_k_fail(k, LT_ERR_INVALID, "ratio %g is outside [0, 1]", ratio);
    cudaStream_t st = lt_cuda_of(k->be)->stream;
    lt_status s;
    lt_tensor *m = NULL;
    if (!training || ratio == 0) {
        if ((s = lt_k_out_view(k, 0, x, x->rank, x->dims)) != LT_OK)
            return s;
        if (lt_k_want(k, 1) && (s = lt_k_out(k, 1, LT_BOOL, x->rank, x->dims, &m)) == LT_OK)
            LT_CUDA_K(k, cudaMemsetAsync(m->data, 1, (size_t)x->numel, st));
        return s;
    }
    size_t n = (size_t)x->numel;
    uint8_t *keep = lt_k_scratch(k, n ? n : 1);
    if (!keep)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    if (lt_attr_find(node, "seed")) {
        lt_mt19937 *g = lt_k_scratch(k, sizeof *g);
        if (!g)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        lt_mt19937_seed(g, (uint32_t)lt_attr_int(node, "seed", 0));
        for (size_t i = 0; i < n; i++)
            keep[i] = lt_mt19937_double(g) >= ratio;
    } else {
        for (size_t i = 0; i < n; i++)
            keep[i] = (double)(lt_k_rand_u64(k) >> 11) * 0x1.0p-53 >= ratio;
    }
    lt_tensor *y;
    lt_buf *tmp = NULL;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK)
        return s;
    if (lt_k_want(k, 1))
        s = lt_k_out(k, 1, LT_BOOL, x->rank, x->dims, &m);
    else
        s = lt_cuda_scratch(k, n, &tmp);
    if (s != LT_OK)
        return s;
    void *dk = m ? m->data : tmp->data;
    /* the mask is host scratch that goes back once the node returns */
    cudaError_t ue = lt_cuda_upload_bytes(k->be, dk, keep, n);
    if (ue != cudaSuccess)
        s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cuda_upload_bytes (mask)", "CUDA", cudaGetErrorString(ue));
    if (s == LT_OK) {
        cudaError_t e = lt_cu_dropout(st, F64(x), x->data, dk, y->data, x->numel, ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0);
        if (e != cudaSuccess)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_dropout", "CUDA", cudaGetErrorString(e));
    }
    lt_buf_release(tmp); /* the pass is queued before any later use of the block */
    return s;
}

void lt_cuda_register_norm(lt_cu_op *tab)
{
    tab[LT_OP_BATCH_NORMALIZATION] = (lt_cu_op){k_batch_norm, 0, 0, fits_bn};
    tab[LT_OP_BATCH_NORM_GRAD] = (lt_cu_op){k_batch_norm_grad, 0, 0, fits_bn};
    tab[LT_OP_DROPOUT] = (lt_cu_op){k_dropout, 0x6u, 0, fits_dropout};
}
