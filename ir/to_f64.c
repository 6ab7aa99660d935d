/* An IR pass that turns a float32, float16 or bfloat16 model into the same
 * model computing in float64 what is differentiated, so a gradient can be
 * checked against finite differences at double precision, or a
 * half-precision gradient against the exact one.
 *
 * Only the float values that carry (or mix with) what is differentiated
 * widen. Each float value gets a class:
 *  - hot: it depends on a float graph input or a trained float parameter
 *    (through subgraphs too: a Loop/Scan/If whose inputs, captured values
 *    or body results are hot is hot, and so are its bodies' parameters);
 *  - cold: it is computed from integer or bool values (a Cast of an
 *    integer, Shape arithmetic, ConstantOfShape, Range of integers...) and
 *    constants only, never from a hot value;
 *  - neutral: it is computed from float constants (Constant nodes, frozen
 *    initializers) alone.
 * Hot values widen; cold ones keep their type, as PyTorch computes a
 * relative-position bucket (ceil(log(|pos| / mid) / log(...) * ...), from
 * integer positions cast to the default float type) in float32 even in a
 * float64 model: widened, a bucket at a boundary comes out one higher and
 * the model gathers other rows. A neutral value widens when every node
 * that reads it computes in float64 (it is a graph output, or it feeds
 * only widened nodes), and keeps its type otherwise. A widened node that
 * reads a float value kept in its type reads it through a Cast to float64
 * made for it (a float attention mask made from an integer one, multiplied
 * into the activations). Cast nodes, attribute tensors and ConstantOfShape
 * values change only in widened nodes. A module that already holds
 * functions (the AD's program) is widened whole. */
#include "ir.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NEUTRAL = 0, COLD = 1, HOT = 2 };

/* the float types the pass widens (the narrow float8/float4 types stay:
 * they are storage formats a model casts from, not arithmetic types) */
static bool widened(lt_dtype t) { return t == LT_F32 || t == LT_F16 || t == LT_BF16; }
static bool is_float(const lt_ival *v) { return v && (widened(v->type.dtype) || v->type.dtype == LT_F64); }

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

/* The pass's state: per value id its class and, for a neutral one, whether
 * it widens (every reader computing in float64, as far as known). */
typedef struct f64_pass {
    lt_module *m;
    uint8_t *cls;
    bool *wide;
    int nv;     /* values from here on are the pass's Casts */
    int opset;  /* the model's ONNX opset, for those */
    bool changed;
} f64_pass;

static bool val_wide(const f64_pass *p, const lt_ival *v)
{
    if (v->id >= p->nv)
        return true;
    return p->cls[v->id] == HOT || (p->cls[v->id] == NEUTRAL && p->wide[v->id]);
}

static void raise_cls(f64_pass *p, const lt_ival *v, int c)
{
    if (v && is_float(v) && p->cls[v->id] < c) {
        p->cls[v->id] = (uint8_t)c;
        p->changed = true;
    }
}

/* one forward sweep of the classes over block b */
static void classify_block(f64_pass *p, lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        int c = NEUTRAL, present = 0, floats = 0;
        bool float_out = false, other_kind = false;
        for (int j = 0; j < n->nin; j++) {
            lt_ival *v = n->in[j];
            if (!v)
                continue;
            present++;
            if (is_float(v)) {
                floats++;
                if (p->cls[v->id] > c)
                    c = p->cls[v->id];
                other_kind |= v->type.kind != LT_KIND_TENSOR;
            }
        }
        for (int j = 0; j < n->nout; j++) {
            lt_ival *v = n->out[j];
            if (v && is_float(v)) {
                float_out = true;
                other_kind |= v->type.kind != LT_KIND_TENSOR;
            }
        }
        if (n->nregions) {
            /* the bodies' parameters take the node's class (its inputs',
             * and its outputs' for a loop's state fed back) */
            int own = c;
            for (int j = 0; j < n->nout; j++)
                if (n->out[j] && is_float(n->out[j]) && p->cls[n->out[j]->id] > own)
                    own = p->cls[n->out[j]->id];
            for (int r = 0; r < n->nregions; r++) {
                lt_block *rb = n->regions[r];
                for (int k = 0; k < rb->nparams; k++)
                    raise_cls(p, rb->params[k], own);
                classify_block(p, rb);
                for (int k = 0; k < rb->nresults; k++)
                    if (rb->results[k] && is_float(rb->results[k]) && p->cls[rb->results[k]->id] > c)
                        c = p->cls[rb->results[k]->id];
            }
        }
        /* a float made of integers or bools alone (Cast of an int,
         * ConstantOfShape, EyeLike of an int) */
        if (float_out && present && !floats && c < COLD)
            c = COLD;
        /* sequences and optionals of floats cannot be cast: they widen */
        if (other_kind)
            c = HOT;
        for (int j = 0; j < n->nout; j++)
            raise_cls(p, n->out[j], c);
    }
}

