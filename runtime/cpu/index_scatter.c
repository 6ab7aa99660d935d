/* CPU kernels: the scatters (Scatter, ScatterElements, ScatterND) with the
 * reductions none/add/mul/max/min of opsets 16 and 18. The output starts as
 * a copy of data; updates then land in index order, so with duplicate
 * indices the last update wins (none) or all of them combine. */
#include "index_util.h"

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } red_kind;

static lt_status get_reduction(lt_kctx *k, red_kind *r)
{
    const char *s = lt_attr_str(k->node, "reduction", "none");
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *r = (red_kind)i;
            return LT_OK;
        }
    return lt_k_fail(k, LT_ERR_INVALID, "unknown reduction '%s'", s);
}

/* dst[i] = dst[i] (op) src[i] for i < n; for r != RED_NONE only. */
#define RED_LOOP(T, n, d, s, r)                                                                         \
    for (int64_t i = 0; i < (n); i++) {                                                                 \
        T a = (d)[i], b = (s)[i];                                                                       \
        (d)[i] = (r) == RED_ADD ? (T)(a + b) : (r) == RED_MUL ? (T)(a * b) : (r) == RED_MAX ? (b > a ? b : a) \
                                                                                             : (b < a ? b : a); \
    }

static void reduce_run(lt_dtype dt, red_kind r, void *dst, const void *src, int64_t n)
{
    switch (dt) {
    case LT_F32: RED_LOOP(float, n, (float *)dst, (const float *)src, r); break;
    case LT_F64: RED_LOOP(double, n, (double *)dst, (const double *)src, r); break;
    case LT_I8: RED_LOOP(int8_t, n, (int8_t *)dst, (const int8_t *)src, r); break;
    case LT_U8: RED_LOOP(uint8_t, n, (uint8_t *)dst, (const uint8_t *)src, r); break;
    case LT_I16: RED_LOOP(int16_t, n, (int16_t *)dst, (const int16_t *)src, r); break;
    case LT_U16: RED_LOOP(uint16_t, n, (uint16_t *)dst, (const uint16_t *)src, r); break;
    case LT_I32: RED_LOOP(int32_t, n, (int32_t *)dst, (const int32_t *)src, r); break;
    case LT_U32: RED_LOOP(uint32_t, n, (uint32_t *)dst, (const uint32_t *)src, r); break;
    case LT_I64: RED_LOOP(int64_t, n, (int64_t *)dst, (const int64_t *)src, r); break;
    case LT_U64: RED_LOOP(uint64_t, n, (uint64_t *)dst, (const uint64_t *)src, r); break;
    case LT_BOOL: {
        /* numpy's bool arithmetic: add and max are or, mul and min are and */
        uint8_t *d = dst;
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (r == RED_ADD || r == RED_MAX) ? (d[i] || s[i]) : (d[i] && s[i]);
        break;
    }
    case LT_F16:
    case LT_BF16: {
        uint16_t *d = dst;
        const uint16_t *s = src;
        bool h = dt == LT_F16;
        for (int64_t i = 0; i < n; i++) {
            float a = h ? lt_f16_to_f32(d[i]) : lt_bf16_to_f32(d[i]);
            float b = h ? lt_f16_to_f32(s[i]) : lt_bf16_to_f32(s[i]);
            float c = r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? (b > a ? b : a) : (b < a ? b : a);
            d[i] = h ? lt_f32_to_f16(c) : lt_f32_to_bf16(c);
        }
        break;
    }
    default: break; /* rejected before the loop */
    }
}

static bool reducible(lt_dtype dt)
{
    return lt_dtype_is_float(dt) || lt_dtype_is_int(dt) || dt == LT_BOOL;
}

static lt_status start_output(lt_kctx *k, const lt_tensor *x, lt_tensor **y)
{
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, y);
    if (s == LT_OK && lt_tensor_nbytes(x))
        memcpy((*y)->data, x->data, lt_tensor_nbytes(x));
    return s;
}

