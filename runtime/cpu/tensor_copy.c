/* CPU kernels: tensor-family ops that move elements, each one strided copy
 * (or one per operand): Transpose, Concat, Split, Slice, Expand, Tile.
 * SliceGrad resolves its slice with lt_tk_slice, as Slice does. */
#include "tensor_util.h"
#include <string.h>

static lt_status k_transpose(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int r = x->rank, len;
    int64_t perm[LT_MAX_RANK], dims[LT_MAX_RANK], xs[LT_MAX_RANK], ss[LT_MAX_RANK], ds[LT_MAX_RANK];
    const int64_t *p = lt_attr_ints(k->node, "perm", &len);
    bool seen[LT_MAX_RANK] = {0};
    if (p && len != r)
        return lt_k_fail(k, LT_ERR_RUNTIME, "perm has %d entries for an input of rank %d", len, r);
    for (int i = 0; i < r; i++) {
        int a = r - 1 - i;
        if (p && !lt_tk_axis(p[i], r, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "perm[%d] = %lld is out of range", i, (long long)p[i]);
        if (seen[a])
            return lt_k_fail(k, LT_ERR_RUNTIME, "perm repeats axis %d", a);
        seen[a] = true;
        perm[i] = a;
    }
    lt_tk_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        dims[i] = x->dims[perm[i]];
        ss[i] = xs[perm[i]];
    }
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, r, dims, &y);
    if (st != LT_OK)
        return st;
    lt_tk_strides(r, dims, ds);
    lt_tk_copy(y->data, ds, x->data, ss, r, dims, lt_dtype_size(x->dtype));
    return LT_OK;
}

static lt_status k_concat(lt_kctx *k)
{
    const lt_tensor *x0 = NULL;
    for (int i = 0; i < k->nin && !x0; i++)
        x0 = lt_k_in(k, i);
    if (!x0)
        return lt_k_fail(k, LT_ERR_INVALID, "no inputs");
    int r = x0->rank, axis;
    int64_t a = lt_attr_int(k->node, "axis", INT64_MIN);
    if (a == INT64_MIN)
        return lt_k_fail(k, LT_ERR_INVALID, "the axis attribute is missing");
    if (!lt_tk_axis(a, r, &axis))
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)a, r);
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, x0->dims, sizeof dims);
    dims[axis] = 0;
    for (int i = 0; i < k->nin; i++) {
        const lt_tensor *x = lt_k_in(k, i);
        if (!x)
            continue;
        if (x->dtype != x0->dtype || x->rank != r)
            return lt_k_fail(k, LT_ERR_RUNTIME, "input %d is %s of rank %d, input 0 is %s of rank %d", i,
                             lt_dtype_name(x->dtype), x->rank, lt_dtype_name(x0->dtype), r);
        for (int d = 0; d < r; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return lt_k_fail(k, LT_ERR_RUNTIME, "input %d has size %lld on axis %d, input 0 has %lld", i,
                                 (long long)x->dims[d], d, (long long)x0->dims[d]);
        dims[axis] += x->dims[axis];
    }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x0->dtype, r, dims, &y);
    if (st != LT_OK)
        return st;
    size_t es = lt_dtype_size(x0->dtype);
    int64_t ds[LT_MAX_RANK], ss[LT_MAX_RANK], off = 0;
    lt_tk_strides(r, dims, ds);
    for (int i = 0; i < k->nin; i++) {
        const lt_tensor *x = lt_k_in(k, i);
        if (!x)
            continue;
        lt_tk_strides(r, x->dims, ss);
        lt_tk_copy((char *)y->data + (size_t)(off * ds[axis]) * es, ds, x->data, ss, r, x->dims, es);
        off += x->dims[axis];
    }
    return LT_OK;
}

