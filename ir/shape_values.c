/* Values of the small integer tensors that compute shapes (Shape, Size and
 * the arithmetic, slicing and joining exporters wrap around them), folded
 * at import so that a Reshape or Slice fed by them keeps its rank and, where
 * the values hold symbolic dims, those dims. Each element is a constant, a
 * symbolic dim or unknown; a fold walks back through the producers within a
 * fixed budget of nodes, so a long or shared chain costs a bounded walk. */
#include "shape_tensor_util.h"
#include <string.h>

#define FOLD_BUDGET 128
#define FOLD_MAX (2 * LT_MAX_RANK) /* elements of an intermediate value (pads) */

static bool int_like(lt_dtype t)
{
    switch (t) {
    case LT_I64: case LT_I32: case LT_I16: case LT_I8: case LT_U8: case LT_U16: case LT_U32: case LT_U64:
    case LT_BOOL: return true;
    default: return false;
    }
}

static bool tensor_vals(const lt_tensor *t, lt_ti_val *out, int max, int *len)
{
    if (!t || t->rank > 1 || t->numel > max || !t->data)
        return false;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t v;
        switch (t->dtype) {
        case LT_I64: v = ((const int64_t *)t->data)[i]; break;
        case LT_I32: v = ((const int32_t *)t->data)[i]; break;
        case LT_I16: v = ((const int16_t *)t->data)[i]; break;
        case LT_I8: v = ((const int8_t *)t->data)[i]; break;
        case LT_U8: v = ((const uint8_t *)t->data)[i]; break;
        case LT_U16: v = ((const uint16_t *)t->data)[i]; break;
        case LT_U32: v = ((const uint32_t *)t->data)[i]; break;
        default: return false;
        }
        out[i] = (lt_ti_val){true, v, -1};
    }
    *len = (int)t->numel;
    return true;
}

static bool fold(lt_infer_ctx *c, const lt_ival *v, lt_ti_val *out, int max, int *len, int *budget);

/* all elements of input i known constants: their values in out */
static bool fold_consts(lt_infer_ctx *c, const lt_node *d, int i, int64_t *out, int max, int *len, int *budget)
{
    lt_ti_val t[LT_MAX_RANK];
    if (i >= d->nin || !d->in[i] || max > LT_MAX_RANK || !fold(c, d->in[i], t, max, len, budget))
        return false;
    for (int k = 0; k < *len; k++) {
        if (!t[k].known || t[k].sym >= 0)
            return false;
        out[k] = t[k].v;
    }
    return true;
}

static bool is_const(lt_ti_val a) { return a.known && a.sym < 0; }
static lt_ti_val unknown_val(void) { return (lt_ti_val){false, -1, -1}; }

static lt_ti_val arith(lt_op op, const lt_node *d, lt_ti_val a, lt_ti_val b)
{
    int64_t r;
    /* x + 0, x - 0, x * 1 and x / 1 keep a symbolic x */
    if (is_const(b) && ((b.v == 0 && (op == LT_OP_ADD || op == LT_OP_SUB)) ||
                        (b.v == 1 && (op == LT_OP_MUL || op == LT_OP_DIV))))
        return a;
    if (is_const(a) && ((a.v == 0 && op == LT_OP_ADD) || (a.v == 1 && op == LT_OP_MUL)))
        return b;
    if (op == LT_OP_EQUAL && a.known && b.known && a.sym >= 0 && a.sym == b.sym)
        return (lt_ti_val){true, 1, -1};
    if (!is_const(a) || !is_const(b))
        return unknown_val();
    switch (op) {
    case LT_OP_ADD:
        if (__builtin_add_overflow(a.v, b.v, &r))
            return unknown_val();
        break;
    case LT_OP_SUB:
        if (__builtin_sub_overflow(a.v, b.v, &r))
            return unknown_val();
        break;
    case LT_OP_MUL:
        if (__builtin_mul_overflow(a.v, b.v, &r))
            return unknown_val();
        break;
    case LT_OP_DIV:
        if (b.v == 0 || (a.v == INT64_MIN && b.v == -1))
            return unknown_val();
        r = a.v / b.v; /* integer Div truncates */
        break;
    case LT_OP_MOD:
        if (b.v == 0 || (a.v == INT64_MIN && b.v == -1))
            return unknown_val();
        r = a.v % b.v;
        /* fmod 0: the result takes the divisor's sign, as Python's % */
        if (!lt_attr_int(d, "fmod", 0) && r != 0 && (r < 0) != (b.v < 0))
            r += b.v;
        break;
    case LT_OP_EQUAL: r = a.v == b.v; break;
    default: return unknown_val();
    }
    return (lt_ti_val){true, r, -1};
}

