/* The IR builder gradient rules use: nodes emitted into the block the
 * transform is writing, attributes, constants, unbroadcasting. */
#include "ad_impl.h"
#include "../ir/infer.h"
#include <stdarg.h>
#include <string.h>

lt_node *lt_ad_node(lt_ad *c, lt_op op, int nin, int nout)
{
    lt_node *n = lt_node_new(c->m, c->out, op, nin, nout);
    if (!n)
        return NULL;
    n->opset = LT_AD_OPSET;
    char nm[64];
    snprintf(nm, sizeof nm, "ad%d", c->counter++);
    n->name = lt_ir_strdup(c->m, nm);
    for (int i = 0; i < nout; i++) {
        snprintf(nm, sizeof nm, "%s_%s%d", lt_op_names[op], "g", c->counter++);
        n->out[i] = lt_ival_new(c->m, c->out, nm);
        if (!n->out[i])
            return NULL;
        n->out[i]->def = n;
    }
    return n;
}

lt_node *lt_ad_grad_node(lt_ad *c, const lt_node *n, lt_op op, int ndy, lt_ival *const *dy, int nfwd,
                         lt_ival *const *in, int nout)
{
    lt_node *k = lt_ad_node(c, op, ndy + nfwd, nout);
    if (!k)
        return NULL;
    for (int i = 0; i < ndy; i++)
        k->in[i] = dy[i];
    for (int i = 0; i < nfwd; i++)
        k->in[ndy + i] = i < n->nin ? in[i] : NULL;
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    return k;
}

lt_ival *lt_ad_out(lt_ad *c, lt_node *n, int i)
{
    (void)c;
    return n && i < n->nout ? n->out[i] : NULL;
}

static lt_ival *opn(lt_ad *c, lt_op op, int nin, lt_ival *a, lt_ival *b, lt_ival *d)
{
    lt_node *n = lt_ad_node(c, op, nin, 1);
    if (!n)
        return NULL;
    lt_ival *ins[3] = {a, b, d};
    for (int i = 0; i < nin; i++)
        n->in[i] = ins[i];
    /* a shape read off a tensor is literal: a 0 in it is an empty dim, not
     * Reshape's "copy this dim" (a gradient reshaped back to x of [3, 0]) */
    if (op == LT_OP_RESHAPE && b && b->def && b->def->op == LT_OP_SHAPE)
        lt_ad_attr_int(c, n, "allowzero", 1);
    lt_ad_infer(c, n);
    return n->out[0];
}

lt_ival *lt_ad_op1(lt_ad *c, lt_op op, lt_ival *a) { return opn(c, op, 1, a, NULL, NULL); }
lt_ival *lt_ad_op2(lt_ad *c, lt_op op, lt_ival *a, lt_ival *b) { return opn(c, op, 2, a, b, NULL); }
lt_ival *lt_ad_op3(lt_ad *c, lt_op op, lt_ival *a, lt_ival *b, lt_ival *d) { return opn(c, op, 3, a, b, d); }

static lt_attr *add_attr(lt_ad *c, lt_node *n, const char *name, lt_attr_kind kind)
{
    lt_attr *a = lt_ir_alloc(c->m, sizeof *a * (n->nattr + 1));
    if (!a)
        return NULL;
    if (n->nattr)
        memcpy(a, n->attrs, sizeof *a * n->nattr);
    n->attrs = a;
    lt_attr *x = &a[n->nattr++];
    x->name = lt_ir_strdup(c->m, name);
    x->kind = kind;
    return x;
}

void lt_ad_attr_int(lt_ad *c, lt_node *n, const char *name, int64_t v)
{
    lt_attr *a = add_attr(c, n, name, LT_ATTR_INT);
    if (a)
        a->i = v;
}

void lt_ad_attr_float(lt_ad *c, lt_node *n, const char *name, float v)
{
    lt_attr *a = add_attr(c, n, name, LT_ATTR_FLOAT);
    if (a)
        a->f = v;
}

void lt_ad_attr_ints(lt_ad *c, lt_node *n, const char *name, int k, const int64_t *v)
{
    lt_attr *a = add_attr(c, n, name, LT_ATTR_INTS);
    if (!a)
        return;
    a->n = k;
    a->ints = lt_ir_alloc(c->m, sizeof *v * (k ? k : 1));
    if (a->ints && k)
        memcpy(a->ints, v, sizeof *v * k);
}

void lt_ad_copy_attrs(lt_ad *c, lt_node *n, const lt_node *src)
{
    (void)c;
    /* attributes are immutable arena data: sharing them is safe */
    n->attrs = src->attrs;
    n->nattr = src->nattr;
    n->opset = src->opset;
}

