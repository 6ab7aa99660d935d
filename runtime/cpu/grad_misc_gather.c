/* CPU kernels: GatherGrad, GatherElementsGrad and GatherNDGrad, each
 * (dy, indices, data) -> ddata: zeros shaped like data with dy added back
 * at the positions the forward gather read (repeated indices accumulate;
 * negative indices wrap as in the forward; GatherGrad leaves the row its
 * attribute padding_idx names, if any, zero). Float32 and float64 natively,
 * float16 and bfloat16 through float32. */
#include "grad_misc_util.h"
#include "index_util.h"
#include "reduce_util.h"
#include <omp.h>
#include <string.h>

/* Positions along the innermost axis per GatherElements task. */
#define GG_BLOCK 512

/* GatherElements geometry in indices' coordinates: outer (axes before
 * axis) x na (the axis) x inner (axes after). */
typedef struct {
    int axis, r;
    int64_t outer, na, inner, sa;
    const int64_t *idims, *xs; /* indices dims, data strides */
    const int64_t *inoff;      /* data offsets of the trailing coordinates, NULL when they equal i */
} gg_el;

static int64_t gg_el_base(const gg_el *e, int64_t o)
{
    int64_t base = 0;
    for (int d = e->axis - 1; d >= 0; d--) {
        base += (o % e->idims[d]) * e->xs[d];
        o /= e->idims[d];
    }
    return base;
}

#define T float
#define RS f32
#include "grad_misc_gather_tmpl.h"
#undef T
#undef RS

#define T double
#define RS f64
#include "grad_misc_gather_tmpl.h"
#undef T
#undef RS

