/* Exporters' erf chains fused into one Gelu node before the AD (fuse_gelu.h). */
#include "fuse_gelu.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuse {
    lt_module *m;
    int *uses;      /* per value id: node inputs (regions included) and block results reading it */
    int *unhooked;  /* per value id: a value this pass took a reader from */
    lt_block *b;    /* the block being rewritten */
    bool *dead;     /* per node index of b */
    int nfused;
} fuse;

/* the one element of a constant tensor, or false */
static bool one_element(const lt_tensor *t, int max_rank, double *out)
{
    if (!t || t->numel != 1 || !t->data || t->rank > max_rank || !lt_dtype_is_float(t->dtype))
        return false;
    *out = lt_tensor_get_f64(t, 0);
    return true;
}

/* whether v is a constant (a Constant node's output or a frozen
 * initializer) of x's float type holding one element equal to want within
 * float32 rounding, of rank at most x's */
static bool const_is(const fuse *f, const lt_ival *v, const lt_ival *x, double want)
{
    if (!v || v->type.kind != LT_KIND_TENSOR || v->type.dtype != x->type.dtype)
        return false;
    int max_rank = x->type.rank < 0 ? 0 : x->type.rank;
    double c;
    if (v->def) {
        const lt_node *k = v->def;
        if (k->op != LT_OP_CONSTANT || k->nout != 1 || k->nin != 0 || k->nregions || k->nattr != 1)
            return false;
        const lt_attr *a = &k->attrs[0];
        if (a->kind == LT_ATTR_TENSOR && !strcmp(a->name, "value")) {
            if (!one_element(a->t, max_rank, &c))
                return false;
        } else if (a->kind == LT_ATTR_FLOAT && !strcmp(a->name, "value_float")) {
            c = a->f;
        } else {
            return false;
        }
    } else if (v->param >= 0 && v->param < f->m->nparams) {
        const lt_param *p = &f->m->params[v->param];
        if (p->value != v || p->trainable || p->is_input_default || !one_element(&p->data, max_rank, &c))
            return false;
    } else {
        return false;
    }
    return (float)c == (float)want;
}

/* v's defining node when it is a binary op of this block, not yet removed,
 * whose one output v is read by one reader alone */
static lt_node *sole_binary(const fuse *f, const lt_ival *v, lt_op op)
{
    lt_node *n = v ? v->def : NULL;
    if (!n || n->op != op || n->block != f->b || f->dead[n->index] || n->nin != 2 || n->nout != 1 ||
        n->out[0] != v || n->nregions || !n->in[0] || !n->in[1] || f->uses[v->id] != 1)
        return NULL;
    return n;
}

/* whether n is x * k or k * x (Mul) with k the constant want, or x / d
 * (Div) with d = 1 / want; *x receives x */
static bool scales_by(const fuse *f, const lt_node *n, double want, lt_ival **x)
{
    if (n->op == LT_OP_DIV) {
        *x = n->in[0];
        return const_is(f, n->in[1], n->in[0], 1.0 / want);
    }
    for (int j = 0; j < 2; j++)
        if (const_is(f, n->in[1 - j], n->in[j], want)) {
            *x = n->in[j];
            return true;
        }
    return false;
}

static bool float_tensor(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_TENSOR && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64);
}

/* a = 1 + erf(x / sqrt 2) (the forms fuse_gelu.h lists) for this x;
 * chain[0..2] receive the Add, the Erf and the scaling node */
static bool one_plus_erf(const fuse *f, const lt_ival *a, const lt_ival *x, lt_node **chain)
{
    lt_node *add = sole_binary(f, a, LT_OP_ADD);
    if (!add)
        return false;
    for (int j = 0; j < 2; j++) {
        lt_ival *e = add->in[j];
        if (!const_is(f, add->in[1 - j], e, 1.0))
            continue;
        lt_node *erf = e->def;
        if (!erf || erf->op != LT_OP_ERF || erf->block != f->b || f->dead[erf->index] || erf->nin != 1 ||
            erf->nout != 1 || erf->out[0] != e || erf->nregions || f->uses[e->id] != 1 || !erf->in[0])
            continue;
        lt_ival *t = erf->in[0], *x2 = NULL;
        lt_node *s = sole_binary(f, t, LT_OP_MUL);
        if (!s)
            s = sole_binary(f, t, LT_OP_DIV);
        if (!s || !scales_by(f, s, M_SQRT1_2, &x2) || x2 != x)
            continue;
        chain[0] = add;
        chain[1] = erf;
        chain[2] = s;
        return true;
    }
    return false;
}