static lt_status inputs3(lt_kctx *k, const lt_tensor **x, const lt_tensor **ind, const lt_tensor **u)
{
    *x = lt_k_in(k, 0);
    *ind = lt_k_in(k, 1);
    *u = lt_k_in(k, 2);
    if (!*x || !*ind || !*u)
        return lt_k_fail(k, LT_ERR_INVALID, "needs data, indices and updates tensors");
    if (!lt_ix_is_index_type((*ind)->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be int32 or int64, got %s", lt_dtype_name((*ind)->dtype));
    if ((*u)->dtype != (*x)->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "updates are %s but data is %s", lt_dtype_name((*u)->dtype),
                         lt_dtype_name((*x)->dtype));
    return LT_OK;
}

/* ---- ScatterElements (and the opset-9 Scatter, which has no reduction) ---- */
static lt_status k_scatter_elements(lt_kctx *k)
{
    const lt_tensor *x, *ind, *u;
    lt_status s = inputs3(k, &x, &ind, &u);
    if (s != LT_OK)
        return s;
    red_kind red = RED_NONE;
    if (k->node->op == LT_OP_SCATTER_ELEMENTS && (s = get_reduction(k, &red)) != LT_OK)
        return s;
    if (red != RED_NONE && !reducible(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "reduction on %s", lt_dtype_name(x->dtype));
    int r = x->rank, axis;
    if (r < 1 || ind->rank != r || u->rank != r)
        return lt_k_fail(k, LT_ERR_INVALID, "data, indices and updates must have the same rank >= 1 (%d, %d, %d)",
                         r, ind->rank, u->rank);
    int64_t a = lt_attr_int(k->node, "axis", 0);
    if (!lt_ix_axis(a, r, &axis))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, r);
    for (int d = 0; d < r; d++) {
        if (u->dims[d] != ind->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "updates dim %d (%lld) differs from indices dim %d (%lld)", d,
                             (long long)u->dims[d], d, (long long)ind->dims[d]);
        if (d != axis && ind->dims[d] > x->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "indices dim %d (%lld) exceeds data dim %d (%lld)", d,
                             (long long)ind->dims[d], d, (long long)x->dims[d]);
    }
    lt_tensor *y;
    if ((s = start_output(k, x, &y)) != LT_OK)
        return s;
    int64_t xs[LT_MAX_RANK];
    xs[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--)
        xs[d] = xs[d + 1] * x->dims[d + 1];
    int64_t na = ind->dims[axis], n = x->dims[axis], sa = xs[axis];
    int64_t outer = lt_ix_prod(ind->dims, 0, axis), inner = lt_ix_prod(ind->dims, axis + 1, r);
    int64_t lines = outer * inner;
    size_t es = lt_dtype_size(x->dtype);
    char *yd = y->data;
    const char *ud = u->data;
    lt_ix_bad bad = {-1, 0, 0, 0};
    /* each line (all coordinates but the axis one) writes its own output
     * line, so lines run in parallel and each runs in index order */
#pragma omp parallel for if (ind->numel > LT_IX_PAR_MIN)
    for (int64_t t = 0; t < lines; t++) {
        int64_t o = t / inner, i = t % inner, base = 0, rem;
        rem = o;
        for (int d = axis - 1; d >= 0; d--) {
            base += (rem % ind->dims[d]) * xs[d];
            rem /= ind->dims[d];
        }
        rem = i;
        for (int d = r - 1; d > axis; d--) {
            base += (rem % ind->dims[d]) * xs[d];
            rem /= ind->dims[d];
        }
        for (int64_t j = 0; j < na; j++) {
            int64_t p = (o * na + j) * inner + i, v = lt_ix_get(ind, p), w = v;
            if (!lt_ix_wrap(&w, n)) {
                lt_ix_bad_note(&bad, p, v, n, axis);
                break;
            }
            char *dst = yd + (size_t)(base + w * sa) * es;
            if (red == RED_NONE)
                memcpy(dst, ud + (size_t)p * es, es);
            else if (x->dtype == LT_F32) /* the common case without a call per element */
                RED_LOOP(float, 1, (float *)dst, (const float *)ud + p, red)
            else
                reduce_run(x->dtype, red, dst, ud + (size_t)p * es, 1);
        }
    }
    if (bad.pos >= 0)
        return lt_ix_bad_fail(k, &bad);
    return LT_OK;
}

/* ---- ScatterND: index tuples of length kk address slices of the output ---- */
static lt_status k_scatter_nd(lt_kctx *k)
{
    const lt_tensor *x, *ind, *u;
    lt_status s = inputs3(k, &x, &ind, &u);
    if (s != LT_OK)
        return s;
    red_kind red = RED_NONE;
    if ((s = get_reduction(k, &red)) != LT_OK)
        return s;
    if (red != RED_NONE && !reducible(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "reduction on %s", lt_dtype_name(x->dtype));
    int r = x->rank, q = ind->rank;
    int64_t kk = 0;
    if ((s = lt_ix_scatter_nd_shape(k, x, ind, u, &kk)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = start_output(k, x, &y)) != LT_OK)
        return s;
    int64_t strides[LT_MAX_RANK];
    for (int j = 0; j < kk; j++)
        strides[j] = lt_ix_prod(x->dims, j + 1, r);
    int64_t slice = lt_ix_prod(x->dims, (int)kk, r), nt = lt_ix_prod(ind->dims, 0, q - 1);
    size_t es = lt_dtype_size(x->dtype), row = (size_t)slice * es;
    char *yd = y->data;
    const char *ud = u->data;
    /* sequential: tuples may repeat and must apply in order */
    for (int64_t t = 0; t < nt; t++) {
        int64_t off = 0;
        for (int j = 0; j < kk; j++) {
            int64_t v = lt_ix_get(ind, t * kk + j), w = v;
            if (!lt_ix_wrap(&w, x->dims[j]))
                return lt_k_fail(k, LT_ERR_INVALID,
                                 "index %lld (tuple %lld, component %d) is out of range for dim %d of size %lld",
                                 (long long)v, (long long)t, j, j, (long long)x->dims[j]);
            off += w * strides[j];
        }
        if (red == RED_NONE)
            memcpy(yd + (size_t)off * es, ud + (size_t)t * row, row);
        else
            reduce_run(x->dtype, red, yd + (size_t)off * es, ud + (size_t)t * row, slice);
    }
    return LT_OK;
}

void lt_cpu_register_index_scatter(lt_kernel_fn *tab)
{
    tab[LT_OP_SCATTER] = k_scatter_elements;
    tab[LT_OP_SCATTER_ELEMENTS] = k_scatter_elements;
    tab[LT_OP_SCATTER_ND] = k_scatter_nd;
}
