/* CPU kernels: tensor-family ops that make new tensors from attributes or
 * scalars: Constant, ConstantOfShape, Range, EyeLike and the Hann, Hamming
 * and Blackman windows. */
#include "tensor_util.h"
#include <math.h>
#include <string.h>

static lt_status out_copy(lt_kctx *k, const lt_tensor *src)
{
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, src->dtype, src->rank, src->dims, &y);
    if (st == LT_OK && lt_tensor_nbytes(src))
        memcpy(y->data, src->data, lt_tensor_nbytes(src));
    return st;
}

static lt_status k_constant(lt_kctx *k)
{
    const lt_node *n = k->node;
    const lt_attr *a;
    lt_tensor *y;
    lt_status st;
    const lt_tensor *t = lt_attr_tensor(n, "value");
    if (t)
        return out_copy(k, t);
    if ((a = lt_attr_find(n, "value_float")) && a->kind == LT_ATTR_FLOAT) {
        if ((st = lt_k_out(k, 0, LT_F32, 0, NULL, &y)) == LT_OK)
            *(float *)y->data = a->f;
        return st;
    }
    if ((a = lt_attr_find(n, "value_int")) && a->kind == LT_ATTR_INT) {
        if ((st = lt_k_out(k, 0, LT_I64, 0, NULL, &y)) == LT_OK)
            *(int64_t *)y->data = a->i;
        return st;
    }
    if ((a = lt_attr_find(n, "value_string")) && a->kind == LT_ATTR_STRING) {
        const char *v = lt_str_intern(a->s ? a->s : "", a->s ? a->slen : 0);
        if (!v)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        if ((st = lt_k_out(k, 0, LT_STRING, 0, NULL, &y)) == LT_OK)
            *(const char **)y->data = v;
        return st;
    }
    if ((a = lt_attr_find(n, "value_floats")) && a->kind == LT_ATTR_FLOATS) {
        int64_t len = a->n;
        if ((st = lt_k_out(k, 0, LT_F32, 1, &len, &y)) == LT_OK && len)
            memcpy(y->data, a->floats, sizeof(float) * (size_t)len);
        return st;
    }
    if ((a = lt_attr_find(n, "value_ints")) && a->kind == LT_ATTR_INTS) {
        int64_t len = a->n;
        if ((st = lt_k_out(k, 0, LT_I64, 1, &len, &y)) == LT_OK && len)
            memcpy(y->data, a->ints, sizeof(int64_t) * (size_t)len);
        return st;
    }
    if ((a = lt_attr_find(n, "value_strings")) && a->kind == LT_ATTR_STRINGS) {
        int64_t len = a->n;
        if ((st = lt_k_out(k, 0, LT_STRING, 1, &len, &y)) != LT_OK)
            return st;
        for (int64_t i = 0; i < len; i++) {
            const char *v = a->strings[i] ? a->strings[i] : "";
            if (!(((const char **)y->data)[i] = lt_str_intern(v, strlen(v))))
                return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        }
        return st;
    }
    if (lt_attr_find(n, "sparse_value"))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "sparse constants are not supported");
    return lt_k_fail(k, LT_ERR_INVALID, "no value attribute");
}

lt_status lt_tk_constant_of_shape_args(lt_kctx *k, int64_t *dims, int *rank, lt_dtype *dt, const void **elem)
{
    static const float zero = 0.0f;
    const lt_tensor *s;
    lt_status st = lt_tk_need(k, 0, &s);
    if (st == LT_OK)
        st = lt_tk_ints(k, s, dims, LT_MAX_RANK, rank, "shape");
    if (st != LT_OK)
        return st;
    for (int i = 0; i < *rank; i++)
        if (dims[i] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "shape[%d] is negative", i);
    const lt_tensor *v = lt_attr_tensor(k->node, "value");
    if (v && v->numel != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "value must hold one element, it holds %lld", (long long)v->numel);
    *dt = v ? v->dtype : LT_F32;
    *elem = v ? v->data : (const void *)&zero;
    return LT_OK;
}

static lt_status k_constant_of_shape(lt_kctx *k)
{
    int64_t dims[LT_MAX_RANK];
    int n;
    lt_dtype dt;
    const void *elem;
    lt_status st = lt_tk_constant_of_shape_args(k, dims, &n, &dt, &elem);
    if (st != LT_OK)
        return st;
    lt_tensor *y;
    st = lt_k_out(k, 0, dt, n, dims, &y);
    if (st == LT_OK)
        lt_tk_fill(y->data, y->numel, elem, lt_dtype_size(dt));
    return st;
}

static lt_status scalar_in(lt_kctx *k, int i, const lt_tensor **t)
{
    lt_status st = lt_tk_need(k, i, t);
    if (st == LT_OK && (*t)->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input %d must be a scalar, it has %lld elements", i,
                         (long long)(*t)->numel);
    return st;
}