/* whether node n computes in float64 */
static bool node_wide(const f64_pass *p, const lt_node *n)
{
    int c = NEUTRAL;
    bool float_out = false, all_wide = true;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && is_float(n->in[j]) && p->cls[n->in[j]->id] > c)
            c = p->cls[n->in[j]->id];
    for (int j = 0; j < n->nout; j++) {
        lt_ival *v = n->out[j];
        if (!v || !is_float(v))
            continue;
        float_out = true;
        if (p->cls[v->id] > c)
            c = p->cls[v->id];
        all_wide &= val_wide(p, v);
    }
    if (c != NEUTRAL)
        return c == HOT;
    return float_out && all_wide;
}

static void demote(f64_pass *p, lt_ival *v)
{
    if (v && is_float(v) && p->cls[v->id] == NEUTRAL && p->wide[v->id]) {
        p->wide[v->id] = false;
        p->changed = true;
    }
}

/* one sweep taking widening from the neutral values some node reads
 * without computing in float64 */
static void narrow_block(f64_pass *p, lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        bool w = node_wide(p, n);
        if (!w) {
            for (int j = 0; j < n->nin; j++)
                demote(p, n->in[j]);
            /* a neutral node computes in one type: all its outputs keep theirs */
            for (int j = 0; j < n->nout; j++)
                demote(p, n->out[j]);
        }
        /* a body's parameters have the node's type: a neutral one some node
         * of the body keeps in its type keeps the whole node in its own */
        for (int r = 0; w && r < n->nregions; r++)
            for (int k = 0; k < n->regions[r]->nparams; k++) {
                lt_ival *v = n->regions[r]->params[k];
                if (v && is_float(v) && !val_wide(p, v))
                    for (int j = 0; j < n->nout; j++)
                        demote(p, n->out[j]);
            }
        for (int r = 0; r < n->nregions; r++) {
            lt_block *rb = n->regions[r];
            if (!w) {
                for (int k = 0; k < rb->nparams; k++)
                    demote(p, rb->params[k]);
                for (int k = 0; k < rb->nresults; k++)
                    demote(p, rb->results[k]);
            }
            narrow_block(p, rb);
        }
    }
}

/* float attributes of a widened node (Cast's target, a Constant's value,
 * ConstantOfShape's default) */
static bool node_attrs_to_f64(lt_module *m, lt_node *n)
{
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
    return true;
}

/* A Cast of v to float64 placed at index `at` of block b (at ONNX opset
 * `opset`); its output, NULL on OOM */