/* Shared checks: dy float, indices int32/int64, data present. */
static lt_status gg_inputs(lt_kctx *k, const lt_tensor **dy, const lt_tensor **ind, const lt_tensor **x)
{
    lt_status s = lt_gm_need(k, 0, "dy", dy);
    if (s == LT_OK)
        s = lt_gm_need(k, 1, "indices", ind);
    if (s == LT_OK)
        s = lt_gm_need(k, 2, "data", x);
    if (s != LT_OK)
        return s;
    if (!lt_dtype_is_float((*dy)->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "dy is %s; only float types are supported",
                         lt_dtype_name((*dy)->dtype));
    if (!lt_ix_is_index_type((*ind)->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be int32 or int64, got %s", lt_dtype_name((*ind)->dtype));
    return LT_OK;
}

/* The zeroed output (data's shape, dy's type) and where to accumulate:
 * the output itself for float32/float64, else float32 scratch. */
static lt_status gg_out(lt_kctx *k, const lt_tensor *dy, const lt_tensor *x, lt_tensor **dx, void **acc,
                        const void **src)
{
    lt_status s = lt_k_out(k, 0, dy->dtype, x->rank, x->dims, dx);
    if (s != LT_OK)
        return s;
    bool native = dy->dtype == LT_F32 || dy->dtype == LT_F64;
    size_t es = dy->dtype == LT_F64 ? sizeof(double) : sizeof(float);
    *acc = native ? (*dx)->data : lt_k_scratch(k, es * (size_t)((*dx)->numel ? (*dx)->numel : 1));
    *src = native ? dy->data : (const void *)lt_red_load_f32(k, dy);
    if ((!*acc && (*dx)->numel > 0) || (!*src && dy->numel > 0))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    lt_gm_zero(*acc, es * (size_t)(*dx)->numel);
    return LT_OK;
}

static void gg_store(const lt_tensor *dy, lt_tensor *dx, const void *acc)
{
    if (dy->dtype != LT_F32 && dy->dtype != LT_F64)
        lt_red_store_f32(acc, dx);
}

static void gg_rows(const lt_tensor *dy, void *acc, const void *src, const int64_t *row, int64_t rows, int64_t inner)
{
    if (dy->dtype == LT_F64)
        gg_rows_f64(acc, src, row, rows, inner);
    else
        gg_rows_f32(acc, src, row, rows, inner);
}

/* ---- GatherGrad ---- */
static lt_status k_gather_grad(lt_kctx *k)
{
    const lt_tensor *dy, *ind, *x;
    lt_status s = gg_inputs(k, &dy, &ind, &x);
    if (s != LT_OK)
        return s;
    int axis = 0, orank = 0;
    int64_t od[LT_MAX_RANK];
    if ((s = lt_ix_gather_shape(k, x, ind, "dy", &axis, &orank, od)) != LT_OK)
        return s;
    if ((s = lt_gm_shape(k, dy, "dy", orank, od)) != LT_OK)
        return s;
    int64_t outer = lt_ix_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = lt_ix_prod(x->dims, axis + 1, x->rank), nidx = ind->numel, rows;
    if (__builtin_mul_overflow(outer, nidx, &rows))
        return lt_k_fail(k, LT_ERR_RUNTIME, "shape overflows");
    lt_tensor *dx;
    void *acc;
    const void *src;
    if ((s = gg_out(k, dy, x, &dx, &acc, &src)) != LT_OK || dy->numel == 0)
        return s;
    int64_t *row = lt_ix_scratch(k, rows, sizeof *row);
    if (!row)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld rows", (long long)rows);
    for (int64_t j = 0; j < nidx; j++) {
        int64_t v = lt_ix_get(ind, j), w = v;
        if (!lt_ix_wrap(&w, n))
            return lt_k_fail(k, LT_ERR_INVALID,
                             "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                             (long long)v, (long long)j, axis, (long long)n);
        row[j] = w;
    }
    for (int64_t o = 1; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++)
            row[o * nidx + j] = o * n + row[j];
    gg_rows(dy, acc, src, row, rows, inner);
    /* an embedding's padding row (ad/padding_rows.c) takes nothing back */
    const lt_attr *pad = lt_attr_find(k->node, "padding_idx");
    if (pad) {
        if (pad->i < 0 || pad->i >= n)
            return lt_k_fail(k, LT_ERR_INVALID, "padding_idx %lld is out of range for axis %d of size %lld",
                             (long long)pad->i, axis, (long long)n);
        size_t es = dy->dtype == LT_F64 ? sizeof(double) : sizeof(float);
        for (int64_t o = 0; o < outer; o++)
            lt_gm_zero((char *)acc + (size_t)((o * n + pad->i) * inner) * es, es * (size_t)inner);
    }
    gg_store(dy, dx, acc);
    return LT_OK;
}

/* ---- GatherElementsGrad ---- */
static lt_status k_gather_elements_grad(lt_kctx *k)
{
    const lt_tensor *dy, *ind, *x;
    lt_status s = gg_inputs(k, &dy, &ind, &x);
    if (s != LT_OK)
        return s;
    int r = x->rank, axis;
    if (r < 1 || ind->rank != r)
        return lt_k_fail(k, LT_ERR_INVALID, "data (rank %d) and indices (rank %d) must have the same rank >= 1", r,
                         ind->rank);
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
    if ((s = lt_gm_shape(k, dy, "dy", r, ind->dims)) != LT_OK)
        return s;
    lt_tensor *dx;
    void *acc;
    const void *src;
    if ((s = gg_out(k, dy, x, &dx, &acc, &src)) != LT_OK || dy->numel == 0)
        return s;
    int64_t xs[LT_MAX_RANK];
    xs[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--)
        xs[d] = xs[d + 1] * x->dims[d + 1];
    gg_el e = {axis, r, lt_ix_prod(ind->dims, 0, axis), ind->dims[axis], lt_ix_prod(ind->dims, axis + 1, r),
               xs[axis], ind->dims, xs, NULL};
    if (!same) {
        int64_t *inoff = lt_ix_scratch(k, e.inner, sizeof *inoff);
        if (!inoff)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < e.inner; i++) {
            int64_t rem = i, off = 0;
            for (int d = r - 1; d > axis; d--) {
                off += (rem % ind->dims[d]) * xs[d];
                rem /= ind->dims[d];
            }
            inoff[i] = off;
        }
        e.inoff = inoff;
    }
    int64_t n = x->dims[axis], *w = lt_ix_scratch(k, ind->numel, sizeof *w);
    if (!w)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_ix_bad bad = {-1, 0, 0, 0};
#pragma omp parallel for if (ind->numel > LT_GM_PAR_MIN)
    for (int64_t p = 0; p < ind->numel; p++) {
        int64_t v = lt_ix_get(ind, p);
        w[p] = v;
        if (!lt_ix_wrap(&w[p], n))
            lt_ix_bad_note(&bad, p, v, n, axis);
    }
    if (bad.pos >= 0)
        return lt_ix_bad_fail(k, &bad);
    if (dy->dtype == LT_F64)
        gg_elements_f64(acc, src, w, &e);
    else
        gg_elements_f32(acc, src, w, &e);
    gg_store(dy, dx, acc);
    return LT_OK;
}

/* ---- GatherNDGrad ---- */
static lt_status k_gather_nd_grad(lt_kctx *k)
{
    const lt_tensor *dy, *ind, *x;
    lt_status s = gg_inputs(k, &dy, &ind, &x);
    if (s != LT_OK)
        return s;
    int r = x->rank, q = ind->rank, orank = 0;
    int64_t b = 0, kk = 0, od[LT_MAX_RANK];
    if ((s = lt_ix_gather_nd_shape(k, x, ind, "dy", &b, &kk, &orank, od)) != LT_OK)
        return s;
    if ((s = lt_gm_shape(k, dy, "dy", orank, od)) != LT_OK)
        return s;
    lt_tensor *dx;
    void *acc;
    const void *src;
    if ((s = gg_out(k, dy, x, &dx, &acc, &src)) != LT_OK || dy->numel == 0)
        return s;
    /* index tuples become destination rows of `slice` elements */
    int64_t rstride[LT_MAX_RANK];
    for (int j = 0; j < kk; j++)
        rstride[j] = lt_ix_prod(x->dims, (int)b + j + 1, (int)(b + kk));
    int64_t slice = lt_ix_prod(x->dims, (int)(b + kk), r), brows = lt_ix_prod(x->dims, (int)b, (int)(b + kk));
    int64_t per = lt_ix_prod(ind->dims, (int)b, q - 1), total = lt_ix_prod(ind->dims, 0, q - 1);
    int64_t *row = lt_ix_scratch(k, total, sizeof *row);
    if (!row)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld rows", (long long)total);
    lt_ix_bad bad = {-1, 0, 0, 0};
#pragma omp parallel for if (total * kk > LT_GM_PAR_MIN)
    for (int64_t t = 0; t < total; t++) {
        int64_t at = (t / (per ? per : 1)) * brows;
        for (int j = 0; j < kk; j++) {
            int64_t v = lt_ix_get(ind, t * kk + j), w = v;
            if (!lt_ix_wrap(&w, x->dims[b + j])) {
                lt_ix_bad_note(&bad, t * kk + j, v, x->dims[b + j], (int)b + j);
                w = 0;
            }
            at += w * rstride[j];
        }
        row[t] = at;
    }
    if (bad.pos >= 0)
        return lt_ix_bad_fail(k, &bad);
    gg_rows(dy, acc, src, row, total, slice);
    gg_store(dy, dx, acc);
    return LT_OK;
}

void lt_cpu_register_grad_misc_gather(lt_kernel_fn *tab)
{
    tab[LT_OP_GATHER_GRAD] = k_gather_grad;
    tab[LT_OP_GATHER_ELEMENTS_GRAD] = k_gather_elements_grad;
    tab[LT_OP_GATHER_ND_GRAD] = k_gather_nd_grad;
}
