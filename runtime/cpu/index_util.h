/* Helpers private to the index family's CPU kernels (runtime/cpu/index*.c):
 * axis normalization, index reads with bounds checks, size-dispatched copies. */
#ifndef LT_CPU_INDEX_UTIL_H
#define LT_CPU_INDEX_UTIL_H

#include "../runtime.h"
#include "par.h"
#include <string.h>

/* Work (elements) below which a loop is not worth an OpenMP team. */
#define LT_IX_PAR_MIN LT_PAR_ELEMS

/* A 16-byte element (complex128) moved as one unit. */
typedef struct {
    uint64_t lo, hi;
} lt_ix_u128;

/* Runs MACRO(T) with T the unsigned type of an es-byte element; elements are
 * only moved, never interpreted, so one loop serves every dtype of that size
 * (strings included: they are pointers owned by their producer). */
#define LT_IX_BY_SIZE(k, es, MACRO)                                                                   \
    switch (es) {                                                                                    \
    case 1: MACRO(uint8_t); break;                                                                   \
    case 2: MACRO(uint16_t); break;                                                                  \
    case 4: MACRO(uint32_t); break;                                                                  \
    case 8: MACRO(uint64_t); break;                                                                  \
    case 16: MACRO(lt_ix_u128); break;                                                               \
    default: return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element size %zu is not supported", (size_t)(es)); \
    }

/* Normalizes axis into [0, rank); false when out of range. */
static inline bool lt_ix_axis(int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* Index element i of an integer tensor (int32/int64 fast, any type slow). */
static inline int64_t lt_ix_get(const lt_tensor *t, int64_t i)
{
    if (t->dtype == LT_I64)
        return ((const int64_t *)t->data)[i];
    if (t->dtype == LT_I32)
        return ((const int32_t *)t->data)[i];
    return lt_tensor_get_i64(t, i);
}

static inline bool lt_ix_is_index_type(lt_dtype t) { return t == LT_I32 || t == LT_I64; }

/* v wrapped once if negative; false when it still falls outside [0, bound). */
static inline bool lt_ix_wrap(int64_t *v, int64_t bound)
{
    int64_t x = *v < 0 ? *v + bound : *v;
    if (x < 0 || x >= bound)
        return false;
    *v = x;
    return true;
}

/* The first out-of-range index met by a (possibly parallel) loop: kept as
 * the one at the smallest position so the message does not depend on thread
 * timing. */
typedef struct {
    int64_t pos; /* -1: none */
    int64_t val, bound;
    int axis;
} lt_ix_bad;

static inline void lt_ix_bad_note(lt_ix_bad *b, int64_t pos, int64_t val, int64_t bound, int axis)
{
#pragma omp critical(lt_ix_bad)
    if (b->pos < 0 || pos < b->pos) {
        b->pos = pos;
        b->val = val;
        b->bound = bound;
        b->axis = axis;
    }
}

static inline lt_status lt_ix_bad_fail(lt_kctx *k, const lt_ix_bad *b)
{
    return lt_k_fail(k, LT_ERR_INVALID,
                     "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                     (long long)b->val, (long long)b->pos, b->axis, (long long)b->bound);
}

/* Product of dims[lo..hi) (caller has a valid tensor, so it cannot overflow). */
static inline int64_t lt_ix_prod(const int64_t *dims, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        p *= dims[i];
    return p;
}

/* Scratch for n elements of es bytes; NULL on overflow or OOM. */
static inline void *lt_ix_scratch(lt_kctx *k, int64_t n, size_t es)
{
    size_t bytes;
    if (n < 0 || __builtin_mul_overflow((size_t)n, es, &bytes))
        return NULL;
    return lt_k_scratch(k, bytes);
}

/* Registrars of the family's other files, called from index.c. */
/* Gather's shape rule, shared by Gather and its gradient: data's rank and
 * the axis attribute checked, *axis normalized, od[0 .. *orank) = data's
 * dims with the axis replaced by the indices' dims; `what` names the
 * gathered tensor in messages ("output", "dy"). */
static inline lt_status lt_ix_gather_shape(lt_kctx *k, const lt_tensor *x, const lt_tensor *ind, const char *what,
                                           int *axis, int *orank, int64_t *od)
{
    if (x->rank < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "data must have rank >= 1");
    int64_t a = lt_attr_int(k->node, "axis", 0);
    if (!lt_ix_axis(a, x->rank, axis))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, x->rank);
    *orank = x->rank - 1 + ind->rank;
    if (*orank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "%s rank %d exceeds %d", what, *orank, LT_MAX_RANK);
    int r = 0;
    for (int d = 0; d < *axis; d++)
        od[r++] = x->dims[d];
    for (int d = 0; d < ind->rank; d++)
        od[r++] = ind->dims[d];
    for (int d = *axis + 1; d < x->rank; d++)
        od[r++] = x->dims[d];
    return LT_OK;
}

/* GatherND's shape rule, shared by GatherND and its gradient: checks
 * batch_dims and the index tuple length, and gives the gathered shape
 * (`what` names it in the rank message). */
static inline lt_status lt_ix_gather_nd_shape(lt_kctx *k, const lt_tensor *x, const lt_tensor *ind, const char *what,
                                              int64_t *b_out, int64_t *kk_out, int *orank_out, int64_t *od)
{
    int r = x->rank, q = ind->rank;
    int64_t b = lt_attr_int(k->node, "batch_dims", 0);
    if (r < 1 || q < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r)
        return lt_k_fail(k, LT_ERR_INVALID, "batch_dims %lld must be in [0, min(rank(data), rank(indices)))",
                         (long long)b);
    int64_t kk = ind->dims[q - 1];
    if (kk < 1 || kk > r - b)
        return lt_k_fail(k, LT_ERR_INVALID, "indices' last dim %lld must be in [1, %lld]", (long long)kk,
                         (long long)(r - b));
    for (int d = 0; d < b; d++)
        if (ind->dims[d] != x->dims[d])
            return lt_k_fail(k, LT_ERR_RUNTIME, "batch dim %d differs: data %lld, indices %lld", d,
                             (long long)x->dims[d], (long long)ind->dims[d]);
    int orank = q - 1 + r - (int)b - (int)kk;
    if (orank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "%s rank %d exceeds %d", what, orank, LT_MAX_RANK);
    int o = 0;
    for (int d = 0; d < q - 1; d++)
        od[o++] = ind->dims[d];
    for (int d = (int)(b + kk); d < r; d++)
        od[o++] = x->dims[d];
    *b_out = b;
    *kk_out = kk;
    *orank_out = orank;
    return LT_OK;
}

/* ScatterND's shapes: data and indices of rank >= 1, indices' last dim kk
 * in [1, rank(data)], updates shaped indices.shape[:-1] + data.shape[kk:]. */
static inline lt_status lt_ix_scatter_nd_shape(lt_kctx *k, const lt_tensor *x, const lt_tensor *ind,
                                               const lt_tensor *u, int64_t *kk_out)
{
    int r = x->rank, q = ind->rank;
    if (r < 1 || q < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "data and indices must have rank >= 1");
    int64_t kk = ind->dims[q - 1];
    if (kk < 1 || kk > r)
        return lt_k_fail(k, LT_ERR_INVALID, "indices' last dim %lld must be in [1, %d]", (long long)kk, r);
    /* updates: indices.shape[:-1] + data.shape[kk:] */
    bool ok = u->rank == q - 1 + r - kk;
    for (int d = 0; ok && d < q - 1; d++)
        ok = u->dims[d] == ind->dims[d];
    for (int d = (int)kk; ok && d < r; d++)
        ok = u->dims[q - 1 + d - kk] == x->dims[d];
    if (!ok)
        return lt_k_fail(k, LT_ERR_RUNTIME, "updates must have shape indices.shape[:-1] + data.shape[%lld:]",
                         (long long)kk);
    *kk_out = kk;
    return LT_OK;
}

void lt_cpu_register_index_scatter(lt_kernel_fn *tab);
void lt_cpu_register_index_select(lt_kernel_fn *tab);
void lt_cpu_register_index_unique(lt_kernel_fn *tab);
void lt_cpu_register_index_random(lt_kernel_fn *tab);

#endif
