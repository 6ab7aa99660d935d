/* The CPS transform. ad_block(c, src, i, kont) writes node i's forward, then
 * (through the recursion) everything after it and finally the
 * meta-continuation kont, then node i's backward: for a block that is the
 * forward in order followed by the backward in reverse order (the paper's
 * Figure 9, with shift/reset moved into the translator). Adjoints are
 * accumulation cells: AccZerosLike when a value is defined, AccAdd from each
 * use's backward, AccRead when the defining node's backward runs.
 *
 * If: the continuation is reified once as an IR function whose parameters are
 * the If's results and their cells (plus what it captures); each branch runs
 * its forward, calls it, then runs its backward.
 * Loop and Scan: a recursive IR function per loop (ad_loop.c). */
#include "ad_impl.h"
#include "../ir/fuse_gelu.h"
#include "../ir/swap_relu_pool.h"
#include <stdlib.h>
#include <string.h>

/* Marks each parameter n reads through an input its op takes no gradient
 * for by design (lt_ad_nondiff) while the parameter is differentiated. */
static void note_no_grad(lt_ad *c, const lt_node *n)
{
    for (int j = 0; j < n->nin && j < 32; j++) {
        const lt_ival *v = n->in[j];
        if (!v || v->param < 0 || v->param >= c->m->nparams || !lt_ad_input_nondiff(n, j) ||
            v->id >= c->nsrc || !c->active[v->id] || c->m->params[v->param].no_grad)
            continue;
        char why[96];
        snprintf(why, sizeof why, "%s input %d", lt_op_names[n->op], j);
        c->m->params[v->param].no_grad = lt_ir_strdup(c->m, why);
    }
}

/* Whether an active value enters an input its op takes no gradient for
 * anywhere in b (regions included). */
static bool meets_nondiff(const lt_ad *c, const lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin && j < 32; j++)
            if (n->in[j] && n->in[j]->id < c->nsrc && c->active[n->in[j]->id] && lt_ad_input_nondiff(n, j))
                return true;
        for (int r = 0; r < n->nregions; r++)
            if (meets_nondiff(c, n->regions[r]))
                return true;
    }
    return false;
}

/* Marks each differentiated parameter that reaches the loss only through
 * inputs their ops take no gradient for, over any number of other ops (a
 * box tensor scaled before RoiAlign's rois): its gradient is zero by
 * design, as note_no_grad's are, where finite differences see the path.
 * Activity from that parameter alone, followed through differentiable
 * inputs only, does not reach the loss. Only where some active value meets
 * such an input at all. */
static lt_status note_unreached(lt_ad *c, const lt_block *src, const lt_ival *loss)
{
    if (!meets_nondiff(c, src))
        return LT_OK;
    bool *all = c->active, *one = calloc((size_t)c->nsrc + 1, sizeof *one);
    if (!one)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    c->active = one;
    c->diff_only = true;
    for (int p = 0; p < c->m->nparams; p++) {
        lt_param *pp = &c->m->params[p];
        if (!pp->trainable || pp->no_grad || !pp->value || pp->value->id >= c->nsrc || !all[pp->value->id])
            continue;
        memset(one, 0, sizeof *one * ((size_t)c->nsrc + 1));
        c->blocked = NULL;
        lt_ad_mark(c, pp->value);
        while (lt_ad_activity_pass(c, src))
            ;
        if (one[loss->id] || !c->blocked)
            continue;
        char why[96];
        snprintf(why, sizeof why, "%s input %d", lt_op_names[c->blocked->op], c->blocked_in);
        if (!(pp->no_grad = lt_ir_strdup(c->m, why)))
            break;
    }
    c->active = all;
    c->diff_only = false;
    free(one);
    return LT_OK;
}

