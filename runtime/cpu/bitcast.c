/* CPU kernel: BitCast (opset 26), the bytes of X read as another type of
 * the same width (little-endian hosts only, as the spec's byte order). The
 * 4- and 2-bit types, held one per byte, keep their low bits: int4 -> uint4
 * masks, uint4 -> int4 sign-extends (lt_narrow_unpack of the code). */
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
    int xb = lt_dtype_bits(x->dtype), tb = lt_dtype_bits((lt_dtype)to);
    if (xb != tb)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s (%d bits) and %s (%d bits) differ in width",
                         lt_dtype_name(x->dtype), xb, lt_dtype_name((lt_dtype)to), tb);
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, (lt_dtype)to, x->rank, x->dims, &y);
    if (st != LT_OK || !x->numel)
        return st;
    if (xb >= 8) {
        memcpy(y->data, x->data, (size_t)x->numel * es);
        return LT_OK;
    }
    const uint8_t *src = x->data;
    uint8_t *dst = y->data, mask = (uint8_t)((1u << xb) - 1);
    for (int64_t i = 0; i < x->numel; i++) { /* one element as a packed byte of its own */
        uint8_t code = src[i] & mask;
        lt_narrow_unpack((lt_dtype)to, &code, 1, &dst[i]);
    }
    return LT_OK;
}

void lt_cpu_register_bitcast(lt_kernel_fn *tab) { tab[LT_OP_BIT_CAST] = bitcast; }
