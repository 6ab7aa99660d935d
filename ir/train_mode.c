/* An IR pass that puts a model into training mode before the AD transform:
 * BatchNormalization computes batch statistics and yields its updated
 * running mean and variance, Dropout drops (training_mode input, mask
 * output for its gradient rule). Plus the helpers that carry the running
 * statistics of a training program back into the parameters holding them. */
#include "ir.h"
#include "train_mode.h"
#include <stdlib.h>
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
    lt_block_place_at(b, c, before->index);
    return c->out[0];
}

/* A node of op in block b at index at reading a (and bb when given), with
 * one output named name (none when name is NULL). */
static lt_node *node_at(lt_module *m, lt_block *b, int at, lt_op op, lt_ival *a, lt_ival *bb, const char *name)
{
    lt_node *n = lt_node_new(m, b, op, bb ? 2 : 1, name ? 1 : 0);
    if (!n)
        return NULL;
    n->opset = 14;
    n->in[0] = a;
    a->uses++;
    if (bb) {
        n->in[1] = bb;
        bb->uses++;
    }
    if (name) {
        n->out[0] = lt_ival_new(m, b, name);
        if (!n->out[0])
            return NULL;
        n->out[0]->def = n;
    }
    lt_block_place_at(b, n, at);
    return n;
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
    /* the running variance moves towards the batch's unbiased variance, as
     * PyTorch's does (ONNX's own running_var output takes the population
     * variance); the kernels read this attribute of lantern's own */
    if (s == LT_OK)
        s = set_attr_int(m, n, LT_BN_UNBIASED_ATTR, 1);
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

static lt_status add_stat_cells(lt_module *m);

lt_status lt_ir_set_training(lt_module *m, lt_err *err)
{
    lt_status s = LT_OK;
    for (int f = 0; f < m->nfuncs && s == LT_OK; f++)
        s = block_train(m, m->funcs[f]->body);
    if (s == LT_OK)
        s = block_train(m, m->main);
    if (s == LT_OK)
        s = add_stat_cells(m);
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

/* ---- running statistics as program state ----
 * A batch norm may sit in an If branch, a Loop body or after an If; after
 * the AD those run inside lifted functions, so their outputs cannot simply
 * become results. Instead each parameter holding a running statistic gets
 * two accumulation cells made at the start of the main block (cells are
 * objects every nested block and lifted function can reach): every batch
 * norm adds its updated statistic to the first and 1 to the second. The AD
 * returns the source program's cells as results, and the statistic becomes
 * sum / count: the updated value itself for a batch norm that ran once,
 * and unchanged for one in a branch not taken; a statistic updated more
 * than once a run is updated in turn (count_runs). */

typedef struct stat_cells {
    lt_ival **sum, **count; /* per module parameter, made on first use */
    int *runs;              /* per module parameter: batch norm updates a run may make (2 for "more than one") */
} stat_cells;

/* Batch norms that update each parameter's statistics, a Loop or Scan body's
 * counted twice (it runs any number of times). A statistic updated more
 * than once is updated in turn, as PyTorch updates a BatchNorm's buffers
 * each time the module runs (a BatchNorm applied in every iteration of a
 * scripted loop, or called twice): every batch norm reads the cell's value
 * so far as its running statistic (the sum cell starts at the parameter's
 * value, its count at 1) and adds the change its update makes, so the
 * cell ends at momentum^K r + the batch statistics' terms in their order,
 * where the mean of the K updates came out before. */
static void count_runs(const lt_module *m, const lt_block *b, bool in_loop, int *runs)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions; r++)
            count_runs(m, n->regions[r], in_loop || n->op == LT_OP_LOOP || n->op == LT_OP_SCAN, runs);
        if (n->op != LT_OP_BATCH_NORMALIZATION || n->nin < 5 || n->nout < 3)
            continue;
        for (int j = 1; j <= 2; j++) {
            int p = param_of(m, n->in[2 + j]);
            if (p >= 0 && n->out[j])
                runs[p] += in_loop ? 2 : 1;
        }
    }
}

