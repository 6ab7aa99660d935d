/* An IR pass that turns a float32, float16 or bfloat16 model into the same
 * model in float64 (parameters, inputs, constants, casts and every attribute
 * tensor), so a gradient can be checked against finite differences at
 * double precision, or a half-precision gradient against the exact one. */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

/* the float types the pass widens (the narrow float8/float4 types stay:
 * they are storage formats a model casts from, not arithmetic types) */
static bool widened(lt_dtype t) { return t == LT_F32 || t == LT_F16 || t == LT_BF16; }

static void retype(lt_type *t)
{
    if (widened(t->dtype))
        t->dtype = LT_F64;
}

static bool tensor_to_f64(lt_module *m, lt_tensor *t, bool arena)
{
    if (!widened(t->dtype))
        return true;
    double *d = arena ? lt_ir_alloc(m, sizeof *d * (t->numel ? t->numel : 1)) : malloc(sizeof *d * (t->numel ? t->numel : 1));
    if (!d)
        return false;
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = lt_tensor_get_f64(t, i);
    if (!arena)
        free(t->data);
    t->data = d;
    t->dtype = LT_F64;
    return true;
}

static bool block_to_f64(lt_module *m, lt_block *b)
{
    for (int p = 0; p < b->nparams; p++)
        retype(&b->params[p]->type);
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        bool copied = false;
        for (int a = 0; a < n->nattr; a++) {
            lt_attr *at = &n->attrs[a];
            bool is_float_tensor = at->kind == LT_ATTR_TENSOR && at->t && widened(at->t->dtype);
            bool is_cast_to = at->kind == LT_ATTR_INT && widened((lt_dtype)at->i) &&
                              (!strcmp(at->name, "to") || !strcmp(at->name, "dtype"));
            if (!is_float_tensor && !is_cast_to)
                continue;
            if (!copied) { /* attributes may be shared between nodes: copy before changing */
                lt_attr *na = lt_ir_alloc(m, sizeof *na * n->nattr);
                if (!na)
                    return false;
                memcpy(na, n->attrs, sizeof *na * n->nattr);
                n->attrs = na;
                at = &n->attrs[a];
                copied = true;
            }
            if (is_cast_to) {
                at->i = LT_F64;
            } else {
                lt_tensor *t = lt_ir_alloc(m, sizeof *t);
                if (!t)
                    return false;
                *t = *at->t;
                if (!tensor_to_f64(m, t, true))
                    return false;
                at->t = t;
            }
        }
        if (n->op == LT_OP_CONSTANT_OF_SHAPE && !lt_attr_find(n, "value")) {
            /* its default is a float32 zero */
            lt_attr *na = lt_ir_alloc(m, sizeof *na * (n->nattr + 1));
            lt_tensor *t = lt_ir_alloc(m, sizeof *t);
            double *z = lt_ir_alloc(m, sizeof *z);
            if (!na || !t || !z)
                return false;
            if (n->nattr)
                memcpy(na, n->attrs, sizeof *na * n->nattr);
            *t = (lt_tensor){.dtype = LT_F64, .rank = 1, .dims = {1}, .numel = 1, .data = z};
            na[n->nattr] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
            n->attrs = na;
            n->nattr++;
        }
        for (int j = 0; j < n->nout; j++)
            if (n->out[j])
                retype(&n->out[j]->type);
        for (int r = 0; r < n->nregions; r++)
            if (!block_to_f64(m, n->regions[r]))
                return false;
    }
    return true;
}

lt_status lt_ir_to_f64(lt_module *m, lt_err *err)
{
    for (int i = 0; i < m->nparams; i++) {
        if (!tensor_to_f64(m, &m->params[i].data, false))
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        retype(&m->params[i].value->type);
    }
    for (int f = 0; f < m->nfuncs; f++)
        if (!block_to_f64(m, m->funcs[f]->body))
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (!block_to_f64(m, m->main))
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    return lt_infer_module(m, err);
}
