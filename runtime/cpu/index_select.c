/* CPU kernels: element selection by value or position — OneHot, Trilu,
 * Compress, NonZero. */
#include "index_util.h"

/* Whether element i is nonzero (true), as numpy's truth value sees it. */
static bool truthy(const lt_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case LT_F32: return ((const float *)p)[i] != 0.0f;
    case LT_F64: return ((const double *)p)[i] != 0.0;
    case LT_F16:
    case LT_BF16: return (((const uint16_t *)p)[i] & 0x7fff) != 0; /* +-0 are the only zeros */
    case LT_C64: return ((const float *)p)[2 * i] != 0.0f || ((const float *)p)[2 * i + 1] != 0.0f;
    case LT_C128: return ((const double *)p)[2 * i] != 0.0 || ((const double *)p)[2 * i + 1] != 0.0;
    case LT_STRING: {
        const char *s = ((char *const *)p)[i];
        return s && *s;
    }
    default:
        switch (lt_dtype_size(t->dtype)) { /* integers and bool: any set bit */
        case 1: return ((const uint8_t *)p)[i] != 0;
        case 2: return ((const uint16_t *)p)[i] != 0;
        case 4: return ((const uint32_t *)p)[i] != 0;
        default: return ((const uint64_t *)p)[i] != 0;
        }
    }
}

/* Index p of OneHot's indices, wrapped into [0, depth); false when it falls
 * outside [-depth, depth) (non-integer indices truncate, as a cast would).
 * Opset 9 knew no negative indices: they select nothing there. */
static bool one_hot_index(const lt_tensor *ind, int64_t p, int64_t depth, bool neg, int64_t *x)
{
    if (lt_dtype_is_float(ind->dtype)) {
        double v = lt_tensor_get_f64(ind, p);
        if (!(v > -9.0e18 && v < 9.0e18))
            return false;
        *x = (int64_t)v;
    } else {
        *x = lt_ix_get(ind, p);
    }
    if (*x < 0 && !neg)
        return false;
    return lt_ix_wrap(x, depth);
}

/* ---- OneHot: y[..., d, ...] = on where d == wrapped index, else off ---- */
static lt_status k_one_hot(lt_kctx *k)
{
    const lt_tensor *ind = lt_k_in(k, 0), *dep = lt_k_in(k, 1), *val = lt_k_in(k, 2);
    if (!ind || !dep || !val)
        return lt_k_fail(k, LT_ERR_INVALID, "needs indices, depth and values tensors");
    if (dep->numel != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "depth must hold exactly one element, has %lld", (long long)dep->numel);
    if (val->numel != 2)
        return lt_k_fail(k, LT_ERR_INVALID, "values must hold [off_value, on_value], has %lld elements",
                         (long long)val->numel);
    if (ind->dtype == LT_STRING || dep->dtype == LT_STRING)
        return lt_k_fail(k, LT_ERR_INVALID, "indices and depth must be numeric");
    /* non-integer depth is cast to int64 (truncation), as the spec says */
    int64_t depth;
    if (lt_dtype_is_float(dep->dtype)) {
        double dv = lt_tensor_get_f64(dep, 0);
        if (!(dv >= 0 && dv < 9.0e18))
            return lt_k_fail(k, LT_ERR_RUNTIME, "depth %g is negative or too large", dv);
        depth = (int64_t)dv;
    } else {
        depth = lt_tensor_get_i64(dep, 0);
    }
    if (depth < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "depth %lld is negative", (long long)depth);
    int r = ind->rank + 1, axis;
    if (r > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, LT_MAX_RANK);
    int64_t a = lt_attr_int(k->node, "axis", -1);
    if (!lt_ix_axis(a, r, &axis))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for output rank %d", (long long)a, r);
    int64_t od[LT_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++)
        od[d] = d == axis ? depth : ind->dims[j++];
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, val->dtype, r, od, &y);
    if (s != LT_OK)
        return s;
    int64_t inner = lt_ix_prod(ind->dims, axis, ind->rank);
    size_t es = lt_dtype_size(val->dtype);
    bool neg = k->node->opset >= 11;
    /* off everywhere, then one on per in-range index; out-of-range indices
     * leave their column all off (spec) */
#define ONE_HOT(T)                                                                                      \
    {                                                                                                   \
        const T *v = val->data;                                                                         \
        T off = v[0], on = v[1], *yd = y->data;                                                         \
        int64_t n = y->numel;                                                                           \
        _Pragma("omp parallel for if (n > LT_IX_PAR_MIN)") for (int64_t i = 0; i < n; i++) yd[i] = off; \
        for (int64_t p = 0; p < ind->numel; p++) {                                                      \
            int64_t x;                                                                                  \
            if (!one_hot_index(ind, p, depth, neg, &x))                                                      \
                continue;                                                                               \
            int64_t o = p / inner, i = p % inner;                                                       \
            yd[(o * depth + x) * inner + i] = on;                                                       \
        }                                                                                               \
    }
    LT_IX_BY_SIZE(k, es, ONE_HOT)
#undef ONE_HOT
    return LT_OK;
}