static lt_ival *scalar_at(lt_module *m, lt_block *b, int at, double val, const char *name)
{
    lt_node *c = lt_node_new(m, b, LT_OP_CONSTANT, 0, 1);
    lt_tensor *t = c ? lt_ir_alloc(m, sizeof *t) : NULL;
    void *d = t ? lt_ir_alloc(m, 8) : NULL;
    if (!d || lt_node_set_attrs(m, c, 1) != LT_OK)
        return NULL;
    *t = (lt_tensor){.dtype = LT_F32, .rank = 0, .numel = 1, .data = d};
    lt_tensor_set_f64(t, 0, val);
    c->opset = 14;
    c->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    c->out[0] = lt_ival_new(m, b, name);
    if (!c->out[0])
        return NULL;
    c->out[0]->def = c;
    lt_type_tensor(&c->out[0]->type, LT_F32, 0, NULL);
    lt_block_place_at(b, c, at);
    return c->out[0];
}

static lt_status cells_of(lt_module *m, stat_cells *sc, int p)
{
    if (sc->sum[p])
        return LT_OK;
    lt_block *mb = m->main;
    lt_ival *pv = m->params[p].value;
    char nm[512];
    snprintf(nm, sizeof nm, "%s" LT_RUNNING_SUM, m->params[p].name);
    lt_node *zs = node_at(m, mb, 0, LT_OP_ACC_ZEROS_LIKE, pv, NULL, nm);
    snprintf(nm, sizeof nm, "%s_running_zero", m->params[p].name);
    lt_ival *zero = zs ? scalar_at(m, mb, 1, 0.0, nm) : NULL;
    snprintf(nm, sizeof nm, "%s" LT_RUNNING_COUNT, m->params[p].name);
    lt_node *zc = zero ? node_at(m, mb, 2, LT_OP_ACC_ZEROS_LIKE, zero, NULL, nm) : NULL;
    if (!zc)
        return LT_ERR_NOMEM;
    sc->sum[p] = zs->out[0];
    sc->sum[p]->type = pv->type;
    sc->sum[p]->type.kind = LT_KIND_CELL;
    sc->count[p] = zc->out[0];
    sc->count[p]->type = zero->type;
    sc->count[p]->type.kind = LT_KIND_CELL;
    /* running statistics follow the batches, not the gradient */
    m->params[p].trainable = false;
    if (sc->runs[p] < 2)
        return LT_OK;
    /* updated in turn (count_runs): the value so far, counted once */
    snprintf(nm, sizeof nm, "%s_running_one", m->params[p].name);
    lt_ival *one = node_at(m, mb, 3, LT_OP_ACC_ADD, sc->sum[p], pv, NULL) ? scalar_at(m, mb, 4, 1.0, nm) : NULL;
    if (!one || !node_at(m, mb, 5, LT_OP_ACC_ADD, sc->count[p], one, NULL))
        return LT_ERR_NOMEM;
    return LT_OK;
}

/* A batch norm's update of a statistic updated in turn: it reads the cell's
 * value so far in place of the parameter, and adds its update's change. */
static lt_status update_in_turn(lt_module *m, stat_cells *sc, lt_block *b, lt_node *n, int j, int p)
{
    char nm[512];
    snprintf(nm, sizeof nm, "%s_running_now", m->params[p].name);
    lt_node *rd = node_at(m, b, n->index, LT_OP_ACC_READ, sc->sum[p], NULL, nm);
    if (!rd)
        return LT_ERR_NOMEM;
    lt_ival *now = rd->out[0];
    now->type = m->params[p].value->type;
    n->in[2 + j]->uses--;
    n->in[2 + j] = now;
    now->uses++;
    snprintf(nm, sizeof nm, "%s_running_change", m->params[p].name);
    lt_node *d = node_at(m, b, n->index + 1, LT_OP_SUB, n->out[j], now, nm);
    if (!d)
        return LT_ERR_NOMEM;
    d->out[0]->type = now->type;
    return node_at(m, b, d->index + 1, LT_OP_ACC_ADD, sc->sum[p], d->out[0], NULL) ? LT_OK : LT_ERR_NOMEM;
}