static lt_status k_range(lt_kctx *k)
{
    const lt_tensor *ts, *tl, *td;
    lt_status st = scalar_in(k, 0, &ts);
    if (st == LT_OK)
        st = scalar_in(k, 1, &tl);
    if (st == LT_OK)
        st = scalar_in(k, 2, &td);
    if (st != LT_OK)
        return st;
    lt_dtype dt = ts->dtype;
    if (tl->dtype != dt || td->dtype != dt)
        return lt_k_fail(k, LT_ERR_RUNTIME, "start, limit and delta differ in type");
    int64_t n;
    lt_tensor *y;
    if (lt_dtype_is_float(dt)) {
        double s = lt_tensor_get_f64(ts, 0), l = lt_tensor_get_f64(tl, 0), d = lt_tensor_get_f64(td, 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            return lt_k_fail(k, LT_ERR_RUNTIME, "start, limit and delta must be finite and delta nonzero");
        double c = ceil((l - s) / d);
        if (c > 9.0e15)
            return lt_k_fail(k, LT_ERR_RUNTIME, "range of %g elements is too long", c);
        n = c > 0 ? (int64_t)c : 0;
        if ((st = lt_k_out(k, 0, dt, 1, &n, &y)) != LT_OK)
            return st;
        if (dt == LT_F32) {
            float fs = (float)s, fd = (float)d, *o = y->data;
            for (int64_t i = 0; i < n; i++)
                o[i] = fs + (float)i * fd;
        } else {
            for (int64_t i = 0; i < n; i++)
                lt_tensor_set_f64(y, i, s + (double)i * d);
        }
        return LT_OK;
    }
    if (!lt_dtype_is_int(dt))
        return lt_k_fail(k, LT_ERR_RUNTIME, "Range does not take %s", lt_dtype_name(dt));
    __int128 s = lt_tensor_get_i64(ts, 0), l = lt_tensor_get_i64(tl, 0), d = lt_tensor_get_i64(td, 0);
    if (dt == LT_U64)
        return lt_k_fail(k, LT_ERR_RUNTIME, "Range does not take uint64");
    if (d == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "delta is 0");
    __int128 c = d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : (s > l ? (s - l - d - 1) / -d : 0);
    if (c > INT64_MAX / 16)
        return lt_k_fail(k, LT_ERR_RUNTIME, "range is too long");
    n = (int64_t)c;
    if ((st = lt_k_out(k, 0, dt, 1, &n, &y)) != LT_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        lt_tensor_set_i64(y, i, (int64_t)(s + (__int128)i * d));
    return LT_OK;
}

static lt_status k_eye_like(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    if (x->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be 2-D, got rank %d", x->rank);
    lt_dtype dt = (lt_dtype)lt_attr_int(k->node, "dtype", x->dtype);
    if (lt_dtype_size(dt) == 0 || dt == LT_STRING)
        return lt_k_fail(k, LT_ERR_INVALID, "dtype %d is not a numeric type", (int)dt);
    int64_t kd = lt_attr_int(k->node, "k", 0), R = x->dims[0], C = x->dims[1];
    lt_tensor *y;
    if ((st = lt_k_out(k, 0, dt, 2, x->dims, &y)) != LT_OK)
        return st;
    memset(y->data, 0, lt_tensor_nbytes(y)); /* all-zero bits: 0 in every numeric type */
    for (int64_t i = 0; i < R && kd > -R && kd < C; i++) { /* a k past every column: all zeros */
        int64_t j = i + kd;
        if (j >= 0 && j < C)
            lt_tensor_set_f64(y, i * C + j, 1.0);
    }
    return LT_OK;
}

/* w[n] = sum_m a[m] cos(2 pi m n / N), N = size (periodic) or size - 1. */
static lt_status window(lt_kctx *k, const double *a, int na)
{
    const lt_tensor *s;
    lt_status st = scalar_in(k, 0, &s);
    if (st != LT_OK)
        return st;
    if (!lt_dtype_is_int(s->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "size must be an integer");
    int64_t n = lt_tensor_get_i64(s, 0);
    if (n < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "size %lld is negative", (long long)n);
    lt_dtype dt = (lt_dtype)lt_attr_int(k->node, "output_datatype", LT_F32);
    if (lt_dtype_size(dt) == 0 || dt == LT_STRING)
        return lt_k_fail(k, LT_ERR_INVALID, "output_datatype %d is not a numeric type", (int)dt);
    double N = lt_attr_int(k->node, "periodic", 1) ? (double)n : (double)n - 1;
    lt_tensor *y;
    if ((st = lt_k_out(k, 0, dt, 1, &n, &y)) != LT_OK)
        return st;
    for (int64_t i = 0; i < n; i++) {
        double w = 0;
        for (int m = 0; m < na; m++)
            w += a[m] * (N > 0 ? cos(2.0 * M_PI * m * (double)i / N) : 1.0);
        lt_tensor_set_f64(y, i, w);
    }
    return LT_OK;
}

static lt_status k_hann(lt_kctx *k)
{
    static const double a[] = {0.5, -0.5};
    return window(k, a, 2);
}

static lt_status k_hamming(lt_kctx *k)
{
    static const double a[] = {25.0 / 46.0, -21.0 / 46.0};
    return window(k, a, 2);
}

static lt_status k_blackman(lt_kctx *k)
{
    static const double a[] = {0.42, -0.5, 0.08};
    return window(k, a, 3);
}

void lt_tk_register_gen(lt_kernel_fn *tab)
{
    tab[LT_OP_CONSTANT] = k_constant;
    tab[LT_OP_CONSTANT_OF_SHAPE] = k_constant_of_shape;
    tab[LT_OP_RANGE] = k_range;
    tab[LT_OP_EYE_LIKE] = k_eye_like;
    tab[LT_OP_HANN_WINDOW] = k_hann;
    tab[LT_OP_HAMMING_WINDOW] = k_hamming;
    tab[LT_OP_BLACKMAN_WINDOW] = k_blackman;
}