static lt_ival *cast_up(lt_module *m, lt_block *b, int at, int opset, lt_ival *v)
{
    lt_node *c = lt_node_new(m, b, LT_OP_CAST, 1, 1);
    if (!c || lt_node_set_attrs(m, c, 1) != LT_OK)
        return NULL;
    c->opset = opset >= 6 ? opset : 13;
    c->attrs[0] = (lt_attr){.name = "to", .kind = LT_ATTR_INT, .i = LT_F64};
    char nm[512];
    snprintf(nm, sizeof nm, "%s_f64", v->name && *v->name ? v->name : "cast");
    c->name = lt_ir_strdup(m, nm);
    c->out[0] = lt_ival_new(m, b, nm);
    if (!c->name || !c->out[0])
        return NULL;
    c->out[0]->def = c;
    c->out[0]->type = v->type;
    c->out[0]->type.dtype = LT_F64;
    c->out[0]->uses = 1;
    c->in[0] = v;
    lt_block_place_at(b, c, at);
    return c->out[0];
}

static bool rewrite_block(f64_pass *p, lt_block *b, bool all)
{
    lt_module *m = p->m;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        bool w = all || node_wide(p, n);
        if (w && !node_attrs_to_f64(m, n))
            return false;
        for (int j = 0; w && !all && j < n->nin; j++) {
            lt_ival *v = n->in[j];
            if (!v || !widened(v->type.dtype) || val_wide(p, v))
                continue;
            lt_ival *c = cast_up(m, b, i, p->opset, v);
            if (!c)
                return false;
            n->in[j] = c; /* v's read moves to the Cast */
            i++;
        }
        for (int r = 0; r < n->nregions; r++) {
            lt_block *rb = n->regions[r];
            if (!rewrite_block(p, rb, all))
                return false;
            for (int k = 0; w && !all && k < rb->nresults; k++) {
                lt_ival *v = rb->results[k];
                if (!v || !widened(v->type.dtype) || val_wide(p, v))
                    continue;
                lt_ival *c = cast_up(m, rb, rb->nnodes, p->opset, v);
                if (!c)
                    return false;
                rb->results[k] = c;
            }
        }
    }
    return true;
}

lt_status lt_ir_to_f64(lt_module *m, lt_err *err)
{
    /* the AD's program (functions and the calls between them): all of it */
    bool all = m->nfuncs > 0;
    int nv = m->nvalues;
    int opset = 13;
    for (int i = 0; i < m->nopsets; i++)
        if (m->opsets[i].domain && (!*m->opsets[i].domain || !strcmp(m->opsets[i].domain, "ai.onnx")))
            opset = (int)m->opsets[i].version;
    f64_pass p = {.m = m, .nv = nv, .opset = opset, .cls = calloc(nv ? nv : 1, 1), .wide = malloc(sizeof(bool) * (nv ? nv : 1))};
    if (!p.cls || !p.wide) {
        free(p.cls);
        free(p.wide);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nv; i++)
        p.wide[i] = true;
    if (!all) {
        for (int k = 0; k < m->main->nparams; k++)
            raise_cls(&p, m->main->params[k], HOT);
        for (int i = 0; i < m->nparams; i++)
            if (m->params[i].value && (m->params[i].trainable || m->params[i].is_input_default))
                raise_cls(&p, m->params[i].value, HOT);
        do {
            p.changed = false;
            classify_block(&p, m->main);
        } while (p.changed);
        do {
            p.changed = false;
            narrow_block(&p, m->main);
        } while (p.changed);
    } else {
        for (int i = 0; i < nv; i++)
            p.cls[i] = HOT;
    }
    lt_status st = LT_OK;
    for (int i = 0; i < m->nparams && st == LT_OK; i++) {
        lt_ival *v = m->params[i].value;
        if (v && v->id < nv && !val_wide(&p, v) && !m->params[i].is_input_default)
            continue;
        if (!tensor_to_f64(m, &m->params[i].data, false))
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    /* the values the pass is about to add come after nv */
    for (int i = 0; i < nv && st == LT_OK; i++)
        if (val_wide(&p, m->values[i]))
            retype(&m->values[i]->type);
    for (int f = 0; f < m->nfuncs && st == LT_OK; f++)
        if (!rewrite_block(&p, m->funcs[f]->body, true))
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK && !rewrite_block(&p, m->main, all))
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    free(p.cls);
    free(p.wide);
    return st == LT_OK ? lt_infer_module(m, err) : st;
}