/* The backward of a straight-line node. */
static lt_status backward(lt_ad *c, const lt_node *n)
{
    note_no_grad(c, n);
    bool any = false;
    for (int j = 0; j < n->nin; j++)
        any |= lt_ad_wants(c, n, j);
    if (!any)
        return LT_OK;
    lt_ival *dout[64] = {0}, *in[64] = {0}, *out[64] = {0};
    if (n->nin > 64 || n->nout > 64)
        return lt_ad_fail(c, n, "too many inputs or outputs to differentiate");
    bool have_adjoint = false;
    for (int j = 0; j < n->nout; j++) {
        out[j] = lt_ad_mapped(c, n->out[j]);
        if (n->out[j] && c->cell[n->out[j]->id]) {
            dout[j] = lt_ad_op1(c, LT_OP_ACC_READ, c->cell[n->out[j]->id]);
            if (!dout[j])
                return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
            dout[j]->type = n->out[j]->type;
            have_adjoint = true;
        }
    }
    if (!have_adjoint)
        return LT_OK;
    for (int j = 0; j < n->nin; j++)
        in[j] = lt_ad_mapped(c, n->in[j]);
    if (!lt_ad_rules[n->op])
        return lt_ad_fail(c, n, "no gradient rule for op %s", lt_op_names[n->op]);
    return lt_ad_rules[n->op](c, n, in, out, dout);
}

/* ---- the transform ---- */

static bool node_active(lt_ad *c, const lt_node *n)
{
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && c->active[n->out[j]->id])
            return true;
    return false;
}

typedef struct if_branch_env {
    lt_func *k1;
    const lt_node *n;
    int r;
    int nesc; /* escaping values k1 returns (lt_ad.esc) */
} if_branch_env;

/* Inside a branch, once its forward is written: call the continuation with
 * the branch's results and their cells. */
static lt_status if_branch_kont(lt_ad *c, void *envp)
{
    if_branch_env *e = envp;
    const lt_block *rb = e->n->regions[e->r];
    lt_ival **args = calloc(2 * e->n->nout + 1, sizeof *args);
    if (!args)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    int na = 0;
    for (int j = 0; j < e->n->nout; j++)
        if (e->n->out[j])
            args[na++] = lt_ad_mapped(c, rb->results[j]);
    lt_status s = LT_OK;
    for (int j = 0; j < e->n->nout && s == LT_OK; j++) {
        if (!e->n->out[j] || !c->active[e->n->out[j]->id])
            continue;
        const lt_ival *src = rb->results[j];
        lt_ival *cell = src->id < c->nsrc ? c->cell[src->id] : NULL;
        if (!cell)
            cell = lt_ad_new_cell(c, lt_ad_mapped(c, src));
        args[na++] = cell;
        if (!cell)
            s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    }
    lt_node *call = s == LT_OK ? lt_ad_call(c, e->k1, na, args, e->nesc) : NULL;
    if (s == LT_OK && !call)
        s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    for (int r = 0; call && r < e->nesc; r++) {
        call->out[r]->type = e->k1->body->results[r]->type;
        c->esc[r] = call->out[r];
    }
    free(args);
    return s;
}

/* whether the escaping values changed from was[] (made while writing a
 * continuation, so held in its function's body) */
static bool esc_moved(const lt_ad *c, lt_ival *const *was)
{
    for (int r = 0; r < c->nesc; r++)
        if (c->esc[r] != was[r])
            return true;
    return false;
}

