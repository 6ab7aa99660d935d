/* CPU kernels: index family. This file holds the gathers (Gather,
 * GatherElements, GatherND) and the family registrar; scatters, selections,
 * Unique and the random ops live in index_*.c. */
#include "index_util.h"

static lt_status need_inputs(lt_kctx *k, int n)
{
    for (int i = 0; i < n; i++)
        if (!lt_k_in(k, i))
            return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing or not a tensor", i);
    return LT_OK;
}

static lt_status check_index_type(lt_kctx *k, const lt_tensor *ind)
{
    if (!lt_ix_is_index_type(ind->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be int32 or int64, got %s", lt_dtype_name(ind->dtype));
    return LT_OK;
}

/* ---- Gather: y[o, j..., i] = x[o, idx[j...], i] ---- */
static lt_status k_gather(lt_kctx *k)
{
    lt_status s = need_inputs(k, 2);
    if (s != LT_OK)
        return s;
    const lt_tensor *x = lt_k_in(k, 0), *ind = lt_k_in(k, 1);
    if ((s = check_index_type(k, ind)) != LT_OK)
        return s;
    int axis = 0, orank = 0;
    int64_t od[LT_MAX_RANK];
    if ((s = lt_ix_gather_shape(k, x, ind, "output", &axis, &orank, od)) != LT_OK)
        return s;

    int64_t outer = lt_ix_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = lt_ix_prod(x->dims, axis + 1, x->rank), nidx = ind->numel;
    int64_t *idx = lt_ix_scratch(k, nidx, sizeof *idx);
    if (!idx)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld indices", (long long)nidx);
    for (int64_t j = 0; j < nidx; j++) {
        int64_t v = lt_ix_get(ind, j);
        idx[j] = v;
        if (!lt_ix_wrap(&idx[j], n))
            return lt_k_fail(k, LT_ERR_INVALID,
                             "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                             (long long)v, (long long)j, axis, (long long)n);
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, orank, od, &y)) != LT_OK)
        return s;
    size_t es = lt_dtype_size(x->dtype);
    int64_t rows = outer * nidx;
    bool par = rows * inner > LT_IX_PAR_MIN;
    /* small gathers (a loop body's row or two) stay out of OpenMP: even a
     * region its if clause keeps on one thread costs a call into the runtime */
    if (inner == 1) {
#define GATHER1(T)                                                                                      \
    {                                                                                                   \
        const T *xs = x->data;                                                                          \
        T *ys = y->data;                                                                                \
        if (!par)                                                                                       \
            for (int64_t t = 0; t < rows; t++)                                                          \
                ys[t] = xs[(t / nidx) * n + idx[t % nidx]];                                             \
        else                                                                                            \
            _Pragma("omp parallel for") for (int64_t t = 0; t < rows; t++) ys[t] =                      \
                xs[(t / nidx) * n + idx[t % nidx]];                                                     \
    }
        LT_IX_BY_SIZE(k, es, GATHER1)
#undef GATHER1
        return LT_OK;
    }
    size_t row = (size_t)inner * es;
    const char *xs = x->data;
    char *ys = y->data;
    if (!par) {
        for (int64_t t = 0; t < rows; t++)
            memcpy(ys + (size_t)t * row, xs + (size_t)((t / nidx) * n + idx[t % nidx]) * row, row);
        return LT_OK;
    }
#pragma omp parallel for
    for (int64_t t = 0; t < rows; t++)
        memcpy(ys + (size_t)t * row, xs + (size_t)((t / nidx) * n + idx[t % nidx]) * row, row);
    return LT_OK;
}

/* ---- GatherElements: y[c] = x[c with c[axis] replaced by idx[c]] ---- */
static lt_status k_gather_elements(lt_kctx *k)
{
    lt_status s = need_inputs(k, 2);
    if (s != LT_OK)
        return s;
    const lt_tensor *x = lt_k_in(k, 0), *ind = lt_k_in(k, 1);
    if ((s = check_index_type(k, ind)) != LT_OK)
        return s;
    if (x->rank < 1 || ind->rank != x->rank)
        return lt_k_fail(k, LT_ERR_INVALID, "data (rank %d) and indices (rank %d) must have the same rank >= 1",
                         x->rank, ind->rank);
    int axis, r = x->rank;
    int64_t a = lt_attr_int(k->node, "axis", 0);
    if (!lt_ix_axis(a, r, &axis))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, r);
    bool same = true;
    for (int d = 0; d < r; d++) {
        if (d != axis && ind->dims[d] > x->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "indices dim %d (%lld) exceeds data dim %d (%lld)", d,
                             (long long)ind->dims[d], d, (long long)x->dims[d]);
        if (d > axis && ind->dims[d] != x->dims[d])
            same = false;
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, r, ind->dims, &y)) != LT_OK)
        return s;
    int64_t xs[LT_MAX_RANK]; /* data strides */
    xs[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--)
        xs[d] = xs[d + 1] * x->dims[d + 1];
    int64_t na = ind->dims[axis], inner = lt_ix_prod(ind->dims, axis + 1, r);
    int64_t rows = lt_ix_prod(ind->dims, 0, axis + 1), n = x->dims[axis], sa = xs[axis];
    /* data offsets of the trailing coordinates, when indices are narrower there */
    int64_t *inoff = NULL;
    if (!same) {
        if (!(inoff = lt_ix_scratch(k, inner, sizeof *inoff)))
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < inner; i++) {
            int64_t rem = i, off = 0;
            for (int d = r - 1; d > axis; d--) {
                off += (rem % ind->dims[d]) * xs[d];
                rem /= ind->dims[d];
            }
            inoff[i] = off;
        }
    }
    lt_ix_bad bad = {-1, 0, 0, 0};
    bool par = ind->numel > LT_IX_PAR_MIN;
    size_t es = lt_dtype_size(x->dtype);
