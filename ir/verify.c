/* The IR verifier: every value is defined once and before its use, uses only
 * see their own block and enclosing blocks (ONNX's lexical scoping), control
 * flow nodes carry the regions they need, and known types agree where an op
 * fixes them. Runs after import and after every pass in tests. */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const lt_module *m;
    lt_err *err;
    int *state; /* per value id: 0 unseen, 1 defined (visible), 2 defined in a closed block */
} vctx;

static bool visible(const lt_block *from, const lt_block *def)
{
    for (const lt_block *b = from; b; b = b->parent)
        if (b == def)
            return true;
    return false;
}

static lt_status fail(vctx *c, const lt_node *n, const char *fmt, const char *what)
{
    char lb[256], msg[512];
    snprintf(msg, sizeof msg, fmt, what);
    return lt_errf(c->err, LT_ERR_INTERNAL, "%s: IR verifier: %s: %s", c->m->path,
                   n ? lt_node_label(n, lb, sizeof lb) : "block", msg);
}

static lt_status check_use(vctx *c, const lt_block *b, const lt_node *n, const lt_ival *v)
{
    if (v->id < 0 || v->id >= c->m->nvalues || c->m->values[v->id] != v)
        return fail(c, n, "reads a value ('%s') the module does not own", v->name);
    if (v->param >= 0)
        return LT_OK; /* module parameters are visible everywhere */
    if (c->state[v->id] != 1)
        return fail(c, n, "reads '%s' before it is defined", v->name);
    if (!visible(b, v->block))
        return fail(c, n, "reads '%s' outside its scope", v->name);
    return LT_OK;
}

static lt_status verify_block(vctx *c, const lt_block *b)
{
    for (int p = 0; p < b->nparams; p++) {
        const lt_ival *v = b->params[p];
        if (!v || c->state[v->id])
            return fail(c, NULL, "block parameter '%s' is defined twice", v ? v->name : "?");
        c->state[v->id] = 1;
    }
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (n->block != b || n->index != i)
            return fail(c, n, "is linked into the wrong block%s", "");
        if ((unsigned)n->op >= LT_OP_COUNT)
            return fail(c, n, "has an invalid op%s", "");
        for (int j = 0; j < n->nin; j++)
            if (n->in[j]) {
                lt_status s = check_use(c, b, n, n->in[j]);
                if (s != LT_OK)
                    return s;
            }
        if (n->op == LT_OP_CALL) {
            int64_t fi = lt_attr_int(n, "callee", -1);
            if (fi < 0 || fi >= c->m->nfuncs)
                return fail(c, n, "calls a function that does not exist%s", "");
            const lt_block *fb = c->m->funcs[fi]->body;
            if (fb->nparams != n->nin || fb->nresults != n->nout) {
                char what[300];
                snprintf(what, sizeof what, "%s' (%d arguments for %d parameters, %d results for %d)",
                         c->m->funcs[fi]->name, n->nin, fb->nparams, n->nout, fb->nresults);
                return fail(c, n, "passes the wrong number of arguments or results to '%s", what);
            }
        }
        int want = n->op == LT_OP_IF ? 2 : (n->op == LT_OP_LOOP || n->op == LT_OP_SCAN) ? 1 : -1;
        if (want >= 0 && n->nregions != want)
            return fail(c, n, "needs %s region(s)", want == 2 ? "2" : "1");
        for (int r = 0; r < n->nregions; r++) {
            if (!n->regions[r] || n->regions[r]->parent != b)
                return fail(c, n, "has a region that is not nested in its block%s", "");
            lt_status s = verify_block(c, n->regions[r]);
            if (s != LT_OK)
                return s;
        }
        for (int j = 0; j < n->nout; j++) {
            const lt_ival *v = n->out[j];
            if (!v)
                continue;
            if (c->state[v->id])
                return fail(c, n, "defines '%s' a second time", v->name);
            if (v->def != n || v->block != b)
                return fail(c, n, "output '%s' does not point back at its node", v->name);
            c->state[v->id] = 1;
        }
    }
    for (int j = 0; j < b->nresults; j++) {
        lt_status s = check_use(c, b, NULL, b->results[j]);
        if (s != LT_OK)
            return s;
    }
    /* the block's values go out of scope */
    for (int p = 0; p < b->nparams; p++)
        c->state[b->params[p]->id] = 2;
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j])
                c->state[b->nodes[i]->out[j]->id] = 2;
    return LT_OK;
}

lt_status lt_ir_verify(const lt_module *m, lt_err *err)
{
    vctx c = {m, err, calloc(m->nvalues + 1, sizeof(int))};
    if (!c.state)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->nparams; i++)
        if (!m->params[i].value || m->params[i].value->param != i) {
            free(c.state);
            return lt_errf(err, LT_ERR_INTERNAL, "%s: IR verifier: parameter %d is not linked", m->path, i);
        }
    lt_status s = m->main ? verify_block(&c, m->main) : lt_errf(err, LT_ERR_INTERNAL, "module has no main");
    for (int i = 0; i < m->nfuncs && s == LT_OK; i++) {
        if (m->funcs[i]->body->parent)
            s = lt_errf(err, LT_ERR_INTERNAL, "%s: IR verifier: function '%s' is not closed", m->path,
                        m->funcs[i]->name);
        else
            s = verify_block(&c, m->funcs[i]->body);
    }
    free(c.state);
    return s;
}
