/* CPU kernels: tensor family, the ops that only relabel a tensor's shape
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity: zero-copy views) or read
 * it (Shape, Size). The registrar also pulls in the data-moving ops from
 * tensor_copy.c, tensor_pad.c and tensor_gen.c. */
#include "tensor_util.h"
#include <string.h>

/* The shape operand of Reshape: an attribute before opset 5, an input after. */
static lt_status reshape_target(lt_kctx *k, int64_t *shape, int *n)
{
    if (k->node->opset < 5 && !lt_k_in(k, 1)) {
        int len;
        const int64_t *a = lt_attr_ints(k->node, "shape", &len);
        if (!a)
            return lt_k_fail(k, LT_ERR_INVALID, "the shape attribute is missing");
        if (len > LT_MAX_RANK)
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "target rank %d is beyond lantern's limit of %d", len,
                             LT_MAX_RANK);
        memcpy(shape, a, sizeof *a * len);
        *n = len;
        return LT_OK;
    }
    const lt_tensor *s;
    lt_status st = lt_tk_need(k, 1, &s);
    return st != LT_OK ? st : lt_tk_ints(k, s, shape, LT_MAX_RANK, n, "shape");
}

static lt_status k_reshape(lt_kctx *k)
{
    const lt_tensor *x;
    int64_t shape[LT_MAX_RANK];
    int n;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = reshape_target(k, shape, &n);
    if (st != LT_OK)
        return st;
    bool allowzero = lt_attr_int(k->node, "allowzero", 0) != 0;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return lt_k_fail(k, LT_ERR_RUNTIME, "shape[%d] is 0 (copy) but the input has rank %d", i, x->rank);
            shape[i] = x->dims[i];
        }
        if (shape[i] == -1) {
            if (infer >= 0)
                return lt_k_fail(k, LT_ERR_RUNTIME, "shape has more than one -1");
            infer = i;
            continue;
        }
        if (shape[i] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "shape[%d] is %lld", i, (long long)shape[i]);
        if (__builtin_mul_overflow(known, shape[i], &known))
            return lt_k_fail(k, LT_ERR_RUNTIME, "target shape overflows");
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known != 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "cannot infer the -1 dim: %lld elements into blocks of %lld",
                             (long long)x->numel, (long long)known);
        shape[infer] = x->numel / known;
    } else if (known != x->numel) {
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot reshape %lld elements into %lld", (long long)x->numel,
                         (long long)known);
    }
    return lt_k_out_view(k, 0, x, n, shape);
}

static lt_status k_flatten(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int64_t axis = lt_attr_int(k->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d",
                         (long long)lt_attr_int(k->node, "axis", 1), x->rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        d[i >= axis] *= x->dims[i];
    return lt_k_out_view(k, 0, x, 2, d);
}

/* Squeeze/Unsqueeze axes: an attribute before opset 13, an input after.
 * *given is false when neither is present. */
static lt_status axes_operand(lt_kctx *k, int64_t *axes, int *n, bool *given)
{
    *given = true;
    if (k->node->opset < 13) {
        int len;
        const int64_t *a = lt_attr_ints(k->node, "axes", &len);
        if (!a) {
            *given = false;
            *n = 0;
            return LT_OK;
        }
        if (len > LT_MAX_RANK)
            return lt_k_fail(k, LT_ERR_INVALID, "%d axes given", len);
        memcpy(axes, a, sizeof *a * len);
        *n = len;
        return LT_OK;
    }
    const lt_tensor *t = lt_k_in(k, 1);
    if (!t) {
        *given = false;
        *n = 0;
        return LT_OK;
    }
    return lt_tk_ints(k, t, axes, LT_MAX_RANK, n, "axes");
}

static lt_status k_squeeze(lt_kctx *k)
{
    const lt_tensor *x;
    int64_t axes[LT_MAX_RANK], dims[LT_MAX_RANK];
    int n, r = 0;
    bool given, drop[LT_MAX_RANK] = {0};
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = axes_operand(k, axes, &n, &given);
    if (st != LT_OK)
        return st;
    given = given && n > 0; /* an empty list squeezes every 1, as no list does */
    for (int i = 0; i < n; i++) {
        int a;
        if (!lt_tk_axis(axes[i], x->rank, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
        if (x->dims[a] != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
        drop[a] = true;
    }
    for (int i = 0; i < x->rank; i++) {
        if (!given && x->dims[i] == 1)
            drop[i] = true;
        if (!drop[i])
            dims[r++] = x->dims[i];
    }
    return lt_k_out_view(k, 0, x, r, dims);
}

static lt_status k_unsqueeze(lt_kctx *k)
{
    const lt_tensor *x;
    int64_t axes[LT_MAX_RANK], dims[LT_MAX_RANK];
    int n;
    bool given, ins[LT_MAX_RANK] = {0};
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = axes_operand(k, axes, &n, &given);
    if (st != LT_OK)
        return st;
    if (!given)
        return lt_k_fail(k, LT_ERR_INVALID, "axes are required");
    int r = x->rank + n;
    if (r > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "output rank %d is beyond lantern's limit of %d", r, LT_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int a;
        if (!lt_tk_axis(axes[i], r, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for output rank %d", (long long)axes[i], r);
        if (ins[a])
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is given twice", a);
        ins[a] = true;
    }
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = ins[i] ? 1 : x->dims[j++];
    return lt_k_out_view(k, 0, x, r, dims);
}

static lt_status k_identity(lt_kctx *k)
{
    if (!k->in[0])
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (k->in[0]->kind != LT_VAL_TENSOR) {
        /* sequences and optionals pass through, sharing their tensors */
        lt_value *v = lt_value_ref(k->in[0]);
        if (!v)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        lt_k_out_value(k, 0, v);
        return LT_OK;
    }
    const lt_tensor *x = &k->in[0]->t;
    return lt_k_out_view(k, 0, x, x->rank, x->dims);
}

static lt_status k_shape(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int64_t r = x->rank, start = lt_attr_int(k->node, "start", 0), end = lt_attr_int(k->node, "end", r);
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t len = end > start ? end - start : 0;
    lt_tensor *y;
    st = lt_k_out(k, 0, LT_I64, 1, &len, &y);
    if (st != LT_OK)
        return st;
    for (int64_t i = 0; i < len; i++)
        ((int64_t *)y->data)[i] = x->dims[start + i];
    return LT_OK;
}

static lt_status k_size(lt_kctx *k)
{
    const lt_tensor *x;
    lt_tensor *y;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = lt_k_out(k, 0, LT_I64, 0, NULL, &y);
    if (st != LT_OK)
        return st;
    *(int64_t *)y->data = x->numel;
    return LT_OK;
}

void lt_cpu_register_tensor(lt_kernel_fn *tab)
{
    tab[LT_OP_RESHAPE] = k_reshape;
    tab[LT_OP_FLATTEN] = k_flatten;
    tab[LT_OP_SQUEEZE] = k_squeeze;
    tab[LT_OP_UNSQUEEZE] = k_unsqueeze;
    tab[LT_OP_IDENTITY] = k_identity;
    tab[LT_OP_SHAPE] = k_shape;
    tab[LT_OP_SIZE] = k_size;
    lt_tk_register_copy(tab);
    lt_tk_register_pad(tab);
    lt_tk_register_gen(tab);
}
