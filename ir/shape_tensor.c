/* Shape inference rules: tensor family. This file holds the shared helpers
 * (dim arithmetic; constant integer operands are folded in shape_values.c) and the rules of the view ops
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Size); the rules of
 * the data-moving and generating ops are in shape_tensor_ops.c. */
#include "shape_tensor_util.h"
#include <string.h>

const lt_type *lt_ti_in(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

void lt_ti_set(lt_node *n, int i, const lt_type *t)
{
    if (i < n->nout && n->out[i])
        n->out[i]->type = *t;
}

bool lt_ti_static(lt_dim d)
{
    return d.sym < 0 && d.v >= 0;
}

lt_dim lt_ti_dim(int64_t v)
{
    return (lt_dim){v < 0 ? -1 : v, -1};
}

bool lt_ti_const_f64(lt_infer_ctx *c, const lt_ival *v, double *out)
{
    const lt_tensor *t = v ? lt_infer_const(c, v) : NULL;
    if (t && t->numel == 1 && t->data) {
        switch (t->dtype) {
        case LT_F32: *out = ((const float *)t->data)[0]; return true;
        case LT_F64: *out = ((const double *)t->data)[0]; return true;
        default: break;
        }
    }
    int64_t i;
    int n;
    if (lt_ti_const_ints(c, v, &i, 1, &n) && n == 1) {
        *out = (double)i;
        return true;
    }
    return false;
}

int64_t lt_ti_len(const lt_ival *v)
{
    if (!v || v->type.kind != LT_KIND_TENSOR || v->type.rank != 1 || !lt_ti_static(v->type.dims[0]))
        return -1;
    return v->type.dims[0].v;
}

/* Product of dims [lo, hi): a constant, the one symbolic dim when all the
 * others are 1, or unknown. */
static lt_dim dims_product(const lt_type *t, int lo, int hi)
{
    int64_t p = 1;
    int nsym = 0;
    lt_dim sym = {-1, -1};
    for (int i = lo; i < hi; i++) {
        if (lt_ti_static(t->dims[i])) {
            if (__builtin_mul_overflow(p, t->dims[i].v, &p))
                return lt_ti_dim(-1);
        } else if (t->dims[i].sym >= 0) {
            nsym++;
            sym = t->dims[i];
        } else {
            return lt_ti_dim(-1);
        }
    }
    if (nsym == 0)
        return lt_ti_dim(p);
    return nsym == 1 && p == 1 ? sym : lt_ti_dim(-1);
}

/* Reshape's -1: what is left of the input's factors after the output's
 * known ones, cancelling symbols that appear on both sides. */
static lt_dim reshape_rest(const lt_type *x, const lt_dim *o, int r, int skip)
{
    int xsym[LT_MAX_RANK], nx = 0;
    int64_t xp = 1, op = 1;
    for (int i = 0; i < x->rank; i++) {
        if (lt_ti_static(x->dims[i])) {
            if (__builtin_mul_overflow(xp, x->dims[i].v, &xp))
                return lt_ti_dim(-1);
        } else if (x->dims[i].sym >= 0)
            xsym[nx++] = x->dims[i].sym;
        else
            return lt_ti_dim(-1);
    }
    for (int i = 0; i < r; i++) {
        if (i == skip)
            continue;
        if (lt_ti_static(o[i])) {
            if (__builtin_mul_overflow(op, o[i].v, &op))
                return lt_ti_dim(-1);
        } else if (o[i].sym >= 0) {
            int j = 0;
            while (j < nx && xsym[j] != o[i].sym)
                j++;
            if (j == nx)
                return lt_ti_dim(-1);
            xsym[j] = xsym[--nx];
        } else {
            return lt_ti_dim(-1);
        }
    }
    if (op == 0 || xp % op != 0)
        return lt_ti_dim(-1);
    if (nx == 0)
        return lt_ti_dim(xp / op);
    return nx == 1 && xp == op ? (lt_dim){-1, xsym[0]} : lt_ti_dim(-1);
}

static lt_status r_reshape(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, x ? x->dtype : LT_UNDEFINED, -1);
    int64_t s[LT_MAX_RANK];
    int len = 0;
    bool have;
    if (n->opset < 5 && !lt_ti_in(n, 1)) {
        const int64_t *a = lt_attr_ints(n, "shape", &len);
        have = a && len <= LT_MAX_RANK;
        if (have)
            memcpy(s, a, sizeof *a * len);
    } else {
        have = n->nin > 1 && lt_ti_const_ints(c, n->in[1], s, LT_MAX_RANK, &len);
    }
    lt_ti_val sv[LT_MAX_RANK];
    if (!have && n->opset >= 5 && n->nin > 1 && lt_ti_values(c, n->in[1], sv, LT_MAX_RANK, &len)) {
        /* a computed shape: its symbolic dims carry over, its unknown elements
         * (which could be 0 or -1) leave the rank alone known */
        bool copy0 = !lt_attr_int(n, "allowzero", 0), xr = x && x->kind == LT_KIND_TENSOR && x->rank >= 0;
        int rest = -1, guesses = 0;
        o.rank = len;
        for (int i = 0; i < len; i++) {
            o.dims[i] = lt_ti_dim(-1);
            if (!sv[i].known)
                guesses++;
            else if (sv[i].sym >= 0)
                o.dims[i] = (lt_dim){-1, sv[i].sym};
            else if (sv[i].v == 0 && copy0)
                o.dims[i] = xr && i < x->rank ? x->dims[i] : lt_ti_dim(-1);
            else if (sv[i].v == -1)
                rest = i;
            else
                o.dims[i] = lt_ti_dim(sv[i].v);
        }
        if (rest >= 0 && !guesses && xr)
            o.dims[rest] = reshape_rest(x, o.dims, len, rest);
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    if (!have) {
        int64_t l = n->nin > 1 ? lt_ti_len(n->in[1]) : -1;
        if (l >= 0 && l <= LT_MAX_RANK)
            o.rank = (int)l;
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    bool allowzero = lt_attr_int(n, "allowzero", 0) != 0;
    bool xr = x && x->kind == LT_KIND_TENSOR && x->rank >= 0;
    int infer = -1;
    o.rank = len;
    for (int i = 0; i < len; i++) {
        if (s[i] == 0 && !allowzero) {
            if (xr && i >= x->rank)
                return lt_infer_fail(c, n, "shape[%d] is 0 (copy) but the input has rank %d", i, x->rank);
            o.dims[i] = xr ? x->dims[i] : lt_ti_dim(-1);
        } else if (s[i] == -1) {
            if (infer >= 0)
                return lt_infer_fail(c, n, "shape has more than one -1");
            infer = i;
        } else if (s[i] < -1) {
            return lt_infer_fail(c, n, "shape[%d] is %lld", i, (long long)s[i]);
        } else {
            o.dims[i] = lt_ti_dim(s[i]);
        }
    }
    if (infer >= 0)
        o.dims[infer] = xr ? reshape_rest(x, o.dims, len, infer) : lt_ti_dim(-1);
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_flatten(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, x ? x->dtype : LT_UNDEFINED, 2);
    if (x && x->kind == LT_KIND_TENSOR && x->rank >= 0) {
        int64_t axis = lt_attr_int(n, "axis", 1);
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis > x->rank)
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)lt_attr_int(n, "axis", 1),
                                 x->rank);
        o.dims[0] = dims_product(x, 0, (int)axis);
        o.dims[1] = dims_product(x, (int)axis, x->rank);
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input after.
 * Returns 1 when known, 0 when absent, -1 when given but unknown (then
 * *len is its length if the type tells, else -1). */
static int axes_of(lt_infer_ctx *c, lt_node *n, int64_t *axes, int *len)
{
    if (n->opset < 13) {
        const int64_t *a = lt_attr_ints(n, "axes", len);
        if (!a)
            return 0;
        if (*len > LT_MAX_RANK) {
            *len = -1;
            return -1;
        }
        memcpy(axes, a, sizeof *a * *len);
        return 1;
    }
    if (n->nin < 2 || !n->in[1])
        return 0;
    if (lt_ti_const_ints(c, n->in[1], axes, LT_MAX_RANK, len))
        return 1;
    int64_t l = lt_ti_len(n->in[1]);
    *len = l >= 0 && l <= LT_MAX_RANK ? (int)l : -1;
    return -1;
}

static lt_status r_squeeze(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, x ? x->dtype : LT_UNDEFINED, -1);
    int64_t axes[LT_MAX_RANK];
    int len = 0, known = axes_of(c, n, axes, &len);
    bool drop[LT_MAX_RANK] = {0};
    if (!x || x->kind != LT_KIND_TENSOR || x->rank < 0) {
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    if (known == 1 && len > 0) {
        for (int i = 0; i < len; i++) {
            int a = (int)(axes[i] < 0 ? axes[i] + x->rank : axes[i]);
            if (a < 0 || a >= x->rank)
                return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
            if (lt_ti_static(x->dims[a]) && x->dims[a].v != 1)
                return lt_infer_fail(c, n, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a].v);
            drop[a] = true;
        }
    } else if (known == -1) {
        /* unknown axes: the rank follows from their count when axes are distinct */
        if (len > 0 && len <= x->rank)
            o.rank = x->rank - len;
        lt_ti_set(n, 0, &o);
        return LT_OK;
    } else {
        for (int i = 0; i < x->rank; i++) {
            if (!lt_ti_static(x->dims[i])) {
                lt_ti_set(n, 0, &o); /* a symbolic dim may or may not be 1 */
                return LT_OK;
            }
            drop[i] = x->dims[i].v == 1;
        }
    }
    o.rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            o.dims[o.rank++] = x->dims[i];
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_unsqueeze(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, x ? x->dtype : LT_UNDEFINED, -1);
    int64_t axes[LT_MAX_RANK];
    int len = 0, known = axes_of(c, n, axes, &len);
    if (!x || x->kind != LT_KIND_TENSOR || x->rank < 0 || known == 0 || len < 0) {
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    int r = x->rank + len;
    if (r > LT_MAX_RANK) {
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    o.rank = r;
    if (known == 1) {
        bool ins[LT_MAX_RANK] = {0};
        for (int i = 0; i < len; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
            if (a < 0 || a >= r)
                return lt_infer_fail(c, n, "axis %lld is out of range for output rank %d", (long long)axes[i], r);
            if (ins[a])
                return lt_infer_fail(c, n, "axis %lld is given twice", (long long)a);
            ins[a] = true;
        }
        for (int i = 0, j = 0; i < r; i++)
            o.dims[i] = ins[i] ? lt_ti_dim(1) : x->dims[j++];
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_identity(lt_infer_ctx *c, lt_node *n)
{
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

static lt_status r_shape(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, LT_I64, 1);
    if (x && x->kind == LT_KIND_TENSOR && x->rank >= 0) {
        int64_t r = x->rank, s = lt_attr_int(n, "start", 0), e = lt_attr_int(n, "end", r);
        s = s < 0 ? s + r : s;
        e = e < 0 ? e + r : e;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
        o.dims[0] = lt_ti_dim(e > s ? e - s : 0);
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_size(lt_infer_ctx *c, lt_node *n)
{
    lt_type o;
    lt_type_unknown(&o, LT_I64, 0);
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

void lt_infer_register_tensor(lt_infer_fn *tab)
{
    tab[LT_OP_RESHAPE] = r_reshape;
    tab[LT_OP_FLATTEN] = r_flatten;
    tab[LT_OP_SQUEEZE] = r_squeeze;
    tab[LT_OP_UNSQUEEZE] = r_unsqueeze;
    tab[LT_OP_IDENTITY] = r_identity;
    tab[LT_OP_SHAPE] = r_shape;
    tab[LT_OP_SIZE] = r_size;
    lt_ti_register_ops(tab);
}
