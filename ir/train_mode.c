/* An IR pass that puts a model into training mode before the AD transform:
 * BatchNormalization computes batch statistics and yields its updated
 * running mean and variance, Dropout drops (training_mode input, mask
 * output for its gradient rule). Plus the helpers that carry the running
 * statistics of a training program back into the parameters holding them. */
#include "ir.h"
#include "train_mode.h"
#include <stdlib.h>
#include "runtime/runtime.h"
#include <stdio.h>
#include <string.h>

/* Gives node n the int attribute name = v, copying the attribute array
 * first: modules may share it between nodes. */
static lt_status set_attr_int(lt_module *m, lt_node *n, const char *name, int64_t v)
{
    int at = -1;
    for (int a = 0; a < n->nattr; a++)
        if (!strcmp(n->attrs[a].name, name))
            at = a;
    int na = at < 0 ? n->nattr + 1 : n->nattr;
    lt_attr *attrs = lt_ir_alloc(m, sizeof *attrs * na);
    if (!attrs)
        return LT_ERR_NOMEM;
    if (n->nattr)
        memcpy(attrs, n->attrs, sizeof *attrs * n->nattr);
    if (at < 0)
        at = n->nattr;
    attrs[at] = (lt_attr){.name = lt_ir_strdup(m, name), .kind = LT_ATTR_INT, .i = v};
    if (!attrs[at].name)
        return LT_ERR_NOMEM;
    n->attrs = attrs;
    n->nattr = na;
    return LT_OK;
}

/* Widens n to at least nin inputs and nout outputs (new slots omitted). */
static lt_status widen(lt_module *m, lt_node *n, int nin, int nout)
{
    if (nin > n->nin) {
        lt_ival **in = lt_ir_alloc(m, sizeof *in * nin);
        if (!in)
            return LT_ERR_NOMEM;
        if (n->nin)
            memcpy(in, n->in, sizeof *in * n->nin);
        n->in = in;
        n->nin = nin;
    }
    if (nout > n->nout) {
        lt_ival **out = lt_ir_alloc(m, sizeof *out * nout);
        if (!out)
            return LT_ERR_NOMEM;
        if (n->nout)
            memcpy(out, n->out, sizeof *out * n->nout);
        n->out = out;
        n->nout = nout;
    }
    return LT_OK;
}

/* Makes output i of n exist (named after the node's first output). */
static lt_status ensure_out(lt_module *m, lt_node *n, int i, const char *suffix)
{
    if (n->out[i])
        return LT_OK;
    char nm[512];
    snprintf(nm, sizeof nm, "%s_%s", n->out[0] && n->out[0]->name ? n->out[0]->name : "train", suffix);
    lt_ival *v = lt_ival_new(m, n->block, nm);
    if (!v)
        return LT_ERR_NOMEM;
    v->def = n;
    n->out[i] = v;
    return LT_OK;
}

/* A scalar Constant placed right before node `before`; returns its value. */
static lt_ival *constant_before(lt_module *m, lt_node *before, lt_dtype dt, double val, const char *suffix)
{
    lt_block *b = before->block;
    lt_node *c = lt_node_new(m, b, LT_OP_CONSTANT, 0, 1);
    lt_tensor *t = c ? lt_ir_alloc(m, sizeof *t) : NULL;
    void *d = t ? lt_ir_alloc(m, 8) : NULL;
    if (!d || lt_node_set_attrs(m, c, 1) != LT_OK)
        return NULL;
    *t = (lt_tensor){.dtype = dt, .rank = 0, .numel = 1, .data = d};
    lt_tensor_set_f64(t, 0, val);
    c->opset = before->opset;
    c->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    char nm[512];
    snprintf(nm, sizeof nm, "%s_%s", before->out[0] && before->out[0]->name ? before->out[0]->name : "train", suffix);
    c->out[0] = lt_ival_new(m, b, nm);
    if (!c->out[0])
        return NULL;
    c->out[0]->def = c;
    lt_type_tensor(&c->out[0]->type, dt, 0, NULL);
    /* lt_node_new appended it: move it in front of `before` */
    int at = before->index;
    for (int k = b->nnodes - 1; k > at; k--) {
        b->nodes[k] = b->nodes[k - 1];
        b->nodes[k]->index = k;
    }
    b->nodes[at] = c;
    c->index = at;
    return c->out[0];
}