/* x * (1 + erf(x / sqrt 2)) for the product p (either order): *x receives
 * x, chain[0..3] the nodes it takes */
static bool x_times_cdf(const fuse *f, const lt_node *p, lt_ival **x, lt_node **chain)
{
    for (int j = 0; j < 2; j++)
        if (float_tensor(p->in[j]) && one_plus_erf(f, p->in[1 - j], p->in[j], chain)) {
            *x = p->in[j];
            return true;
        }
    return false;
}

/* n: the last node of an exact GELU chain? On a match *x receives its
 * input and chain (4 nodes) the nodes n replaces besides n; returns how many */
static int match(const fuse *f, const lt_node *n, lt_ival **x, lt_node **chain)
{
    if ((n->op != LT_OP_MUL && n->op != LT_OP_DIV) || n->nin != 2 || n->nout != 1 || !n->out[0] || n->nregions ||
        !n->in[0] || !n->in[1])
        return 0;
    /* (x (1 + erf)) * 0.5, 0.5 * (x (1 + erf)), (x (1 + erf)) / 2 */
    for (int j = 0; j < (n->op == LT_OP_MUL ? 2 : 1); j++) {
        lt_node *p = sole_binary(f, n->in[j], LT_OP_MUL);
        if (!p)
            continue;
        bool half = n->op == LT_OP_MUL ? const_is(f, n->in[1 - j], n->in[j], 0.5) : const_is(f, n->in[1], n->in[0], 2.0);
        if (half && x_times_cdf(f, p, x, chain + 1)) {
            chain[0] = p;
            return 4;
        }
    }
    if (n->op != LT_OP_MUL)
        return 0;
    /* (x * 0.5) (1 + erf), (x / 2) (1 + erf), either order */
    for (int j = 0; j < 2; j++) {
        lt_node *h = sole_binary(f, n->in[j], LT_OP_MUL);
        if (!h)
            h = sole_binary(f, n->in[j], LT_OP_DIV);
        lt_ival *hx = NULL;
        if (h && scales_by(f, h, 0.5, &hx) && float_tensor(hx) && one_plus_erf(f, n->in[1 - j], hx, chain + 1)) {
            chain[0] = h;
            *x = hx;
            return 4;
        }
    }
    return 0;
}

static void unread(fuse *f, lt_ival *v)
{
    if (!v)
        return;
    f->uses[v->id]--;
    f->unhooked[v->id] = true;
}

/* n becomes Gelu(x) {approximate = "none"} */
static lt_status to_gelu(fuse *f, lt_node *n, lt_ival *x)
{
    lt_attr *at = lt_ir_alloc(f->m, sizeof *at);
    if (!at)
        return LT_ERR_NOMEM;
    at->name = "approximate";
    at->kind = LT_ATTR_STRING;
    at->s = "none";
    at->slen = 4;
    for (int j = 0; j < n->nin; j++)
        unread(f, n->in[j]);
    n->op = LT_OP_GELU;
    n->opset = 20;
    n->domain_name = "";
    n->nin = 1;
    n->in[0] = x;
    n->nattr = 1;
    n->attrs = at;
    f->uses[x->id]++;
    return LT_OK;
}

static lt_status fuse_block(lt_block *b, void *ctx)
{
    fuse *f = ctx;
    bool *dead = f->dead;
    f->b = b;
    lt_status s = LT_OK;
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i], *chain[4];
        lt_ival *x = NULL;
        int k = match(f, n, &x, chain);
        if (!k)
            continue;
        for (int c = 0; c < k; c++) {
            dead[chain[c]->index] = true;
            for (int j = 0; j < chain[c]->nin; j++)
                unread(f, chain[c]->in[j]);
        }
        s = to_gelu(f, n, x);
        f->nfused++;
    }
    /* the chains' Constant nodes that nothing reads any more */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *k = b->nodes[i];
        if (!dead[i] && k->op == LT_OP_CONSTANT && k->nout == 1 && k->out[0] && f->unhooked[k->out[0]->id] &&
            f->uses[k->out[0]->id] == 0)
            dead[i] = true;
    }
    return s;
}

lt_status lt_ir_fuse_gelu(lt_module *m, int *nfused, lt_err *err)
{
    fuse f = {.m = m};
    lt_rewrite r = {.block = fuse_block, .ctx = &f, .count = &f.nfused, .uses = &f.uses, .dead = &f.dead,
                    .marks = &f.unhooked, .recount = LT_RECOUNT_IF_COUNTED, .doing = "fusing GELU chains"};
    return lt_module_rewrite(m, &r, nfused, err);
}