static lt_status ad_if(lt_ad *c, const lt_block *b, int i, lt_ad_kont k)
{
    const lt_node *n = b->nodes[i];
    lt_status s;
    /* continuation k1(results..., result cells..., captures...) */
    char nm[300];
    snprintf(nm, sizeof nm, "k_after_%s", *n->name ? n->name : "if");
    lt_func *f = lt_module_add_func(c->m, nm);
    if (!f)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    int np = 0;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j])
            np += 1 + (c->active[n->out[j]->id] ? 1 : 0);
    if ((s = lt_block_set_params(c->m, f->body, np)) != LT_OK)
        return s;
    int p = 0;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j]) {
            lt_ival *v = lt_ival_new(c->m, f->body, n->out[j]->name);
            v->type = n->out[j]->type;
            f->body->params[p++] = v;
            c->map[n->out[j]->id] = v;
        }
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && c->active[n->out[j]->id]) {
            lt_ival *v = lt_ival_new(c->m, f->body, "cell");
            v->type = n->out[j]->type;
            v->type.kind = LT_KIND_CELL;
            f->body->params[p++] = v;
            c->cell[n->out[j]->id] = v;
        }
    lt_block *saved = c->out;
    lt_ival *was[64];
    if (c->nesc > 64)
        return lt_ad_fail(c, n, "too many values to return from a loop iteration");
    for (int r = 0; r < c->nesc; r++)
        was[r] = c->esc[r];
    c->out = f->body;
    s = lt_ad_block(c, b, i + 1, k);
    c->out = saved;
    /* a loop iteration's results made in the continuation leave it as its
     * results, then as each branch's and the If's */
    int nesc = s == LT_OK && esc_moved(c, was) ? c->nesc : 0;
    if (s == LT_OK)
        s = lt_block_set_results(c->m, f->body, nesc);
    for (int r = 0; r < nesc; r++)
        f->body->results[r] = c->esc[r];
    if (s != LT_OK)
        return s;
    /* if (c) { then-forward; k1(...); then-backward } else { ... } */
    lt_node *iff = lt_node_new(c->m, c->out, LT_OP_IF, 1, nesc);
    if (!iff || lt_node_set_regions(c->m, iff, 2) != LT_OK)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    iff->opset = n->opset;
    iff->name = n->name;
    iff->in[0] = lt_ad_mapped(c, n->in[0]);
    iff->attrs = n->attrs;
    iff->nattr = n->nattr;
    for (int r = 0; r < 2 && s == LT_OK; r++) {
        lt_block *rb = lt_block_new(c->m, c->out, n->regions[r]->name);
        rb->owner = iff;
        iff->regions[r] = rb;
        if_branch_env e = {f, n, r, nesc};
        lt_block *outer = c->out;
        c->out = rb;
        s = lt_ad_block(c, n->regions[r], 0, (lt_ad_kont){if_branch_kont, &e});
        c->out = outer;
        if (s == LT_OK)
            s = lt_block_set_results(c->m, rb, nesc);
        for (int q = 0; q < nesc && s == LT_OK; q++)
            rb->results[q] = c->esc[q];
    }
    for (int q = 0; q < nesc && s == LT_OK; q++) {
        lt_ival *o = lt_ival_new(c->m, c->out, "iteration_result");
        if (!o)
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
        o->type = f->body->results[q]->type;
        o->def = iff;
        iff->out[q] = o;
        c->esc[q] = o;
    }
    return s;
}

lt_status lt_ad_block(lt_ad *c, const lt_block *b, int i, lt_ad_kont k)
{
    if (i == b->nnodes)
        return k.fn(c, k.env);
    const lt_node *n = b->nodes[i];
    bool act = node_active(c, n);
    if (act && n->op == LT_OP_IF)
        return ad_if(c, b, i, k);
    if (act && (n->op == LT_OP_LOOP || n->op == LT_OP_SCAN))
        return lt_ad_loop(c, b, i, k);
    if (act && n->nregions)
        return lt_ad_fail(c, n, "differentiating through %s is not supported", lt_op_names[n->op]);
    lt_status s = lt_ad_clone_node(c, n);
    if (s == LT_OK && act)
        s = lt_ad_make_cells(c, n->out, n->nout);
    if (s == LT_OK)
        s = lt_ad_block(c, b, i + 1, k);
    if (s == LT_OK && act)
        s = backward(c, n);
    return s;
}

/* What the whole program's continuation does once the loss is computed:
 * seed its adjoint with 1 and record its value. */
/* the loss's own float type (float32 where it is not known to be a float) */
static lt_dtype loss_dtype(const lt_ival *loss) { return lt_ad_float_dtype(loss); }

static lt_status top_kont(lt_ad *c, void *env)
{
    (void)env;
    lt_ival *L = lt_ad_mapped(c, c->loss_src);
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    a->in[0] = c->loss_cell;
    a->in[1] = L;
    if (c->cell[c->loss_src->id]) {
        lt_ival *one = lt_ad_scalar(c, loss_dtype(c->loss_src), 1.0);
        lt_node *s = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
        if (!one || !s)
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
        s->in[0] = c->cell[c->loss_src->id];
        s->in[1] = one;
    }
    return LT_OK;
}

/* Whether main input k has a trainable default: an initializer listed
 * among the graph's inputs too (IR 3, or keep_initializers_as_inputs). Its
 * gradient is the parameter's. */
static bool trained_default(const lt_module *m, int k)
{
    return m->input_default && m->input_default[k] >= 0 && m->params[m->input_default[k]].trainable;
}

/* The cell holding parameter p's gradient: its value's, or for an input's
 * default the input's (the input shadows the initializer); NULL when the
 * loss does not reach it, or p is not trained (a frozen or constant
 * initializer can still be active: the start of a Loop or Scan state whose
 * body mixes in trained weights). */