/* Sizes of Split's outputs along the axis of length dim. */
static lt_status split_sizes(lt_kctx *k, int64_t dim, int64_t *sizes)
{
    int n = k->nout, len = 0;
    const lt_tensor *t = k->node->opset >= 13 || k->node->opset == 1 ? lt_k_in(k, 1) : NULL;
    if (t && t->numel == 0 && n > 0)
        t = NULL; /* an empty list gives no sizes */
    const int64_t *a = k->node->opset < 13 ? lt_attr_ints(k->node, "split", &len) : NULL;
    if (t) {
        if (!lt_dtype_is_int(t->dtype) || t->rank > 1 || t->numel != n)
            return lt_k_fail(k, LT_ERR_RUNTIME, "split must hold %d integers", n);
        for (int i = 0; i < n; i++)
            sizes[i] = lt_tensor_get_i64(t, i);
    } else if (a) {
        if (len != n)
            return lt_k_fail(k, LT_ERR_RUNTIME, "split has %d entries for %d outputs", len, n);
        memcpy(sizes, a, sizeof *a * n);
    } else {
        int64_t parts = lt_attr_int(k->node, "num_outputs", 0);
        if (parts > 0) {
            /* opset 18: chunks of ceil(dim/parts), the last one smaller */
            if (parts != n)
                return lt_k_fail(k, LT_ERR_RUNTIME, "num_outputs is %lld but the node has %d outputs",
                                 (long long)parts, n);
            int64_t chunk = (dim + parts - 1) / parts;
            for (int i = 0; i < n; i++) {
                int64_t lo = chunk * i < dim ? chunk * i : dim;
                sizes[i] = (lo + chunk < dim ? lo + chunk : dim) - lo;
            }
            return LT_OK;
        }
        if (dim % n != 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "cannot split %lld into %d equal parts", (long long)dim, n);
        for (int i = 0; i < n; i++)
            sizes[i] = dim / n;
        return LT_OK;
    }
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "split[%d] is negative", i);
        if (__builtin_add_overflow(sum, sizes[i], &sum))
            return lt_k_fail(k, LT_ERR_RUNTIME, "split sizes overflow");
    }
    if (sum != dim)
        return lt_k_fail(k, LT_ERR_RUNTIME, "split sums to %lld but the axis has %lld", (long long)sum,
                         (long long)dim);
    return LT_OK;
}

lt_status lt_tk_split_args(lt_kctx *k, const lt_tensor *x, int *axis, int64_t **sizes)
{
    if (!lt_tk_axis(lt_attr_int(k->node, "axis", 0), x->rank, axis))
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d",
                         (long long)lt_attr_int(k->node, "axis", 0), x->rank);
    *sizes = lt_k_scratch(k, sizeof **sizes * (size_t)(k->nout ? k->nout : 1));
    if (!*sizes)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    return split_sizes(k, x->dims[*axis], *sizes);
}

static lt_status k_split(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int axis;
    int64_t *sizes;
    st = lt_tk_split_args(k, x, &axis, &sizes);
    if (st != LT_OK)
        return st;
    size_t es = lt_dtype_size(x->dtype);
    int64_t xs[LT_MAX_RANK], ds[LT_MAX_RANK], dims[LT_MAX_RANK], off = 0, outer = 1;
    lt_tk_strides(x->rank, x->dims, xs);
    memcpy(dims, x->dims, sizeof dims);
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    /* every axis before the split's has length 1 (attention's q, k, v out
     * of one [3, ...] tensor): each output is a contiguous piece of x, a
     * view of x's storage, nothing copied */
    bool views = outer == 1 && x->buf && es > 0 && x->dtype != LT_STRING;
    for (int i = 0; i < k->nout; i++) {
        dims[axis] = sizes[i];
        if (views && lt_k_want(k, i)) {
            lt_value *v = lt_value_new_tensor();
            if (!v)
                return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
            lt_tensor_view(&v->t, x, x->rank, x->dims);
            v->t.dims[axis] = sizes[i];
            v->t.numel = lt_shape_numel(x->rank, v->t.dims);
            v->t.data = (char *)x->data + (size_t)(off * xs[axis]) * es;
            lt_k_out_value(k, i, v);
        } else if (lt_k_want(k, i)) {
            lt_tensor *y;
            st = lt_k_out(k, i, x->dtype, x->rank, dims, &y);
            if (st != LT_OK)
                return st;
            lt_tk_strides(x->rank, dims, ds);
            lt_tk_copy(y->data, ds, (const char *)x->data + (size_t)(off * xs[axis]) * es, xs, x->rank, dims, es);
        }
        off += sizes[i];
    }
    return LT_OK;
}

