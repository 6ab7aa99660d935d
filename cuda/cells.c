/* Accumulation cells on the device (the paper's `ref` and `+=`): a cell is
 * a tensor in device memory, made zero by AccZerosLike, added into in
 * place by AccAdd (and AccGemm, blas.c), and copied out by AccRead, so a
 * gradient summed over a loop's iterations never leaves the GPU. The
 * executor runs every op on a cell on the side that made it. */
#include "cuda_internal.h"

static cudaStream_t stream_of(lt_kctx *k) { return lt_cuda_of(k->be)->stream; }

static bool float_type(lt_dtype t) { return t == LT_F32 || t == LT_F64; }

/* AccZerosLike(x): a zeroed cell of x's type and shape; x is read for its
 * type and dimensions only (it may live on either side). */
static lt_status k_acc_zeros_like(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x || !float_type(x->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "the cuda kernel makes float32 or float64 cells");
    lt_tensor *c;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &c);
    if (s == LT_OK && c->numel > 0)
        LT_CUDA_K(k, cudaMemsetAsync(c->data, 0, lt_tensor_nbytes(c), stream_of(k)));
    return s;
}

/* AccAdd(cell, v): cell += v, elementwise over equal sizes. */
static lt_status k_acc_add(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0), *v = lt_k_in(k, 1);
    if (!c || !v || c->dtype != v->dtype || c->numel != v->numel || !float_type(c->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "cell and contribution differ in type or size");
    if (c->numel > 0) /* cells are updated in place by design */
        LT_CUDA_K(k, lt_cu_add_into(stream_of(k), c->dtype == LT_F64, ((lt_tensor *)c)->data, v->data, c->numel));
    return LT_OK;
}

/* AccRead(cell): a copy of the cell's contents. */
static lt_status k_acc_read(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0);
    if (!c)
        return lt_k_fail(k, LT_ERR_INVALID, "expects a cell");
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, c->dtype, c->rank, c->dims, &o);
    if (s == LT_OK && c->numel > 0)
        LT_CUDA_K(k, cudaMemcpyAsync(o->data, c->data, lt_tensor_nbytes(c), cudaMemcpyDeviceToDevice, stream_of(k)));
    return s;
}

void lt_cuda_register_cells(lt_cu_op *tab)
{
    tab[LT_OP_ACC_ZEROS_LIKE] = (lt_cu_op){k_acc_zeros_like, 0, 1u, NULL, true};
    tab[LT_OP_ACC_ADD] = (lt_cu_op){k_acc_add, 0, 0, NULL, true};
    tab[LT_OP_ACC_READ] = (lt_cu_op){k_acc_read, 0, 0, NULL, true};
}
