/* CPU kernel: BitCast (opset 26), the bytes of X read as another type of
 * the same width (little-endian hosts only, as the spec's byte order). */
#include "../runtime.h"
#include <string.h>

static lt_status bitcast(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs an input");
    int64_t to = lt_attr_int(k->node, "to", -1);
    size_t es = lt_dtype_size(x->dtype);
    size_t ts = to > 0 && to < LT_DTYPE_COUNT ? lt_dtype_size((lt_dtype)to) : 0;
    if (x->dtype == LT_STRING || to == LT_STRING || es == 0 || ts == 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "cannot reinterpret %s as type %lld", lt_dtype_name(x->dtype),
                         (long long)to);
    if (es != ts)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s (%zu bits) and %s (%zu bits) differ in width",
                         lt_dtype_name(x->dtype), es * 8, lt_dtype_name((lt_dtype)to), ts * 8);
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, (lt_dtype)to, x->rank, x->dims, &y);
    if (st == LT_OK && x->numel)
        memcpy(y->data, x->data, (size_t)x->numel * es);
    return st;
}

void lt_cpu_register_bitcast(lt_kernel_fn *tab) { tab[LT_OP_BIT_CAST] = bitcast; }