/* ---- Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle ---- */
static lt_status k_trilu(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *kt = lt_k_in(k, 1);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_INVALID, "input must have rank >= 2, has %d", x->rank);
    int64_t kv = 0;
    if (kt) {
        if (kt->numel != 1 || !(lt_dtype_is_int(kt->dtype)))
            return lt_k_fail(k, LT_ERR_INVALID, "k must be an integer scalar");
        kv = lt_tensor_get_i64(kt, 0);
    }
    bool upper = lt_attr_int(k->node, "upper", 1) != 0;
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    int64_t n = x->dims[x->rank - 2], m = x->dims[x->rank - 1], rows = lt_ix_prod(x->dims, 0, x->rank - 1);
    /* clamp k so that i + k cannot overflow; beyond +-(m+n) nothing changes */
    if (kv > m + 1)
        kv = m + 1;
    if (kv < -n - 1)
        kv = -n - 1;
    size_t es = lt_dtype_size(x->dtype);
    const char *xd = x->data;
    char *yd = y->data;
#pragma omp parallel for if (x->numel > LT_IX_PAR_MIN)
    for (int64_t t = 0; t < rows; t++) {
        int64_t i = t % (n ? n : 1), lo, hi; /* kept columns [lo, hi) */
        if (upper) {
            lo = i + kv < 0 ? 0 : (i + kv > m ? m : i + kv);
            hi = m;
        } else {
            lo = 0;
            hi = i + kv + 1 < 0 ? 0 : (i + kv + 1 > m ? m : i + kv + 1);
        }
        size_t row = (size_t)t * m * es;
        memset(yd + row, 0, (size_t)lo * es);
        memcpy(yd + row + lo * es, xd + row + lo * es, (size_t)(hi - lo) * es);
        memset(yd + row + hi * es, 0, (size_t)(m - hi) * es);
    }
    return LT_OK;
}

/* ---- Compress: keep the slices (or, without axis, the flat elements)
 * whose condition is true; a condition shorter than the axis drops the rest ---- */
static lt_status k_compress(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *c = lt_k_in(k, 1);
    if (!x || !c)
        return lt_k_fail(k, LT_ERR_INVALID, "needs input and condition tensors");
    if (c->rank != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "condition must be 1-D, has rank %d", c->rank);
    const lt_attr *aa = lt_attr_find(k->node, "axis");
    int axis = -1;
    int64_t n = x->numel, inner = 1;
    if (aa) {
        if (!lt_ix_axis(aa->i, x->rank, &axis))
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)aa->i, x->rank);
        n = x->dims[axis];
        inner = lt_ix_prod(x->dims, axis + 1, x->rank);
    }
    int64_t *sel = lt_ix_scratch(k, c->numel < n ? c->numel : n, sizeof *sel), cnt = 0;
    if (!sel)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < c->numel; j++) {
        if (!truthy(c, j))
            continue;
        if (j >= n)
            return lt_k_fail(k, LT_ERR_RUNTIME, "condition is true at %lld, beyond the %s size %lld", (long long)j,
                             aa ? "axis" : "input", (long long)n);
        sel[cnt++] = j;
    }
    int64_t od[LT_MAX_RANK];
    int r = 1;
    if (aa) {
        r = x->rank;
        for (int d = 0; d < r; d++)
            od[d] = d == axis ? cnt : x->dims[d];
    } else {
        od[0] = cnt;
    }
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, x->dtype, r, od, &y);
    if (s != LT_OK)
        return s;
    int64_t outer = aa ? lt_ix_prod(x->dims, 0, axis) : 1;
    size_t es = lt_dtype_size(x->dtype), row = (size_t)inner * es;
    const char *xd = x->data;
    char *yd = y->data;
#pragma omp parallel for if (y->numel > LT_IX_PAR_MIN)
    for (int64_t t = 0; t < outer * cnt; t++) {
        int64_t o = t / cnt, j = sel[t % cnt];
        memcpy(yd + (size_t)t * row, xd + (size_t)(o * n + j) * row, row);
    }
    return LT_OK;
}

/* ---- NonZero: int64 [rank, count] coordinates in row-major order ---- */
static lt_status k_non_zero(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
    int64_t cnt = 0;
    if (x->dtype == LT_F32) {
        const float *xd = x->data;
#pragma omp parallel for reduction(+ : cnt) if (x->numel > LT_IX_PAR_MIN)
        for (int64_t i = 0; i < x->numel; i++)
            cnt += xd[i] != 0.0f;
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            cnt += truthy(x, i);
    }
    /* a scalar reads as a one-element vector (numpy's nonzero does the same) */
    int r = x->rank ? x->rank : 1;
    int64_t od[2] = {r, cnt};
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, LT_I64, 2, od, &y);
    if (s != LT_OK)
        return s;
    int64_t *yd = y->data, c[LT_MAX_RANK] = {0}, j = 0;
    for (int64_t i = 0; i < x->numel && j < cnt; i++) {
        if (truthy(x, i)) {
            for (int d = 0; d < r; d++)
                yd[d * cnt + j] = c[d];
            j++;
        }
        for (int d = x->rank - 1; d >= 0; d--) { /* advance the coordinate */
            if (++c[d] < x->dims[d])
                break;
            c[d] = 0;
        }
    }
    return LT_OK;
}

void lt_cpu_register_index_select(lt_kernel_fn *tab)
{
    tab[LT_OP_ONE_HOT] = k_one_hot;
    tab[LT_OP_TRILU] = k_trilu;
    tab[LT_OP_COMPRESS] = k_compress;
    tab[LT_OP_NON_ZERO] = k_non_zero;
}