static lt_status train_batch_norm(lt_module *m, lt_node *n)
{
    /* opsets 7-13 train when the statistics outputs are asked for, 1 and 6
     * also need is_test = 0, 14 on say so with training_mode; running mean
     * and variance are outputs 1 and 2 in every version */
    lt_status s = widen(m, n, 5, 3);
    if (s == LT_OK)
        s = ensure_out(m, n, 1, "running_mean");
    if (s == LT_OK)
        s = ensure_out(m, n, 2, "running_var");
    if (s == LT_OK && n->opset >= 14)
        s = set_attr_int(m, n, "training_mode", 1);
    if (s == LT_OK && n->opset < 7)
        s = set_attr_int(m, n, "is_test", 0);
    return s;
}

static lt_status train_dropout(lt_module *m, lt_node *n)
{
    if (!n->nin || !n->in[0])
        return LT_OK; /* the verifier reports it */
    lt_status s = widen(m, n, 3, 2);
    if (s != LT_OK)
        return s;
    if (n->opset < 12) {
        /* before opset 12 Dropout's ratio was an attribute and the runtime
         * runs it as inference: move to the opset-12 form, which says the
         * same with ratio and training_mode inputs (the mask becomes bool) */
        if (!n->in[1]) {
            lt_dtype dt = n->in[0]->type.dtype == LT_UNDEFINED ? LT_F32 : n->in[0]->type.dtype;
            n->in[1] = constant_before(m, n, dt, lt_attr_float(n, "ratio", 0.5f), "ratio");
            if (!n->in[1])
                return LT_ERR_NOMEM;
            n->in[1]->uses++;
        }
        n->opset = 12;
    }
    /* a training_mode the model already passes (a graph input, a false
     * constant) gives way to true: training is what was asked for */
    if (n->in[2])
        n->in[2]->uses--;
    n->in[2] = constant_before(m, n, LT_BOOL, 1, "training_mode");
    if (!n->in[2])
        return LT_ERR_NOMEM;
    n->in[2]->uses++;
    return ensure_out(m, n, 1, "mask");
}

static lt_status block_train(lt_module *m, lt_block *b)
{
    lt_status s = LT_OK;
    /* nodes may be inserted before the current one: walk by node identity */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i];
        if (n->op == LT_OP_BATCH_NORMALIZATION)
            s = train_batch_norm(m, n);
        else if (n->op == LT_OP_DROPOUT)
            s = train_dropout(m, n);
        i = n->index;
        for (int r = 0; r < n->nregions && s == LT_OK; r++)
            s = block_train(m, n->regions[r]);
    }
    return s;
}

lt_status lt_ir_set_training(lt_module *m, lt_err *err)
{
    lt_status s = LT_OK;
    for (int f = 0; f < m->nfuncs && s == LT_OK; f++)
        s = block_train(m, m->funcs[f]->body);
    if (s == LT_OK)
        s = block_train(m, m->main);
    if (s != LT_OK)
        return lt_errf(err, s, "out of memory");
    return lt_infer_module(m, err);
}

/* The module parameter that value v reads: a parameter itself, or a main
 * graph input whose default it is; -1 otherwise. */
static int param_of(const lt_module *m, const lt_ival *v)
{
    if (!v)
        return -1;
    if (v->param >= 0)
        return v->param;
    for (int p = 0; m->input_default && p < m->main->nparams; p++)
        if (m->main->params[p] == v)
            return m->input_default[p];
    return -1;
}

/* marks (in seen, by parameter) the running statistics of b's batch norms */
static void count_block(const lt_module *m, const lt_block *b, char *seen)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *nd = b->nodes[i];
        if (nd->op == LT_OP_BATCH_NORMALIZATION && nd->nin >= 5)
            for (int j = 3; j <= 4; j++) {
                int p = param_of(m, nd->in[j]);
                if (p >= 0)
                    seen[p] = 1;
            }
        for (int r = 0; r < nd->nregions; r++)
            count_block(m, nd->regions[r], seen);
    }
}