/* Slice of a 1-D value with constant starts, ends, axes (0) and steps */
static bool fold_slice(lt_infer_ctx *c, const lt_node *d, lt_ti_val *out, int max, int *len, int *budget)
{
    lt_ti_val x[FOLD_MAX];
    int nx, ns, ne, na = 0, nst = 0;
    int64_t st[1], en[1], ax[1] = {0}, sp[1] = {1};
    if (!fold(c, d->in[0], x, FOLD_MAX, &nx, budget) || d->nin < 3 ||
        !fold_consts(c, d, 1, st, 1, &ns, budget) || !fold_consts(c, d, 2, en, 1, &ne, budget) || ns != 1 || ne != 1)
        return false;
    if (d->nin > 3 && d->in[3] && (!fold_consts(c, d, 3, ax, 1, &na, budget) || na != 1))
        return false;
    if (d->nin > 4 && d->in[4] && (!fold_consts(c, d, 4, sp, 1, &nst, budget) || nst != 1))
        return false;
    if ((ax[0] != 0 && ax[0] != -1) || sp[0] == 0)
        return false;
    int64_t n = nx, s = st[0], e = en[0], step = sp[0];
    s = s < 0 ? s + n : s;
    e = e < 0 ? e + n : e;
    if (step > 0) {
        s = s < 0 ? 0 : s > n ? n : s;
        e = e < 0 ? 0 : e > n ? n : e;
    } else {
        s = s < 0 ? -1 : s > n - 1 ? n - 1 : s;
        e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
    }
    int k = 0;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) {
        if (k >= max)
            return false;
        out[k++] = x[i];
    }
    *len = k;
    return true;
}

static bool fold_node(lt_infer_ctx *c, const lt_node *d, lt_ti_val *out, int max, int *len, int *budget)
{
    lt_ti_val a[FOLD_MAX], b[FOLD_MAX], w[FOLD_MAX];
    int na, nb, nw;
    switch (d->op) {
    case LT_OP_SHAPE: {
        const lt_type *x = d->nin > 0 && d->in[0] ? &d->in[0]->type : NULL;
        if (!x || x->kind != LT_KIND_TENSOR || x->rank < 0)
            return false;
        int64_t r = x->rank, s = lt_attr_int(d, "start", 0), e = lt_attr_int(d, "end", r);
        s = s < 0 ? s + r : s;
        e = e < 0 ? e + r : e;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
        if (e - s > max)
            return false;
        int k = 0;
        for (int64_t i = s; i < e; i++) {
            lt_dim dd = x->dims[i];
            out[k++] = dd.sym >= 0 ? (lt_ti_val){true, -1, dd.sym} : dd.v >= 0 ? (lt_ti_val){true, dd.v, -1}
                                                                        : unknown_val();
        }
        *len = k;
        return true;
    }
    case LT_OP_SIZE: {
        const lt_type *x = d->nin > 0 && d->in[0] ? &d->in[0]->type : NULL;
        if (!x || x->kind != LT_KIND_TENSOR || x->rank < 0 || max < 1)
            return false;
        int64_t p = 1;
        for (int i = 0; i < x->rank; i++)
            if (!lt_ti_static(x->dims[i]) || __builtin_mul_overflow(p, x->dims[i].v, &p))
                return false;
        out[0] = (lt_ti_val){true, p, -1};
        *len = 1;
        return true;
    }
    case LT_OP_CAST:
        if (lt_attr_int(d, "to", 0) == LT_BOOL)
            return false;
        /* fall through */
    case LT_OP_IDENTITY:
    case LT_OP_RESHAPE:
    case LT_OP_SQUEEZE:
    case LT_OP_UNSQUEEZE:
    case LT_OP_FLATTEN:
        /* the values stay in order; the result must still be 0-D or 1-D */
        if (d->nout < 1 || !d->out[0] || d->out[0]->type.rank < 0 || d->out[0]->type.rank > 1)
            return false;
        return d->nin > 0 && d->in[0] && fold(c, d->in[0], out, max, len, budget);
    case LT_OP_ADD:
    case LT_OP_SUB:
    case LT_OP_MUL:
    case LT_OP_DIV:
    case LT_OP_MOD:
    case LT_OP_EQUAL:
        if (d->nin < 2 || !d->in[0] || !d->in[1] || !fold(c, d->in[0], a, FOLD_MAX, &na, budget) ||
            !fold(c, d->in[1], b, FOLD_MAX, &nb, budget))
            return false;
        if ((na != nb && na != 1 && nb != 1) || na == 0 || nb == 0)
            return false; /* an empty operand: nothing to fold from */
        *len = na > nb ? na : nb;
        if (*len > max)
            return false;
        for (int i = 0; i < *len; i++)
            out[i] = arith(d->op, d, a[na == 1 ? 0 : i], b[nb == 1 ? 0 : i]);
        return true;
    case LT_OP_WHERE:
        if (d->nin < 3 || !fold(c, d->in[0], w, FOLD_MAX, &nw, budget) ||
            !fold(c, d->in[1], a, FOLD_MAX, &na, budget) || !fold(c, d->in[2], b, FOLD_MAX, &nb, budget))
            return false;
        *len = nw > na ? nw : na;
        *len = nb > *len ? nb : *len;
        if (*len > max || (nw != *len && nw != 1) || (na != *len && na != 1) || (nb != *len && nb != 1))
            return false;
        for (int i = 0; i < *len; i++) {
            lt_ti_val cv = w[nw == 1 ? 0 : i];
            out[i] = !is_const(cv) ? unknown_val() : cv.v ? a[na == 1 ? 0 : i] : b[nb == 1 ? 0 : i];
        }
        return true;
    case LT_OP_CONCAT: {
        int64_t axis = lt_attr_int(d, "axis", 0);
        if (axis != 0 && axis != -1)
            return false;
        int k = 0;
        for (int i = 0; i < d->nin; i++) {
            if (!d->in[i] || !fold(c, d->in[i], a, FOLD_MAX, &na, budget) || k + na > max)
                return false;
            memcpy(out + k, a, sizeof *a * (size_t)na);
            k += na;
        }
        *len = k;
        return true;
    }
    case LT_OP_SLICE:
        return d->nin > 0 && d->in[0] && d->opset >= 10 && fold_slice(c, d, out, max, len, budget);
    case LT_OP_GATHER: {
        int64_t idx[LT_MAX_RANK];
        int64_t axis = lt_attr_int(d, "axis", 0);
        if ((axis != 0 && axis != -1) || d->nin < 2 || !d->in[0] || !fold(c, d->in[0], a, FOLD_MAX, &na, budget) ||
            !fold_consts(c, d, 1, idx, LT_MAX_RANK, &nb, budget) || nb > max)
            return false;
        for (int i = 0; i < nb; i++) {
            int64_t j = idx[i] < 0 ? idx[i] + na : idx[i];
            if (j < 0 || j >= na)
                return false;
            out[i] = a[j];
        }
        *len = nb;
        return true;
    }
    default: return false;
    }
}

