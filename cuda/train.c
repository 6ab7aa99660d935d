/* The cuda backend's training hooks (backend.h): the fused optimizer step,
 * the sum of squares for gradient clipping and gradient accumulation, all
 * on the backend's stream over tensors in its memory (optim.cu), so that a
 * training step keeps parameters, gradients and optimizer state on the
 * GPU. */
#include "cuda_internal.h"
#include <string.h>

_Static_assert((int)LT_CU_OPT_SGD == (int)LT_OPTIM_SGD && (int)LT_CU_OPT_MOMENTUM == (int)LT_OPTIM_MOMENTUM &&
                   (int)LT_CU_OPT_NESTEROV == (int)LT_OPTIM_NESTEROV && (int)LT_CU_OPT_ADAGRAD == (int)LT_OPTIM_ADAGRAD &&
                   (int)LT_CU_OPT_ADAM == (int)LT_OPTIM_ADAM && (int)LT_CU_OPT_ADAMW == (int)LT_OPTIM_ADAMW,
               "optim.cu numbers the optimizers as lantern.h does");

static bool float_type(lt_dtype t) { return t == LT_F32 || t == LT_F64; }

lt_status lt_cuda_optim_update(const lt_backend *be, const lt_optim_update *u, lt_err *err)
{
    if (!float_type(u->dtype))
        return lt_errf(err, LT_ERR_INTERNAL, "cuda optimizer step on a %s tensor", lt_dtype_name(u->dtype));
    bool st1 = u->kind != LT_OPTIM_SGD, st2 = u->kind == LT_OPTIM_ADAM || u->kind == LT_OPTIM_ADAMW;
    if ((st1 && !u->s1) || (st2 && !u->s2))
        return lt_errf(err, LT_ERR_INTERNAL, "cuda optimizer step without its state");
    lt_cu_optim o = {
        .kind = (int)u->kind,
        .f64 = u->dtype == LT_F64,
        .n = u->n,
        .p = u->p,
        .g = u->g,
        .s1 = u->s1,
        .s2 = u->s2,
        .lr = u->lr,
        .scale = u->scale,
        .wd = u->kind == LT_OPTIM_ADAMW ? 0.0 : u->wd, /* AdamW decays through decay */
        .mu = u->mu,
        .b1 = u->b1,
        .b2 = u->b2,
        .one_b1 = u->one_b1,
        .one_b2 = u->one_b2,
        .eps = u->eps,
        .adam_step = u->adam_step,
        .inv_sqrt_bc2 = u->inv_sqrt_bc2,
        .decay = u->decay,
    };
    LT_CUDA_CHECK(err, lt_cu_optim_step(lt_cuda_of(be)->stream, &o));
    return LT_OK;
}

lt_status lt_cuda_sum_squares(const lt_backend *be, const lt_tensor *t, double *out, lt_err *err)
{
    if (!float_type(t->dtype))
        return lt_errf(err, LT_ERR_INTERNAL, "sum of squares of a %s tensor", lt_dtype_name(t->dtype));
    lt_cuda *st = lt_cuda_of(be);
    lt_buf *acc = lt_cuda_alloc(be, sizeof(double));
    if (!acc)
        return lt_errf(err, LT_ERR_NOMEM, "out of device memory for a gradient norm (%zu bytes in use)", st->in_use);
    cudaError_t e = lt_cu_sum_squares(st->stream, t->dtype == LT_F64, t->data, t->numel, acc->data);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(out, acc->data, sizeof(double), cudaMemcpyDeviceToHost, st->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st->stream);
    lt_buf_release(acc);
    LT_CUDA_CHECK(err, e);
    return LT_OK;
}

lt_status lt_cuda_accumulate(const lt_backend *be, lt_tensor *dst, const lt_tensor *src, lt_err *err)
{
    lt_cuda *st = lt_cuda_of(be);
    if (!src) {
        LT_CUDA_CHECK(err, cudaMemsetAsync(dst->data, 0, lt_tensor_nbytes(dst), st->stream));
        return LT_OK;
    }
    if (src->dtype != dst->dtype || src->numel != dst->numel || !float_type(dst->dtype))
        return lt_errf(err, LT_ERR_INTERNAL, "accumulating a %s[%lld] into a %s[%lld]", lt_dtype_name(src->dtype),
                       (long long)src->numel, lt_dtype_name(dst->dtype), (long long)dst->numel);
    LT_CUDA_CHECK(err, lt_cu_add_into(st->stream, dst->dtype == LT_F64, dst->data, src->data, dst->numel));
    return LT_OK;
}