int lt_ir_count_running_stats(const lt_module *m)
{
    char *seen = calloc((size_t)m->nparams + 1, 1);
    if (!seen)
        return 0;
    count_block(m, m->main, seen);
    for (int f = 0; f < m->nfuncs; f++)
        count_block(m, m->funcs[f]->body, seen);
    int n = 0;
    for (int p = 0; p < m->nparams; p++)
        n += seen[p];
    free(seen);
    return n;
}

static bool has_result_named(const lt_block *b, const char *name)
{
    for (int r = 0; r < b->nresults; r++)
        if (b->results[r]->name && !strcmp(b->results[r]->name, name))
            return true;
    return false;
}

lt_status lt_ir_expose_running_stats(lt_module *tm, int *n, lt_err *err)
{
    lt_block *b = tm->main;
    lt_ival *add[2 * 64];
    const char *names[2 * 64];
    int k = 0;
    *n = 0;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *nd = b->nodes[i];
        if (nd->op != LT_OP_BATCH_NORMALIZATION || nd->nin < 5 || nd->nout < 3)
            continue;
        for (int j = 1; j <= 2; j++) {
            int p = param_of(tm, nd->in[2 + j]);
            if (p < 0 || !nd->out[j])
                continue; /* computed statistics: nothing to keep */
            char nm[512];
            snprintf(nm, sizeof nm, "%s_running", tm->params[p].name);
            bool dup = has_result_named(b, nm);
            for (int q = 0; q < k && !dup; q++)
                dup = !strcmp(names[q], nm);
            if (dup)
                continue; /* one parameter shared by several nodes: the first wins */
            if (k == (int)(sizeof add / sizeof *add))
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: more than %d running statistics", tm->path, k);
            names[k] = lt_ir_strdup(tm, nm);
            if (!names[k])
                return lt_errf(err, LT_ERR_NOMEM, "out of memory");
            add[k++] = nd->out[j];
        }
    }
    if (!k)
        return LT_OK;
    int old = b->nresults;
    lt_ival **keep = b->results;
    if (lt_block_set_results(tm, b, old + k) != LT_OK)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (b->results != keep)
        for (int r = 0; r < old; r++)
            b->results[r] = keep[r];
    for (int q = 0; q < k; q++) {
        /* results are named by their value: a renamed Identity keeps the
         * batch norm's own output name intact */
        lt_node *id = lt_node_new(tm, b, LT_OP_IDENTITY, 1, 1);
        lt_ival *v = id ? lt_ival_new(tm, b, names[q]) : NULL;
        if (!v)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        id->opset = 14;
        id->in[0] = add[q];
        add[q]->uses++;
        id->out[0] = v;
        v->def = id;
        v->type = add[q]->type;
        v->uses++;
        b->results[old + q] = v;
    }
    *n = k;
    return lt_infer_module(tm, err);
}

lt_status lt_ir_store_running_stats(lt_module *tm, int nout, lt_value *const *out, lt_err *err)
{
    const lt_block *b = tm->main;
    for (int r = 0; r < nout && r < b->nresults; r++) {
        const char *on = b->results[r]->name;
        size_t l = on ? strlen(on) : 0;
        if (l <= 8 || strcmp(on + l - 8, "_running") != 0)
            continue;
        lt_param *pp = NULL;
        for (int p = 0; p < tm->nparams && !pp; p++)
            if (strlen(tm->params[p].name) == l - 8 && !strncmp(tm->params[p].name, on, l - 8))
                pp = &tm->params[p];
        const lt_tensor *t = lt_value_tensor(out[r]);
        if (!pp)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: output '%s' matches no parameter", tm->path, on);
        if (!t || t->dtype != pp->data.dtype || t->numel != pp->data.numel)
            return lt_errf(err, LT_ERR_RUNTIME, "%s: running statistic '%s' does not fit its parameter", tm->path, on);
        if (t->numel)
            memcpy(pp->data.data, t->data, (size_t)t->numel * lt_dtype_size(t->dtype));
    }
    return LT_OK;
}
