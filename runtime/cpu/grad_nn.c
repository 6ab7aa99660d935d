/* CPU kernels: grad_nn family, the backward kernels of convolutions, pools,
 * Resize and the normalizations that the AD emits (ir/ops.def, domain 2).
 * This file registers the family and holds the checks its files share. */
#include "grad_nn_util.h"
#include <stdio.h>

const lt_tensor *lt_gnn_need(lt_kctx *k, int i, const char *what)
{
    const lt_tensor *t = lt_k_in(k, i);
    if (!t)
        lt_k_fail(k, LT_ERR_INVALID, "needs %s (input %d)", what, i);
    return t;
}

lt_status lt_gnn_same_shape(lt_kctx *k, const lt_tensor *t, const char *what, int rank, const int64_t *dims)
{
    bool ok = t->rank == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = t->dims[i] == dims[i];
    if (ok)
        return LT_OK;
    char want[256], got[256];
    int a = 0, b = 0;
    for (int i = 0; i < rank && a < (int)sizeof want - 24; i++)
        a += snprintf(want + a, sizeof want - a, "%s%lld", i ? ", " : "", (long long)dims[i]);
    for (int i = 0; i < t->rank && b < (int)sizeof got - 24; i++)
        b += snprintf(got + b, sizeof got - b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    want[a] = got[b] = 0;
    return lt_k_fail(k, LT_ERR_RUNTIME, "%s has shape [%s], expected [%s]", what, got, want);
}

lt_status lt_gnn_float(lt_kctx *k, const lt_tensor *t, const char *what)
{
    if (lt_dtype_is_float(t->dtype))
        return LT_OK;
    return lt_k_fail(k, LT_ERR_RUNTIME, "%s of type %s (float types expected)", what, lt_dtype_name(t->dtype));
}

void lt_cpu_register_grad_nn(lt_kernel_fn *tab)
{
    lt_gnn_register_conv(tab);
    lt_gnn_register_pool(tab);
    lt_gnn_register_resize(tab);
    lt_gnn_register_norm(tab);
    lt_gnn_register_layer(tab);
}