/* Slice parameters: attributes before opset 10, inputs in0..in0+3 after. */
static lt_status slice_params(lt_kctx *k, int in0, int r, int64_t *starts, int64_t *ends, int64_t *axes,
                              int64_t *steps, int *n)
{
    int ns, ne, na = -1, nst = -1;
    if (k->node->opset < 10) {
        const int64_t *s = lt_attr_ints(k->node, "starts", &ns), *e = lt_attr_ints(k->node, "ends", &ne);
        const int64_t *a = lt_attr_ints(k->node, "axes", &na);
        if (!s || !e)
            return lt_k_fail(k, LT_ERR_INVALID, "starts and ends are required");
        if (ns > LT_MAX_RANK || ne > LT_MAX_RANK || (a && na > LT_MAX_RANK))
            return lt_k_fail(k, LT_ERR_RUNTIME, "more slice entries than the input has axes");
        memcpy(starts, s, sizeof *s * ns);
        memcpy(ends, e, sizeof *e * ne);
        if (a)
            memcpy(axes, a, sizeof *a * na);
        else
            na = -1;
    } else {
        const lt_tensor *s, *e, *a = lt_k_in(k, in0 + 2), *st = lt_k_in(k, in0 + 3);
        lt_status rc = lt_tk_need(k, in0, &s);
        if (rc == LT_OK)
            rc = lt_tk_need(k, in0 + 1, &e);
        if (rc == LT_OK)
            rc = lt_tk_ints(k, s, starts, LT_MAX_RANK, &ns, "starts");
        if (rc == LT_OK)
            rc = lt_tk_ints(k, e, ends, LT_MAX_RANK, &ne, "ends");
        if (rc == LT_OK && a)
            rc = lt_tk_ints(k, a, axes, LT_MAX_RANK, &na, "axes");
        if (rc == LT_OK && st)
            rc = lt_tk_ints(k, st, steps, LT_MAX_RANK, &nst, "steps");
        if (rc != LT_OK)
            return rc;
    }
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return lt_k_fail(k, LT_ERR_RUNTIME, "starts, ends, axes and steps differ in length");
    if (na < 0)
        for (int i = 0; i < ns; i++)
            axes[i] = i;
    if (nst < 0)
        for (int i = 0; i < ns; i++)
            steps[i] = 1;
    if (ns > r)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%d slice entries for an input of rank %d", ns, r);
    *n = ns;
    return LT_OK;
}

lt_status lt_tk_slice(lt_kctx *k, const lt_tensor *x, int in0, int64_t *first, int64_t *step, int64_t *dims)
{
    int r = x->rank, n = 0;
    int64_t starts[LT_MAX_RANK], ends[LT_MAX_RANK], axes[LT_MAX_RANK], steps[LT_MAX_RANK];
    lt_status st = slice_params(k, in0, r, starts, ends, axes, steps, &n);
    if (st != LT_OK)
        return st;
    bool seen[LT_MAX_RANK] = {0};
    for (int d = 0; d < r; d++) {
        first[d] = 0;
        step[d] = 1;
        dims[d] = x->dims[d];
    }
    for (int i = 0; i < n; i++) {
        int a;
        if (!lt_tk_axis(axes[i], r, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        if (seen[a])
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is sliced twice", a);
        seen[a] = true;
        int64_t dim = x->dims[a], s = starts[i], e = ends[i], t = steps[i];
        if (t == 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "step on axis %d is 0", a);
        /* negative positions count from the end; then clamp, one past the
         * ends for the direction walked (INT64 sentinels land there too) */
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        int64_t len;
        if (t > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s - 1) / t + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            int64_t back = t == INT64_MIN ? INT64_MAX : -t;
            len = dim > 0 && s > e ? (s - e - 1) / back + 1 : 0;
        }
        first[a] = s;
        /* with at most one element the step is never taken: 1 keeps
         * stride * step from overflowing for steps like INT64_MIN */
        step[a] = len > 1 ? t : 1;
        dims[a] = len;
    }
    return LT_OK;
}

static lt_status k_slice(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int r = x->rank;
    int64_t first[LT_MAX_RANK], step[LT_MAX_RANK], dims[LT_MAX_RANK];
    if ((st = lt_tk_slice(k, x, 1, first, step, dims)) != LT_OK)
        return st;
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, r, dims, &y);
    if (st != LT_OK || y->numel == 0)
        return st;
    size_t es = lt_dtype_size(x->dtype);
    int64_t xs[LT_MAX_RANK], ss[LT_MAX_RANK], ds[LT_MAX_RANK], off = 0;
    lt_tk_strides(r, x->dims, xs);
    lt_tk_strides(r, dims, ds);
    for (int d = 0; d < r; d++) {
        off += first[d] * xs[d];
        ss[d] = xs[d] * step[d];
    }
    lt_tk_copy(y->data, ds, (const char *)x->data + (size_t)off * es, ss, r, dims, es);
    return LT_OK;
}