static lt_ival *param_cell(const lt_ad *c, const lt_block *src, int p)
{
    const lt_module *m = c->m;
    const lt_ival *pv = m->params[p].value;
    if (!m->params[p].trainable)
        return NULL;
    if (c->active[pv->id])
        return c->cell[pv->id];
    for (int k = 0; m->params[p].is_input_default && m->input_default && k < src->nparams; k++)
        if (m->input_default[k] == p && trained_default(m, k) && c->active[src->params[k]->id])
            return c->cell[src->params[k]->id];
    return NULL;
}

lt_status lt_ad_transform(lt_module *m, const lt_ad_spec *spec, lt_err *err)
{
    lt_ad_rules_init();
    lt_ival *extra[64];
    int nextra = 0;
    lt_ival *loss = NULL;
    if (spec->loss == LT_AD_LOSS_SEEDS && spec->nseeds > 64)
        return lt_errf(err, LT_ERR_INVALID, "too many seeds");
    lt_status s = lt_ad_expand_flex_attention(m, err);
    if (s == LT_OK)
        s = lt_ir_loop_lists_to_scans(m, err);
    if (s == LT_OK)
        s = lt_ir_fuse_gelu(m, NULL, err); /* exporters' erf chains: one node whose gradient recomputes */
    if (s == LT_OK)
        s = lt_ir_swap_relu_pool(m, NULL, err); /* Relu after MaxPool: on the pooled tensor, forward and back */
    if (s == LT_OK)
        s = lt_ad_append_loss(m, spec, &loss, &nextra, extra, err);
    if (s == LT_OK)
        s = lt_infer_module(m, err);
    if (s != LT_OK)
        return s;
    lt_ad c = {.m = m, .err = err, .spec = spec, .nsrc = m->nvalues, .loss_src = loss};
    c.map = calloc(c.nsrc + 1, sizeof *c.map);
    c.cell = calloc(c.nsrc + 1, sizeof *c.cell);
    c.active = calloc(c.nsrc + 1, sizeof *c.active);
    if (!c.map || !c.cell || !c.active) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    lt_block *src = m->main;
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].trainable && !m->params[p].is_input_default)
            lt_ad_mark(&c, m->params[p].value);
    if (spec->wrt_inputs)
        for (int p = 0; p < src->nparams; p++)
            lt_ad_mark(&c, src->params[p]);
    /* defaults that an input may override are parameters too */
    for (int p = 0; p < src->nparams; p++)
        if (m->input_default && m->input_default[p] >= 0 && m->params[m->input_default[p]].trainable)
            lt_ad_mark(&c, src->params[p]);
    while (lt_ad_activity_pass(&c, src))
        ;
    if ((s = note_unreached(&c, src, loss)) != LT_OK)
        goto done;
    bool *taint = calloc(c.nsrc + 1, sizeof *taint);
    const lt_node *cut = NULL;
    if (!taint) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    while (lt_ad_taint_pass(&c, src, taint, &cut))
        ;
    bool cut_loss = taint[loss->id];
    free(taint);
    if (cut_loss) {
        s = lt_ad_fail(&c, cut, "the loss depends on the %s this node makes of a differentiated value, and "
                                "gradients are followed through sequences only from SplitToSequence to SequenceAt, "
                                "and through a list a Loop appends to (SequenceEmpty before it, one SequenceInsert "
                                "at the end of each iteration, read by ConcatFromSequence after it)",
                       cut->out[0] && cut->out[0]->type.kind == LT_KIND_OPTIONAL ? "optional" : "sequence");
        goto done;
    }

    lt_block *nb = lt_block_new(m, NULL, "main");
    if (!nb || (s = lt_block_set_params(m, nb, src->nparams + nextra)) != LT_OK) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int p = 0; p < src->nparams + nextra; p++) {
        const lt_ival *sv = p < src->nparams ? src->params[p] : extra[p - src->nparams];
        nb->params[p] = lt_ival_new(m, nb, sv->name);
        nb->params[p]->type = sv->type;
        c.map[sv->id] = nb->params[p];
    }
    c.out = nb;
    /* cells for what is differentiated, and for the loss value */
    for (int p = 0; p < m->nparams && s == LT_OK; p++)
        if (c.active[m->params[p].value->id]) {
            lt_ival *pv = m->params[p].value;
            c.cell[pv->id] = lt_ad_new_cell(&c, pv);
        }
    for (int p = 0; p < src->nparams; p++)
        if (c.active[src->params[p]->id])
            c.cell[src->params[p]->id] = lt_ad_new_cell(&c, nb->params[p]);
    lt_ival *zero = lt_ad_scalar(&c, loss_dtype(loss), 0.0);
    c.loss_cell = lt_ad_new_cell(&c, zero);
    if (!c.loss_cell) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    int first_func = m->nfuncs;
    s = lt_ad_block(&c, src, 0, (lt_ad_kont){top_kont, NULL});
    if (s == LT_OK)
        s = lt_ad_close_all(&c, nb, first_func);
    if (s != LT_OK)
        goto done;

    /* results: loss, then gradients, then the final contents of the cells
     * the source program made in its main block (program state, such as
     * batch norms' running statistics: ir/train_mode.c) */
    int nres = 1, nstate = 0;
    for (int i = 0; i < src->nnodes; i++)
        nstate += src->nodes[i]->op == LT_OP_ACC_ZEROS_LIKE && src->nodes[i]->nout == 1;
    nres += nstate;
    for (int p = 0; p < m->nparams; p++)
        nres += param_cell(&c, src, p) != NULL;
    for (int p = 0; spec->wrt_inputs && p < src->nparams; p++)
        nres += c.active[src->params[p]->id] && src->params[p]->type.kind == LT_KIND_TENSOR && !trained_default(m, p);
    s = lt_block_set_results(m, nb, nres);
    int r = 0;
    lt_ival *lv = lt_ad_op1(&c, LT_OP_ACC_READ, c.loss_cell);
    lv->name = "loss";
    lv->type = loss->type;
    nb->results[r++] = lv;
    for (int p = 0; p < m->nparams; p++) {
        lt_ival *pv = m->params[p].value, *cell = param_cell(&c, src, p);
        if (!cell)
            continue;
        lt_ival *g = lt_ad_op1(&c, LT_OP_ACC_READ, cell);
        char nm[512];
        snprintf(nm, sizeof nm, "%s_grad", m->params[p].name);
        g->name = lt_ir_strdup(m, nm);
        g->type = pv->type;
        nb->results[r++] = g;
    }
    for (int p = 0; spec->wrt_inputs && p < src->nparams; p++) {
        if (!c.active[src->params[p]->id] || src->params[p]->type.kind != LT_KIND_TENSOR || trained_default(m, p))
            continue;
        lt_ival *g = lt_ad_op1(&c, LT_OP_ACC_READ, c.cell[src->params[p]->id]);
        char nm[512];
        snprintf(nm, sizeof nm, "%s_grad", src->params[p]->name);
        g->name = lt_ir_strdup(m, nm);
        g->type = src->params[p]->type;
        nb->results[r++] = g;
    }
    for (int i = 0; i < src->nnodes && nstate; i++) {
        const lt_node *sn = src->nodes[i];
        if (sn->op != LT_OP_ACC_ZEROS_LIKE || sn->nout != 1)
            continue;
        lt_ival *cell = lt_ad_mapped(&c, sn->out[0]);
        lt_ival *v = cell ? lt_ad_op1(&c, LT_OP_ACC_READ, cell) : NULL;
        if (!v) {
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
            goto done;
        }
        v->name = sn->out[0]->name;
        v->type = sn->out[0]->type;
        v->type.kind = LT_KIND_TENSOR;
        nb->results[r++] = v;
    }
    /* the new program replaces the old one; inputs keep their defaults */
    if (nextra && m->input_default) {
        int *d = lt_ir_alloc(m, sizeof *d * (src->nparams + nextra));
        memcpy(d, m->input_default, sizeof *d * src->nparams);
        for (int e = 0; e < nextra; e++)
            d[src->nparams + e] = -1;
        m->input_default = d;
    }
    m->main = nb;
    s = lt_ad_dce(m, err);
    if (s == LT_OK)
        s = lt_infer_module(m, err);
    if (s == LT_OK)
        s = lt_ir_verify(m, err);