static bool fold(lt_infer_ctx *c, const lt_ival *v, lt_ti_val *out, int max, int *len, int *budget)
{
    if (!v || --*budget < 0)
        return false;
    const lt_tensor *t = lt_infer_const(c, v);
    if (t)
        return tensor_vals(t, out, max, len);
    const lt_node *d = v->def;
    if (!d)
        return false;
    if (d->op == LT_OP_CONSTANT) {
        const lt_attr *a = lt_attr_find(d, "value_int");
        if (a && a->kind == LT_ATTR_INT && max >= 1) {
            out[0] = (lt_ti_val){true, a->i, -1};
            *len = 1;
            return true;
        }
        a = lt_attr_find(d, "value_ints");
        if (a && a->kind == LT_ATTR_INTS && a->n <= max) {
            for (int i = 0; i < a->n; i++)
                out[i] = (lt_ti_val){true, a->ints[i], -1};
            *len = a->n;
            return true;
        }
        return false;
    }
    /* a folded value must be an integer (or bool) scalar or vector */
    const lt_type *vt = &v->type;
    if (vt->kind != LT_KIND_TENSOR || !int_like(vt->dtype) || vt->rank > 1)
        return false;
    return fold_node(c, d, out, max, len, budget);
}

bool lt_ti_values(lt_infer_ctx *c, const lt_ival *v, lt_ti_val *out, int max, int *len)
{
    int budget = FOLD_BUDGET;
    return fold(c, v, out, max, len, &budget);
}

bool lt_ti_const_ints(lt_infer_ctx *c, const lt_ival *v, int64_t *out, int max, int *len)
{
    lt_ti_val t[64];
    int n;
    if (!lt_ti_values(c, v, t, max < 64 ? max : 64, &n))
        return false;
    for (int i = 0; i < n; i++) {
        if (!is_const(t[i]))
            return false;
        out[i] = t[i].v;
    }
    *len = n;
    return true;
}
