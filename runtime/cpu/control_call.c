/* Calls of IR functions and accumulation cells (the paper's `ref` + `+=`):
 * AccZerosLike makes a fresh zeroed cell shaped like its input, AccAdd adds
 * into it in place (cells are never shared: only AccZerosLike creates one),
 * AccGemm adds a matrix product into it, AccRead returns a copy of its
 * contents. */
#include "../runtime.h"
#include "linalg_util.h"
#include "par.h"
#include <stdlib.h>
#include <string.h>

static lt_status op_call(lt_kctx *k)
{
    int64_t fi = lt_attr_int(k->node, "callee", -1);
    const lt_func *f = lt_k_callee(k, fi);
    if (!f)
        return lt_k_fail(k, LT_ERR_INVALID, "calls function %lld, which does not exist", (long long)fi);
    if (f->body->nparams != k->nin || f->body->nresults != k->nout)
        return lt_k_fail(k, LT_ERR_INVALID, "argument or result count does not match '%s'", f->name);
    lt_value **res = calloc(k->nout + 1, sizeof *res);
    if (!res)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_k_run_block(k, f->body, k->in, res);
    for (int i = 0; i < k->nout; i++) {
        if (s == LT_OK)
            lt_k_out_value(k, i, res[i]);
        else
            lt_value_free(res[i]);
    }
    free(res);
    return s;
}

static lt_status op_acc_zeros_like(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a tensor");
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &o);
    if (s == LT_OK)
        memset(o->data, 0, lt_tensor_nbytes(o));
    return s;
}

static lt_status op_acc_add(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0), *v = lt_k_in(k, 1);
    if (!c || !v || c->dtype != v->dtype || c->numel != v->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cell and contribution differ in type or size");
    lt_tensor *cell = (lt_tensor *)c; /* cells are updated in place by design */
    switch (c->dtype) {
    case LT_F32: {
        float *d = cell->data;
        const float *a = v->data;
#pragma omp parallel for if (c->numel > LT_PAR_ELEMS)
        for (int64_t i = 0; i < c->numel; i++)
            d[i] += a[i];
        break;
    }
    case LT_F64: {
        double *d = cell->data;
        const double *a = v->data;
        for (int64_t i = 0; i < c->numel; i++)
            d[i] += a[i];
        break;
    }
    default:
        for (int64_t i = 0; i < c->numel; i++)
            lt_tensor_set_f64(cell, i, lt_tensor_get_f64(c, i) + lt_tensor_get_f64(v, i));
    }
    return LT_OK;
}

/* cell [M, N] += alpha op(A) op(B), with Gemm's transA / transB */
static lt_status op_acc_gemm(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0), *a = lt_k_in(k, 1), *b = lt_k_in(k, 2);
    if (!c || !a || !b || a->rank != 2 || b->rank != 2 || c->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a matrix cell and two matrices");
    if ((c->dtype != LT_F32 && c->dtype != LT_F64) || a->dtype != c->dtype || b->dtype != c->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cell and operands must all be float32 or all float64");
    bool ta = lt_attr_int(k->node, "transA", 0) != 0, tb = lt_attr_int(k->node, "transB", 0) != 0;
    double alpha = lt_attr_float(k->node, "alpha", 1.0f);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != kb || M != c->dims[0] || N != c->dims[1])
        return lt_k_fail(k, LT_ERR_RUNTIME, "op(A) [%lld,%lld] times op(B) [%lld,%lld] does not fit the cell [%lld,%lld]",
                         (long long)M, (long long)K, (long long)kb, (long long)N, (long long)c->dims[0],
                         (long long)c->dims[1]);
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    /* cells are updated in place by design */
    lt_linalg_gemm(c->dtype, ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], 1.0, c->data, N);
    return LT_OK;
}

static lt_status op_acc_read(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0);
    if (!c)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a cell");
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, c->dtype, c->rank, c->dims, &o);
    if (s == LT_OK)
        memcpy(o->data, c->data, lt_tensor_nbytes(c));
    return s;
}

void lt_cpu_register_control_call(lt_kernel_fn *tab)
{
    tab[LT_OP_CALL] = op_call;
    tab[LT_OP_ACC_ZEROS_LIKE] = op_acc_zeros_like;
    tab[LT_OP_ACC_ADD] = op_acc_add;
    tab[LT_OP_ACC_READ] = op_acc_read;
    tab[LT_OP_ACC_GEMM] = op_acc_gemm;
}