done:
    free(c.map);
    free(c.cell);
    free(c.active);
    return s;
}

/* A transform rewrites the IR that sessions of m run from: none may be live. */
static lt_status no_live_sessions(const lt_model *m, const char *what, lt_err *err)
{
    int n = __atomic_load_n(&m->live_sessions, __ATOMIC_SEQ_CST);
    if (n > 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s rewrites the model, and %d session%s of it %s live (free them "
                       "first)", m->path, what, n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
    return LT_OK;
}

lt_status lt_model_tie_transposed(lt_model *m, int *ntied, char *list, size_t len, lt_err *err)
{
    int none = 0;
    lt_status s = no_live_sessions(m, "lt_model_tie_transposed", err);
    return s != LT_OK ? s : lt_ir_tie_transposed_params(m, ntied ? ntied : &none, list, len, err);
}

lt_status lt_model_class_axis(const lt_model *m, const char *output, int rank, const int64_t *dims, int *axis,
                              lt_err *err)
{
    const lt_block *b = m->main;
    const lt_ival *y = b->nresults > 0 && !output ? b->results[0] : NULL;
    for (int r = 0; output && r < b->nresults && !y; r++)
        if (!strcmp(b->results[r]->name, output))
            y = b->results[r];
    if (!y)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output %s%s%s", m->path, output ? "named '" : "",
                       output ? output : "", output ? "'" : "");
    *axis = -1;
    if (y->type.rank <= 2)
        return LT_OK;
    int fit = lt_ad_class_axes_fit(&y->type, rank, dims);
    char lab[160] = "";
    for (int d = 0, at = 0; d < rank && at + 24 < (int)sizeof lab; d++)
        at += dims[d] < 0 ? snprintf(lab + at, sizeof lab - (size_t)at, "%s%s", d ? "," : "[", d ? "?" : "N")
                          : snprintf(lab + at, sizeof lab - (size_t)at, "%s%lld", d ? "," : "[", (long long)dims[d]);
    if (rank > 0)
        strcat(lab, "]");
    if (fit == 3)
        return lt_errf(err, LT_ERR_INVALID, "%s: labels %s fit output '%s' with its classes on axis 1 ([N, C, ...], as "
                       "PyTorch's losses read them) and on the last axis ([N, ..., C]); say which with --class-axis 1 "
                       "or --class-axis -1", m->path, lab, y->name);
    if (!fit)
        return lt_errf(err, LT_ERR_INVALID, "%s: labels %s fit output '%s' neither with its classes on axis 1 nor on "
                       "the last axis: they take the output's other axes", m->path, lab, y->name);
    *axis = fit == 2 ? 1 : -1;
    return LT_OK;
}

lt_status lt_model_grad(lt_model *m, const lt_grad_opts *o, lt_err *err)
{
    if (!o)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_grad: no options given");
    lt_status ls = no_live_sessions(m, "lt_model_grad", err);
    if (ls != LT_OK)
        return ls;
    if (m->differentiated)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model is already its forward/backward program (lt_model_grad "
                       "runs once per loaded model)", m->path);
    if (o->loss < LT_LOSS_SUM || o->loss > LT_LOSS_MODEL)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_grad: loss %d is not an lt_loss_kind", (int)o->loss);
    if (o->loss == LT_LOSS_SEEDS && o->nseeds > 0 && !o->seed_outputs)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_grad: %d seed outputs and no list of them", o->nseeds);
    lt_ad_spec spec = {.loss = (lt_ad_loss)o->loss, .nseeds = o->nseeds, .seed_outputs = o->seed_outputs,
                       .wrt_inputs = o->wrt_inputs != 0, .output = o->output,
                       .ignore_index = o->set_ignore_index ? o->ignore_index : -100,
                       .class_axis = o->class_axis == 1 ? 1 : -1};
    if (m->nunsupported) {
        const struct lt_unsupported *u = &m->unsupported[0];
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: node '%s' (%s%s%s): an op lantern does not know%s (lantern import "
                       "lists every one)", m->path, u->node, u->op, *u->domain ? ", domain " : "", u->domain,
                       m->nunsupported > 1 ? ", the first of several" : "");
    }
    if (o->tie_transposed) {
        int ntied = 0;
        lt_status s = lt_ir_tie_transposed_params(m, &ntied, NULL, 0, err);
        if (s != LT_OK)
            return s;
    }
    if (o->npadding > 0) {
        lt_status s = lt_ad_mark_padding(m, o->npadding, o->padding, err);
        if (s != LT_OK)
            return s;
    }
    lt_status s = lt_ad_transform(m, &spec, err);
    if (s == LT_OK)
        m->differentiated = true;
    return s;
}