#define GATHER_EL(T)                                                                                    \
    {                                                                                                   \
        const T *xd = x->data;                                                                          \
        T *yd = y->data;                                                                                \
        _Pragma("omp parallel for if (par)") for (int64_t t = 0; t < rows; t++)                         \
        {                                                                                               \
            int64_t o = t / na, base = 0, rem = o;                                                      \
            for (int d = axis - 1; d >= 0; d--) {                                                       \
                base += (rem % ind->dims[d]) * xs[d];                                                   \
                rem /= ind->dims[d];                                                                    \
            }                                                                                           \
            for (int64_t i = 0; i < inner; i++) {                                                       \
                int64_t p = t * inner + i, v = lt_ix_get(ind, p), w = v;                                \
                if (!lt_ix_wrap(&w, n)) {                                                               \
                    lt_ix_bad_note(&bad, p, v, n, axis);                                                \
                    continue;                                                                           \
                }                                                                                       \
                yd[p] = xd[base + w * sa + (inoff ? inoff[i] : i)];                                     \
            }                                                                                           \
        }                                                                                               \
    }
    LT_IX_BY_SIZE(k, es, GATHER_EL)
#undef GATHER_EL
    if (bad.pos >= 0)
        return lt_ix_bad_fail(k, &bad);
    return LT_OK;
}

/* ---- GatherND: index tuples of length kk select slices of x ---- */
static lt_status k_gather_nd(lt_kctx *k)
{
    lt_status s = need_inputs(k, 2);
    if (s != LT_OK)
        return s;
    const lt_tensor *x = lt_k_in(k, 0), *ind = lt_k_in(k, 1);
    if ((s = check_index_type(k, ind)) != LT_OK)
        return s;
    int r = x->rank, q = ind->rank, orank = 0;
    int64_t b = 0, kk = 0, od[LT_MAX_RANK];
    if ((s = lt_ix_gather_nd_shape(k, x, ind, "output", &b, &kk, &orank, od)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, orank, od, &y)) != LT_OK)
        return s;

    int64_t strides[LT_MAX_RANK];
    for (int j = 0; j < kk; j++)
        strides[j] = lt_ix_prod(x->dims, (int)b + j + 1, r);
    int64_t slice = lt_ix_prod(x->dims, (int)(b + kk), r), bstride = lt_ix_prod(x->dims, (int)b, r);
    int64_t nt = lt_ix_prod(ind->dims, (int)b, q - 1), total = lt_ix_prod(ind->dims, 0, q - 1);
    size_t es = lt_dtype_size(x->dtype), row = (size_t)slice * es;
    const char *xd = x->data;
    char *yd = y->data;
    lt_ix_bad bad = {-1, 0, 0, 0};
#define GATHER_ND_TUPLE(t)                                                                              \
    {                                                                                                   \
        int64_t off = ((t) / (nt ? nt : 1)) * bstride;                                                  \
        bool ok = true;                                                                                 \
        for (int j = 0; j < kk && ok; j++) {                                                            \
            int64_t v = lt_ix_get(ind, (t) * kk + j), w = v;                                            \
            if (!lt_ix_wrap(&w, x->dims[b + j])) {                                                      \
                lt_ix_bad_note(&bad, (t) * kk + j, v, x->dims[b + j], (int)b + j);                      \
                ok = false;                                                                             \
            }                                                                                           \
            off += w * strides[j];                                                                      \
        }                                                                                               \
        if (ok)                                                                                         \
            memcpy(yd + (size_t)(t) * row, xd + (size_t)off * es, row);                                 \
    }
    /* a small one (a loop body's row) stays out of OpenMP, as Gather's */
    if (total * slice <= LT_IX_PAR_MIN) {
        for (int64_t t = 0; t < total; t++)
            GATHER_ND_TUPLE(t)
    } else {
#pragma omp parallel for
        for (int64_t t = 0; t < total; t++)
            GATHER_ND_TUPLE(t)
    }
#undef GATHER_ND_TUPLE
    if (bad.pos >= 0)
        return lt_ix_bad_fail(k, &bad);
    return LT_OK;
}

void lt_cpu_register_index(lt_kernel_fn *tab)
{
    tab[LT_OP_GATHER] = k_gather;
    tab[LT_OP_GATHER_ELEMENTS] = k_gather_elements;
    tab[LT_OP_GATHER_ND] = k_gather_nd;
    lt_cpu_register_index_scatter(tab);
    lt_cpu_register_index_select(tab);
    lt_cpu_register_index_unique(tab);
    lt_cpu_register_index_random(tab);
}