static lt_status k_expand(lt_kctx *k)
{
    const lt_tensor *x, *s;
    int64_t shape[LT_MAX_RANK];
    int n;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = lt_tk_need(k, 1, &s);
    if (st == LT_OK)
        st = lt_tk_ints(k, s, shape, LT_MAX_RANK, &n, "shape");
    if (st != LT_OK)
        return st;
    int r = n > x->rank ? n : x->rank;
    int64_t dims[LT_MAX_RANK], xs[LT_MAX_RANK], ss[LT_MAX_RANK], ds[LT_MAX_RANK];
    lt_tk_strides(x->rank, x->dims, xs);
    for (int i = 0; i < r; i++) {
        int ix = i - (r - x->rank), is = i - (r - n);
        int64_t dx = ix >= 0 ? x->dims[ix] : 1, dsh = is >= 0 ? shape[is] : 1;
        if (dsh < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "shape[%d] is %lld", is, (long long)dsh);
        if (dx != dsh && dx != 1 && dsh != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "cannot broadcast input dim %d of size %lld to %lld", ix,
                             (long long)dx, (long long)dsh);
        dims[i] = dx == 1 ? dsh : dx;
        ss[i] = ix >= 0 && dx != 1 ? xs[ix] : 0;
    }
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, r, dims, &y);
    if (st != LT_OK)
        return st;
    lt_tk_strides(r, dims, ds);
    lt_tk_copy(y->data, ds, x->data, ss, r, dims, lt_dtype_size(x->dtype));
    return LT_OK;
}

static lt_status k_tile(lt_kctx *k)
{
    const lt_tensor *x, *t;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = lt_tk_need(k, 1, &t);
    if (st != LT_OK)
        return st;
    int r = x->rank, n;
    int64_t reps[LT_MAX_RANK];
    if (k->node->opset < 6 && lt_k_in(k, 2)) {
        /* Tile-1: a scalar count of copies along one axis */
        int axis;
        if (t->numel != 1 || lt_k_in(k, 2)->numel != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "tiles and axis must be scalars");
        if (!lt_tk_axis(lt_tensor_get_i64(lt_k_in(k, 2), 0), r, &axis))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis is out of range for rank %d", r);
        for (int i = 0; i < r; i++)
            reps[i] = i == axis ? lt_tensor_get_i64(t, 0) : 1;
        n = r;
    } else {
        st = lt_tk_ints(k, t, reps, LT_MAX_RANK, &n, "repeats");
        if (st != LT_OK)
            return st;
    }
    if (n != r)
        return lt_k_fail(k, LT_ERR_RUNTIME, "repeats has %d entries for an input of rank %d", n, r);
    /* out viewed as [rep0, d0, rep1, d1, ...]: the rep dims read stride 0 */
    int64_t dims[LT_MAX_RANK], xs[LT_MAX_RANK], cd[LT_TK_MAX_RANK], cs[LT_TK_MAX_RANK], cds[LT_TK_MAX_RANK];
    lt_tk_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        if (reps[i] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "repeats[%d] is negative", i);
        if (__builtin_mul_overflow(x->dims[i], reps[i], &dims[i]))
            return lt_k_fail(k, LT_ERR_RUNTIME, "output dim %d overflows", i);
        cd[2 * i] = reps[i];
        cd[2 * i + 1] = x->dims[i];
        cs[2 * i] = 0;
        cs[2 * i + 1] = xs[i];
    }
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, r, dims, &y);
    if (st != LT_OK)
        return st;
    lt_tk_strides(2 * r, cd, cds);
    lt_tk_copy(y->data, cds, x->data, cs, 2 * r, cd, lt_dtype_size(x->dtype));
    return LT_OK;
}

void lt_tk_register_copy(lt_kernel_fn *tab)
{
    tab[LT_OP_TRANSPOSE] = k_transpose;
    tab[LT_OP_CONCAT] = k_concat;
    tab[LT_OP_SPLIT] = k_split;
    tab[LT_OP_SLICE] = k_slice;
    tab[LT_OP_EXPAND] = k_expand;
    tab[LT_OP_TILE] = k_tile;
}