static lt_ival *const_tensor(lt_ad *c, lt_dtype dt, int rank, const int64_t *dims, const void *data)
{
    lt_node *n = lt_ad_node(c, LT_OP_CONSTANT, 0, 1);
    lt_attr *a = n ? add_attr(c, n, "value", LT_ATTR_TENSOR) : NULL;
    if (!a)
        return NULL;
    lt_tensor *t = lt_ir_alloc(c->m, sizeof *t);
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel *= dims[i];
    size_t bytes = (size_t)numel * lt_dtype_size(dt);
    void *p = t ? lt_ir_alloc(c->m, bytes ? bytes : 1) : NULL;
    if (!p)
        return NULL;
    if (data)
        memcpy(p, data, bytes);
    else
        memset(p, 0, bytes);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = numel;
    t->data = p;
    a->t = t;
    lt_type_tensor(&n->out[0]->type, dt, rank, dims);
    return n->out[0];
}

lt_ival *lt_ad_const(lt_ad *c, lt_dtype dt, int rank, const int64_t *dims, const void *data)
{
    return const_tensor(c, dt, rank, dims, data);
}

lt_ival *lt_ad_scalar(lt_ad *c, lt_dtype dt, double v)
{
    unsigned char buf[16] = {0};
    lt_tensor t = {.dtype = dt, .rank = 0, .numel = 1, .data = buf};
    switch (dt) {
    case LT_F32: *(float *)buf = (float)v; break;
    case LT_F64: *(double *)buf = v; break;
    case LT_I64: *(int64_t *)buf = (int64_t)v; break;
    case LT_I32: *(int32_t *)buf = (int32_t)v; break;
    case LT_BOOL: buf[0] = v != 0; break;
    case LT_F16: *(uint16_t *)buf = lt_f32_to_f16((float)v); break;
    case LT_BF16: *(uint16_t *)buf = lt_f32_to_bf16((float)v); break;
    default: *(float *)buf = (float)v; t.dtype = LT_F32; break;
    }
    return const_tensor(c, t.dtype, 0, NULL, buf);
}

lt_dtype lt_ad_float_dtype(const lt_ival *v)
{
    lt_dtype dt = v ? v->type.dtype : LT_UNDEFINED;
    return lt_dtype_is_float(dt) ? dt : LT_F32;
}

lt_ival *lt_ad_scalar_like(lt_ad *c, const lt_ival *like, double v)
{
    return lt_ad_scalar(c, lt_ad_float_dtype(like), v);
}

lt_ival *lt_ad_zeros_like(lt_ad *c, lt_ival *v)
{
    lt_ival *shape = lt_ad_op1(c, LT_OP_SHAPE, v);
    lt_node *z = shape ? lt_ad_node(c, LT_OP_CONSTANT_OF_SHAPE, 1, 1) : NULL;
    lt_attr *a = z ? add_attr(c, z, "value", LT_ATTR_TENSOR) : NULL;
    lt_tensor *t = a ? lt_ir_alloc(c->m, sizeof *t) : NULL;
    size_t es = lt_dtype_size(v->type.dtype ? v->type.dtype : LT_F32);
    void *p = t ? lt_ir_alloc(c->m, es ? es : 4) : NULL;
    if (!p)
        return NULL;
    t->dtype = v->type.dtype ? v->type.dtype : LT_F32;
    t->rank = 1;
    t->dims[0] = 1;
    t->numel = 1;
    t->data = p;
    a->t = t;
    z->in[0] = shape;
    lt_ad_infer(c, z);
    return z->out[0];
}

lt_ival *lt_ad_ints(lt_ad *c, int k, const int64_t *v)
{
    int64_t d = k;
    return const_tensor(c, LT_I64, 1, &d, v);
}

static bool same_shape(const lt_type *a, const lt_type *b)
{
    if (a->rank < 0 || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i].sym >= 0 || b->dims[i].sym >= 0) {
            if (a->dims[i].sym != b->dims[i].sym)
                return false;
        } else if (a->dims[i].v < 0 || a->dims[i].v != b->dims[i].v) {
            return false;
        }
    }
    return true;
}

lt_ival *lt_ad_unbroadcast(lt_ad *c, lt_ival *g, lt_ival *like)
{
    if (same_shape(&g->type, &like->type))
        return g;
    lt_ival *r = lt_ad_op2(c, LT_OP_REDUCE_SUM_LIKE, g, like);
    if (r)
        r->type = like->type;
    return r;
}

lt_status lt_ad_fail(lt_ad *c, const lt_node *n, const char *fmt, ...)
{
    char msg[LT_ERR_MSG_MAX], lb[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_errf(c->err, LT_ERR_UNSUPPORTED, "%s: %s: %s", c->m->path, lt_node_label(n, lb, sizeof lb), msg);
}

void lt_ad_infer(lt_ad *c, lt_node *n)
{
    lt_infer_rules_init();
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && n->in[i]->type.dtype == LT_UNDEFINED && n->in[i]->type.rank < 0)
            return; /* nothing to go on: the module-wide pass at the end does it */
    lt_err err;
    lt_infer_ctx ic = {c->m, &err};
    if (lt_infer_rules[n->op] && lt_infer_rules[n->op](&ic, n) != LT_OK)
        for (int j = 0; j < n->nout; j++)
            if (n->out[j])
                lt_type_unknown(&n->out[j]->type, LT_UNDEFINED, -1);
}
