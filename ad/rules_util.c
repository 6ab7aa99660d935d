/* Builders the gradient rule files share beyond the builder's own
 * (ad/builder.c): string attributes, casts, node construction over
 * emitted inputs, slices, pads and sums. */
#include "rules_util.h"
#include <string.h>

void lt_ad_attr_str(lt_ad *c, lt_node *n, const char *name, const char *s)
{
    lt_attr *a = lt_ir_alloc(c->m, sizeof *a * (n->nattr + 1));
    if (!a)
        return;
    if (n->nattr)
        memcpy(a, n->attrs, sizeof *a * n->nattr);
    lt_attr *x = &a[n->nattr];
    x->name = lt_ir_strdup(c->m, name);
    x->kind = LT_ATTR_STRING;
    x->s = lt_ir_strdup(c->m, s);
    x->slen = strlen(s);
    n->attrs = a; /* a fresh array: attributes shared with a forward node stay as they were */
    n->nattr++;
}

lt_node *lt_ad_node_of(lt_ad *c, lt_op op, int nin, lt_ival *const *ins)
{
    for (int i = 0; i < nin; i++)
        if (!ins[i])
            return NULL; /* an input failed to be emitted (out of memory) */
    lt_node *k = lt_ad_node(c, op, nin, 1);
    if (!k)
        return NULL;
    for (int i = 0; i < nin; i++)
        k->in[i] = ins[i];
    return k;
}

lt_ival *lt_ad_unsqueeze(lt_ad *c, lt_ival *v, int k, const int64_t *axes)
{
    return k ? lt_ad_op2(c, LT_OP_UNSQUEEZE, v, lt_ad_ints(c, k, axes)) : v;
}

lt_ival *lt_ad_cast(lt_ad *c, lt_ival *v, lt_dtype to)
{
    lt_node *k = lt_ad_node_of(c, LT_OP_CAST, 1, &v);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "to", to);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* a node of op over ins, of which the first req must exist (the rest may be
 * omitted), with nout outputs; the caller sets attributes and infers */
lt_node *lt_ad_emit(lt_ad *c, lt_op op, int nin, lt_ival *const *ins, int req, int nout)
{
    for (int i = 0; i < req; i++)
        if (!ins[i])
            return NULL; /* an input failed to be emitted (out of memory) */
    lt_node *k = lt_ad_node(c, op, nin, nout);
    if (!k)
        return NULL;
    for (int i = 0; i < nin; i++)
        k->in[i] = ins[i];
    return k;
}

/* the gradient op of n over ins, carrying n's attributes and opset */
lt_node *lt_ad_emit_grad(lt_ad *c, const lt_node *n, lt_op op, int nin, lt_ival *const *ins, int req, int nout)
{
    lt_node *k = lt_ad_emit(c, op, nin, ins, req, nout);
    if (k) {
        lt_ad_copy_attrs(c, k, n);
        lt_ad_infer(c, k);
    }
    return k;
}

lt_ival *lt_ad_arg(const lt_node *n, lt_ival *const *in, int i) { return i < n->nin ? in[i] : NULL; }

lt_ival *lt_ad_slice(lt_ad *c, lt_ival *v, lt_ival *starts, lt_ival *ends, lt_ival *axes)
{
    lt_ival *ins[4] = {v, starts, ends, axes};
    lt_node *k = lt_ad_emit(c, LT_OP_SLICE, 4, ins, 4, 1);
    if (!k)
        return NULL;
    lt_ad_infer(c, k);
    return k->out[0];
}

/* v padded with zeros at the end of the given axes by the amounts in end */
lt_ival *lt_ad_pad_end(lt_ad *c, lt_ival *v, lt_ival *end, int na, const int64_t *axes, lt_ival *zero)
{
    int64_t none[LT_MAX_RANK] = {0};
    lt_ival *parts[2] = {lt_ad_ints(c, na, none), end};
    lt_node *cat = lt_ad_emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return NULL;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *ins[4] = {v, cat->out[0], zero, lt_ad_ints(c, na, axes)};
    lt_node *k = lt_ad_emit(c, LT_OP_PAD, 4, ins, 4, 1);
    if (!k)
        return NULL;
    lt_ad_infer(c, k);
    return k->out[0];
}

/* an integer value as int64 (shape values and lengths may come as int32) */
lt_ival *lt_ad_as_i64(lt_ad *c, lt_ival *v)
{
    lt_dtype dt = v->type.dtype;
    return dt == LT_I64 || dt == LT_UNDEFINED ? v : lt_ad_cast(c, v, LT_I64);
}

/* v summed over axes (every axis when all), keepdims 0 */
lt_ival *lt_ad_sum_over(lt_ad *c, lt_ival *v, bool all, int na, const int64_t *axes)
{
    if (!all && na == 0)
        return v;
    lt_ival *ins[2] = {v, all ? NULL : lt_ad_ints(c, na, axes)};
    lt_node *k = lt_ad_emit(c, LT_OP_REDUCE_SUM, all ? 1 : 2, ins, all ? 1 : 2, 1);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "keepdims", 0);
    lt_ad_infer(c, k);
    return k->out[0];
}

lt_ival *lt_ad_reduce_tail(lt_ad *c, lt_op op, lt_ival *v, int from)
{
    int r = v ? v->type.rank : -1;
    if (r < 0 || from < 0 || from > r)
        return NULL;
    int64_t axes[LT_MAX_RANK];
    for (int i = from; i < r; i++)
        axes[i - from] = i;
    lt_ival *ins[2] = {v, lt_ad_ints(c, r - from, axes)};
    lt_node *k = lt_ad_node_of(c, op, 2, ins);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "keepdims", 1);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* g divided by cnt, an int64 element count, in g's float type; float16
 * divides in float32, where a count above 65504 does not overflow */
lt_ival *lt_ad_div_count(lt_ad *c, lt_ival *g, lt_ival *cnt)
{
    lt_dtype dt = lt_ad_float_dtype(g);
    if (dt != LT_F16)
        return lt_ad_op2(c, LT_OP_DIV, g, lt_ad_cast(c, cnt, dt));
    lt_ival *q = lt_ad_op2(c, LT_OP_DIV, lt_ad_cast(c, g, LT_F32), lt_ad_cast(c, cnt, LT_F32));
    return q ? lt_ad_cast(c, q, LT_F16) : NULL;
}
