/* Shape inference rules: index family (gathers, scatters, OneHot, Trilu,
 * Compress, NonZero, Unique, random generators). */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

static bool known_tensor(const lt_type *t)
{
    return t && t->kind == LT_KIND_TENSOR && t->rank >= 0;
}

static void set_out(lt_node *n, int i, const lt_type *t)
{
    if (i < n->nout && n->out[i])
        n->out[i]->type = *t;
}

static bool norm_axis(int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

static lt_status check_indices(lt_infer_ctx *c, lt_node *n, const lt_type *ind)
{
    if (ind && ind->kind == LT_KIND_TENSOR && ind->dtype != LT_UNDEFINED && ind->dtype != LT_I32 &&
        ind->dtype != LT_I64)
        return lt_infer_fail(c, n, "indices must be int32 or int64, got %s", lt_dtype_name(ind->dtype));
    return LT_OK;
}

static lt_status infer_gather(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *ind = in_type(n, 1);
    if (!x)
        return LT_OK;
    lt_status s = check_indices(c, n, ind);
    if (s != LT_OK)
        return s;
    lt_type t;
    lt_type_unknown(&t, x->dtype, -1);
    if (known_tensor(x) && known_tensor(ind)) {
        int axis;
        int64_t a = lt_attr_int(n, "axis", 0);
        if (!norm_axis(a, x->rank, &axis))
            return lt_infer_fail(c, n, "axis %lld is out of range for data of rank %d", (long long)a, x->rank);
        int r = x->rank - 1 + ind->rank;
        if (r <= LT_MAX_RANK) {
            t.rank = r;
            int o = 0;
            for (int d = 0; d < axis; d++)
                t.dims[o++] = x->dims[d];
            for (int d = 0; d < ind->rank; d++)
                t.dims[o++] = ind->dims[d];
            for (int d = axis + 1; d < x->rank; d++)
                t.dims[o++] = x->dims[d];
        }
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_gather_elements(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *ind = in_type(n, 1);
    if (!x)
        return LT_OK;
    lt_status s = check_indices(c, n, ind);
    if (s != LT_OK)
        return s;
    lt_type t;
    lt_type_unknown(&t, x->dtype, -1);
    if (known_tensor(ind)) {
        t = *ind;
        t.dtype = x->dtype;
    }
    if (known_tensor(x) && known_tensor(ind) && x->rank != ind->rank)
        return lt_infer_fail(c, n, "data (rank %d) and indices (rank %d) must have the same rank", x->rank,
                             ind->rank);
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_gather_nd(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *ind = in_type(n, 1);
    if (!x)
        return LT_OK;
    lt_status s = check_indices(c, n, ind);
    if (s != LT_OK)
        return s;
    lt_type t;
    lt_type_unknown(&t, x->dtype, -1);
    int64_t b = lt_attr_int(n, "batch_dims", 0);
    if (known_tensor(x) && known_tensor(ind) && ind->rank >= 1) {
        const lt_dim *last = &ind->dims[ind->rank - 1];
        if (last->sym < 0 && last->v >= 0) {
            int64_t k = last->v;
            if (b < 0 || b >= ind->rank || k < 1 || k > x->rank - b)
                return lt_infer_fail(c, n, "indices' last dim %lld does not fit data of rank %d with batch_dims %lld",
                                     (long long)k, x->rank, (long long)b);
            int r = ind->rank - 1 + x->rank - (int)b - (int)k;
            if (r <= LT_MAX_RANK) {
                t.rank = r;
                int o = 0;
                for (int d = 0; d < ind->rank - 1; d++)
                    t.dims[o++] = ind->dims[d];
                for (int d = (int)(b + k); d < x->rank; d++)
                    t.dims[o++] = x->dims[d];
            }
        }
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_scatter(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = check_indices(c, n, in_type(n, 1));
    if (s != LT_OK)
        return s;
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

static lt_status infer_same(lt_infer_ctx *c, lt_node *n)
{
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

static lt_status infer_one_hot(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *ind = in_type(n, 0), *val = in_type(n, 2);
    lt_type t;
    lt_type_unknown(&t, val ? val->dtype : LT_UNDEFINED, -1);
    if (known_tensor(ind) && ind->rank + 1 <= LT_MAX_RANK) {
        int r = ind->rank + 1, axis;
        int64_t a = lt_attr_int(n, "axis", -1);
        if (!norm_axis(a, r, &axis))
            return lt_infer_fail(c, n, "axis %lld is out of range for output rank %d", (long long)a, r);
        t.rank = r;
        for (int d = 0, j = 0; d < r; d++)
            if (d != axis)
                t.dims[d] = ind->dims[j++];
        const lt_tensor *dep = n->nin > 1 ? lt_infer_const(c, n->in[1]) : NULL;
        if (dep && dep->numel == 1 && dep->dtype != LT_STRING) {
            double v;
            switch (dep->dtype) { /* the IR layer has no element accessors: read the common types */
            case LT_F32: v = ((const float *)dep->data)[0]; break;
            case LT_F64: v = ((const double *)dep->data)[0]; break;
            case LT_I32: v = ((const int32_t *)dep->data)[0]; break;
            case LT_I64: v = (double)((const int64_t *)dep->data)[0]; break;
            default: v = -1; break;
            }
            if (v >= 0 && v < 9.0e18)
                t.dims[axis].v = (int64_t)v;
        }
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_compress(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    lt_type t;
    lt_type_unknown(&t, x->dtype, 1);
    const lt_attr *aa = lt_attr_find(n, "axis");
    if (aa) {
        t.rank = -1;
        if (known_tensor(x)) {
            int axis;
            if (!norm_axis(aa->i, x->rank, &axis))
                return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)aa->i, x->rank);
            t = *x;
            t.dims[axis] = (lt_dim){-1, -1};
        }
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_non_zero(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type t;
    lt_type_unknown(&t, LT_I64, 2);
    if (known_tensor(x))
        t.dims[0].v = x->rank ? x->rank : 1;
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_unique(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    lt_type y, idx;
    lt_type_unknown(&y, x->dtype, 1);
    lt_type_unknown(&idx, LT_I64, 1);
    const lt_attr *aa = lt_attr_find(n, "axis");
    lt_type inv = idx;
    if (aa) {
        y.rank = -1;
        if (known_tensor(x)) {
            int axis;
            if (!norm_axis(aa->i, x->rank, &axis))
                return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)aa->i, x->rank);
            y = *x;
            y.dims[axis] = (lt_dim){-1, -1};
            inv.dims[0] = x->dims[axis];
        }
    } else if (known_tensor(x)) {
        int64_t numel = 1;
        for (int d = 0; d < x->rank && numel >= 0; d++)
            numel = x->dims[d].sym < 0 && x->dims[d].v >= 0 ? numel * x->dims[d].v : -1;
        if (x->rank == 1)
            inv.dims[0] = x->dims[0];
        else if (numel >= 0)
            inv.dims[0].v = numel;
    }
    set_out(n, 0, &y);
    set_out(n, 1, &idx);
    set_out(n, 2, &inv);
    set_out(n, 3, &idx);
    return LT_OK;
}

/* dtype attribute of the random ops, else dflt */
static lt_dtype attr_dtype(const lt_node *n, lt_dtype dflt)
{
    const lt_attr *a = lt_attr_find(n, "dtype");
    return a ? (lt_dtype)a->i : dflt;
}

static lt_status infer_random(lt_infer_ctx *c, lt_node *n)
{
    int len;
    const int64_t *sh = lt_attr_ints(n, "shape", &len);
    lt_type t;
    lt_type_unknown(&t, attr_dtype(n, LT_F32), -1);
    if (sh && len <= LT_MAX_RANK) {
        for (int i = 0; i < len; i++)
            if (sh[i] < 0)
                return lt_infer_fail(c, n, "shape[%d] is negative (%lld)", i, (long long)sh[i]);
        lt_type_tensor(&t, t.dtype, len, sh);
    }
    set_out(n, 0, &t);
    return LT_OK;
}

/* RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape */
static lt_status infer_random_like(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    lt_type t = *x;
    t.kind = LT_KIND_TENSOR;
    t.dtype = attr_dtype(n, x->dtype);
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status infer_multinomial(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type t;
    lt_type_unknown(&t, attr_dtype(n, LT_I32), 2);
    if (known_tensor(x)) {
        if (x->rank != 2)
            return lt_infer_fail(c, n, "input must have rank 2, has %d", x->rank);
        t.dims[0] = x->dims[0];
    }
    int64_t ss = lt_attr_int(n, "sample_size", 1);
    if (ss >= 0)
        t.dims[1].v = ss;
    set_out(n, 0, &t);
    return LT_OK;
}

void lt_infer_register_index(lt_infer_fn *tab)
{
    tab[LT_OP_GATHER] = infer_gather;
    tab[LT_OP_GATHER_ELEMENTS] = infer_gather_elements;
    tab[LT_OP_GATHER_ND] = infer_gather_nd;
    tab[LT_OP_SCATTER] = infer_scatter;
    tab[LT_OP_SCATTER_ELEMENTS] = infer_scatter;
    tab[LT_OP_SCATTER_ND] = infer_scatter;
    tab[LT_OP_ONE_HOT] = infer_one_hot;
    tab[LT_OP_TRILU] = infer_same;
    tab[LT_OP_COMPRESS] = infer_compress;
    tab[LT_OP_NON_ZERO] = infer_non_zero;
    tab[LT_OP_UNIQUE] = infer_unique;
    tab[LT_OP_RANDOM_NORMAL] = infer_random;
    tab[LT_OP_RANDOM_UNIFORM] = infer_random;
    tab[LT_OP_RANDOM_NORMAL_LIKE] = infer_random_like;
    tab[LT_OP_RANDOM_UNIFORM_LIKE] = infer_random_like;
    tab[LT_OP_BERNOULLI] = infer_random_like;
    tab[LT_OP_MULTINOMIAL] = infer_multinomial;
}
