/* Scalar scales folded into matrix products (fold_scale.h). */
#include "fold_scale.h"
#include "matmul_trans.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fold {
    lt_module *m;
    int *uses;  /* per value id: node inputs (regions included) and block results reading it */
    bool *dead; /* per node index of the block being rewritten */
    int nfolded;
} fold;

static bool float_tensor(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_TENSOR && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64) &&
           v->type.rank >= 2;
}

static bool one_element(const lt_tensor *t, int max_rank, double *out)
{
    if (!t || t->numel != 1 || !t->data || t->rank > max_rank || !lt_dtype_is_float(t->dtype))
        return false;
    *out = lt_tensor_get_f64(t, 0);
    return isfinite(*out);
}

/* v: a constant of x's type (a Constant node's output or a frozen
 * initializer) holding one finite element, of rank at most x's? *c
 * receives it. */
static bool scalar_const(const fold *f, const lt_ival *v, const lt_ival *x, double *c)
{
    if (!v || v->type.kind != LT_KIND_TENSOR || v->type.dtype != x->type.dtype || v->type.rank < 0 ||
        v->type.rank > x->type.rank)
        return false;
    int max_rank = x->type.rank;
    if (v->def) {
        const lt_node *k = v->def;
        if (k->op != LT_OP_CONSTANT || k->nout != 1 || k->nin != 0 || k->nregions || k->nattr != 1)
            return false;
        const lt_attr *a = &k->attrs[0];
        if (a->kind == LT_ATTR_TENSOR && !strcmp(a->name, "value"))
            return a->t && a->t->dtype == x->type.dtype && one_element(a->t, max_rank, c);
        if (a->kind == LT_ATTR_FLOAT && !strcmp(a->name, "value_float") && x->type.dtype == LT_F32) {
            *c = a->f;
            return isfinite(*c);
        }
        return false;
    }
    if (v->param >= 0 && v->param < f->m->nparams) {
        const lt_param *p = &f->m->params[v->param];
        return p->value == v && !p->trainable && !p->is_input_default && p->data.dtype == x->type.dtype &&
               one_element(&p->data, max_rank, c);
    }
    return false;
}

/* the alpha a product of dtype dt may take: exact in float32 for float64
 * operands (their sums are exact to far more), rounded to float32 for
 * float32 ones; false for a product that would overflow or vanish */
static bool alpha_ok(lt_dtype dt, double a, float *out)
{
    float af = (float)a;
    if (!isfinite(af) || af == 0.0f || (dt == LT_F64 && (double)af != a))
        return false;
    *out = af;
    return true;
}

/* n = Mul(X, c), Mul(c, X) or (div) Div(X, c) with c a scalar constant?
 * *x and *c (the factor: 1 / c for Div) receive them */
static bool scaling(const fold *f, const lt_node *n, lt_ival **x, double *c)
{
    if ((n->op != LT_OP_MUL && n->op != LT_OP_DIV) || n->nin != 2 || n->nout != 1 || !n->out[0] || n->nregions ||
        !n->in[0] || !n->in[1] || !float_tensor(n->out[0]))
        return false;
    for (int j = 0; j < (n->op == LT_OP_MUL ? 2 : 1); j++) {
        double k;
        if (float_tensor(n->in[j]) && scalar_const(f, n->in[1 - j], n->in[j], &k)) {
            if (n->op == LT_OP_DIV && k == 0)
                return false;
            *x = n->in[j];
            *c = n->op == LT_OP_DIV ? 1.0 / k : k;
            return true;
        }
    }
    return false;
}

/* Mul(P, c) or Div(P, c): P's product in n's place with alpha times the factor c */
static lt_status into_producer(fold *f, lt_block *b, bool *dead, lt_node *n, lt_ival *x, double c, bool *done)
{
    lt_node *p = x->def;
    *done = false;
    if (!p || p->block != b || dead[p->index] || !lt_ir_is_float_product(p) || p->out[0] != x || f->uses[x->id] != 1)
        return LT_OK;
    float a;
    if (!alpha_ok(x->type.dtype, (double)lt_ir_product_alpha(p) * c, &a))
        return LT_OK;
    lt_status s = lt_ir_set_product(f->m, n, p->in[0], p->in[1], lt_ir_product_trans(p, "transA"),
                                    lt_ir_product_trans(p, "transB"), a);
    if (s == LT_OK) {
        dead[p->index] = true;
        f->uses[x->id] = 0;
        *done = true;
    }
    return s;
}

/* Mul(X, c) or Div(X, c) read by products of this block alone: each reads
 * X with the factor c in its alpha, n dropped */
static lt_status into_readers(fold *f, lt_block *b, bool *dead, lt_node *n, lt_ival *x, double c, bool *done)
{
    lt_ival *y = n->out[0];
    *done = false;
    int reads = 0;
    for (int i = n->index + 1; i < b->nnodes; i++) {
        const lt_node *r = b->nodes[i];
        if (dead[i])
            continue;
        int k = (r->nin > 0 && r->in[0] == y) + (r->nin > 1 && r->in[1] == y);
        for (int j = 2; j < r->nin; j++)
            k += r->in[j] == y;
        if (!k)
            continue;
        float a;
        double sc = (double)lt_ir_product_alpha(r) * c * ((r->nin > 1 && r->in[0] == y && r->in[1] == y) ? c : 1.0);
        if (!lt_ir_is_float_product(r) || !alpha_ok(y->type.dtype, sc, &a))
            return LT_OK;
        reads += k;
    }
    if (reads == 0 || reads != f->uses[y->id])
        return LT_OK;
    for (int i = n->index + 1; i < b->nnodes; i++) {
        lt_node *r = b->nodes[i];
        if (dead[i] || r->nin < 2 || (r->in[0] != y && r->in[1] != y))
            continue;
        float a = 1.0f;
        double sc = (double)lt_ir_product_alpha(r) * c * ((r->in[0] == y && r->in[1] == y) ? c : 1.0);
        (void)alpha_ok(y->type.dtype, sc, &a); /* checked in the first loop */
        lt_status s = lt_ir_set_product(f->m, r, r->in[0] == y ? x : r->in[0], r->in[1] == y ? x : r->in[1],
                                        lt_ir_product_trans(r, "transA"), lt_ir_product_trans(r, "transB"), a);
        if (s != LT_OK)
            return s;
    }
    f->uses[x->id] += reads - 1;
    f->uses[y->id] = 0;
    dead[n->index] = true;
    *done = true;
    return LT_OK;
}

static lt_status fold_block(lt_block *b, void *ctx)
{
    fold *f = ctx;
    lt_status s = LT_OK;
    bool *dead = f->dead;
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i];
        lt_ival *x;
        double c;
        if (dead[i] || !scaling(f, n, &x, &c))
            continue;
        bool done = false;
        s = into_producer(f, b, dead, n, x, c, &done);
        if (s == LT_OK && !done)
            s = into_readers(f, b, dead, n, x, c, &done);
        f->nfolded += done;
    }
    return s;
}

lt_status lt_ir_fold_scale(lt_module *m, int *nfolded, lt_err *err)
{
    fold f = {.m = m};
    lt_rewrite r = {.block = fold_block, .ctx = &f, .count = &f.nfolded, .uses = &f.uses, .dead = &f.dead,
                    .recount = LT_RECOUNT_ALWAYS, .doing = "folding scales into matrix products"};
    return lt_module_rewrite(m, &r, nfolded, err);
}