static lt_status block_cells(lt_module *m, stat_cells *sc, lt_block *b)
{
    lt_status s = LT_OK;
    /* nodes are inserted after the current one: walk by node identity */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions && s == LT_OK; r++)
            s = block_cells(m, sc, n->regions[r]);
        if (n->op != LT_OP_BATCH_NORMALIZATION || n->nin < 5 || n->nout < 3)
            continue;
        for (int j = 1; j <= 2 && s == LT_OK; j++) {
            int p = param_of(m, n->in[2 + j]);
            if (p < 0 || !n->out[j])
                continue; /* statistics the model computes: nothing to keep */
            s = cells_of(m, sc, p);
            if (s != LT_OK)
                break;
            if (sc->runs[p] >= 2) {
                s = update_in_turn(m, sc, b, n, j, p);
                continue;
            }
            int at = n->index + 1;
            char nm[512];
            snprintf(nm, sizeof nm, "%s_running_one", m->params[p].name);
            lt_ival *one = node_at(m, b, at, LT_OP_ACC_ADD, sc->sum[p], n->out[j], NULL) ? scalar_at(m, b, at + 1, 1.0, nm)
                                                                                         : NULL;
            if (!one || !node_at(m, b, at + 2, LT_OP_ACC_ADD, sc->count[p], one, NULL))
                s = LT_ERR_NOMEM;
        }
        i = n->index;
    }
    return s;
}

static lt_status add_stat_cells(lt_module *m)
{
    stat_cells sc = {calloc((size_t)m->nparams + 1, sizeof *sc.sum), calloc((size_t)m->nparams + 1, sizeof *sc.count),
                     calloc((size_t)m->nparams + 1, sizeof *sc.runs)};
    lt_status s = LT_ERR_NOMEM;
    if (sc.sum && sc.count && sc.runs) {
        count_runs(m, m->main, false, sc.runs);
        s = block_cells(m, &sc, m->main);
    }
    free(sc.sum);
    free(sc.count);
    free(sc.runs);
    return s;
}

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t l = s ? strlen(s) : 0, k = strlen(suffix);
    if (l <= k || strcmp(s + l - k, suffix) != 0)
        return false;
    *stem = l - k;
    return true;
}

lt_status lt_ir_expose_running_stats(lt_module *tm, int *n, lt_err *err)
{
    (void)err;
    *n = 0;
    size_t stem;
    for (int r = 0; r < tm->main->nresults; r++)
        *n += ends_with(tm->main->results[r]->name, LT_RUNNING_SUM, &stem);
    return LT_OK;
}

static lt_param *param_named(lt_module *tm, const char *name, size_t len)
{
    for (int p = 0; p < tm->nparams; p++)
        if (strlen(tm->params[p].name) == len && !strncmp(tm->params[p].name, name, len))
            return &tm->params[p];
    return NULL;
}

lt_status lt_ir_store_running_stats(lt_module *tm, int nout, lt_value *const *out, lt_err *err)
{
    const lt_block *b = tm->main;
    for (int r = 0; r < nout && r < b->nresults; r++) {
        size_t stem;
        const char *on = b->results[r]->name;
        if (!ends_with(on, LT_RUNNING_SUM, &stem) || !out[r])
            continue; /* not a sum, or one the caller stored itself */
        lt_param *pp = param_named(tm, on, stem);
        const lt_tensor *sum = lt_value_tensor(out[r]), *cnt = NULL;
        for (int q = 0; q < nout && q < b->nresults && !cnt; q++) {
            size_t st2;
            const char *qn = b->results[q]->name;
            if (ends_with(qn, LT_RUNNING_COUNT, &st2) && st2 == stem && !strncmp(qn, on, stem))
                cnt = lt_value_tensor(out[q]);
        }
        if (!pp || !cnt || cnt->numel != 1)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: running statistic '%s' has no parameter or count", tm->path, on);
        if (!sum || sum->dtype != pp->data.dtype || sum->numel != pp->data.numel)
            return lt_errf(err, LT_ERR_RUNTIME, "%s: running statistic '%s' does not fit its parameter", tm->path, on);
        double c = lt_tensor_get_f64(cnt, 0);
        if (c <= 0)
            continue; /* no batch norm of it ran (a branch not taken) */
        if (c == 1) {
            memcpy(pp->data.data, sum->data, (size_t)sum->numel * lt_dtype_size(sum->dtype));
            continue;
        }
        for (int64_t i = 0; i < sum->numel; i++)
            lt_tensor_set_f64(&pp->data, i, lt_tensor_get_f64(sum, i) / c);
    }
    return LT_OK;
}
