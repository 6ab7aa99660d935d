/* The one-node finite-difference model of the gradient-rule suites and
 * its check. */
#include "rule_fd.h"
#include "ir/infer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: the suites' seeds name fixed data, so the generator is ours */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(mix(s) >> 11) / 9007199254740992.0; }

/* a module parameter named nm of the given type and shape, zero-filled */
static lt_ival *add_param(lt_module *m, const char *nm, lt_dtype dt, int rank, const int64_t *dims, bool trainable)
{
    int p = lt_module_add_param(m, nm);
    lt_tensor *t = &m->params[p].data;
    int64_t numel = lt_shape_numel(rank, dims);
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++)
        t->dims[d] = dims[d];
    t->numel = numel;
    t->data = calloc(numel ? numel : 1, lt_dtype_size(dt));
    lt_ival *v = lt_ival_new(m, m->main, nm);
    v->param = p;
    lt_type_tensor(&v->type, dt, rank, dims);
    m->params[p].value = v;
    m->params[p].trainable = trainable;
    return v;
}

lt_status tu_fd_build(const tu_fd_model *fm, lt_model **out, lt_err *err)
{
    tu_graph g = tu_single(fm->op, fm->opset, 0, fm->nout);
    lt_module *m = g.m;
    /* tu_single made a node with no inputs: ours, with them, replaces it */
    lt_node *n = lt_node_new(m, m->main, fm->op, fm->nin, fm->nout);
    m->main->nodes[0] = n;
    m->main->nnodes = 1;
    n->index = 0;
    n->opset = fm->opset;
    n->name = fm->name;
    for (int j = 0; j < fm->nout; j++) {
        n->out[j] = g.node->out[j];
        n->out[j]->def = n;
    }
    g.node = n;
    uint64_t seed = fm->seed;
    for (int i = 0; i < fm->nin; i++) {
        const tu_fd_in *si = &fm->in[i];
        if (si->absent)
            continue;
        char nm[16];
        snprintf(nm, sizeof nm, "p%d", i);
        lt_ival *v = add_param(m, nm, si->dt ? si->dt : LT_F32, si->rank, si->dims, !si->frozen);
        lt_tensor *t = &m->params[v->param].data;
        for (int64_t e = 0; e < t->numel; e++) {
            double x;
            if (si->nvals)
                x = si->vals[e % si->nvals];
            else if (si->signed_mag)
                x = (mix(&seed) & 1 ? 1 : -1) * (si->lo + (si->hi - si->lo) * unif(&seed));
            else
                x = si->lo + (si->hi - si->lo) * unif(&seed);
            lt_tensor_set_f64(t, e, x);
        }
        n->in[i] = v;
    }
    if (fm->attrs)
        fm->attrs(&g);
    lt_status s = lt_infer_module(m, err);
    if (s != LT_OK)
        return s;
    /* loss = sum(y * R), R random and frozen, of y's shape and float type */
    lt_ival *y = n->out[0];
    int64_t dims[LT_MAX_RANK];
    if (fm->out_rank)
        lt_type_tensor(&y->type, y->type.dtype, fm->out_rank, fm->out_dims);
    if (y->type.rank < 0)
        return lt_errf(err, LT_ERR_INTERNAL, "%s: output shape unknown", fm->name);
    for (int d = 0; d < y->type.rank; d++) {
        if (y->type.dims[d].sym >= 0 || y->type.dims[d].v < 0)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: output dim %d unknown", fm->name, d);
        dims[d] = y->type.dims[d].v;
    }
    /* R in y's float type: binary ops do not promote, so a float16 or
     * bfloat16 output needs an R of its own type */
    lt_dtype rt_dt = lt_dtype_is_float(y->type.dtype) ? y->type.dtype : LT_F32;
    lt_ival *r = add_param(m, "R", rt_dt, y->type.rank, dims, false);
    lt_tensor *rt = &m->params[r->param].data;
    for (int64_t e = 0; e < rt->numel; e++)
        lt_tensor_set_f64(rt, e, (float)(unif(&seed) * 2 - 1));
    lt_node *mul = lt_node_new(m, m->main, LT_OP_MUL, 2, 1);
    mul->opset = 13;
    mul->in[0] = y;
    mul->in[1] = r;
    mul->out[0] = lt_ival_new(m, m->main, "weighted");
    mul->out[0]->def = mul;
    m->main->results[0] = mul->out[0];
    m->main->nresults = 1;
    s = lt_infer_module(m, err);
    if (s == LT_OK)
        s = lt_ir_verify(m, err);
    if (fm->out_rank)
        lt_type_unknown(&y->type, y->type.dtype, fm->out_rank);
    *out = m;
    return s;
}

static lt_status build(void *ctx, lt_model **out, lt_err *err) { return tu_fd_build(ctx, out, err); }

void tu_fd_check(const tu_fd_model *fm, const tu_fd_expect *ex, tu_fd_tally *t)
{
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    lt_status s = lt_grad_check_built(build, (void *)fm, &o, 0, NULL, NULL, ex->checks ? ex->checks : 200, &rows,
                                       &nrows, &err);
    if (ex->refusal) {
        if (s == LT_OK || !strstr(err.msg, ex->refusal)) {
            printf("FAIL %s: expected a refusal mentioning \"%s\", got: %s\n", fm->name, ex->refusal,
                   s == LT_OK ? "success" : err.msg);
            t->failures++;
        }
        free(rows);
        return;
    }
    if (s != LT_OK) {
        printf("FAIL %s: %s\n", fm->name, err.msg);
        t->failures++;
        return;
    }
    int want = 0;
    for (int i = 0; i < fm->nin; i++)
        want += !fm->in[i].absent && !fm->in[i].frozen && !fm->in[i].dt;
    if (nrows != want) {
        printf("FAIL %s: %d differentiable inputs checked, expected %d\n", fm->name, nrows, want);
        t->failures++;
    }
    double tol = ex->tol > 0 ? ex->tol : 1e-6;
    for (int r = 0; r < nrows; r++) {
        t->pairs++;
        bool bad = rows[r].err64 > tol || (ex->zero_grad ? rows[r].max_grad != 0 : rows[r].max_grad == 0);
        if (tol >= 1e-3) {
            t->worst_loose = rows[r].err64 > t->worst_loose ? rows[r].err64 : t->worst_loose;
        } else if (rows[r].err64 > t->worst) {
            t->worst = rows[r].err64;
            t->worst_at = fm->name;
        }
        if (ex->verbose)
            printf("  %-40s %-3s rel.err %.3g (float32 AD %.3g, max |grad| %.3g)\n", fm->name, rows[r].name,
                   rows[r].err64, rows[r].err32, rows[r].max_grad);
        if (bad) {
            printf("FAIL %s input %s: rel.err %.3g, max |grad| %.3g\n", fm->name, rows[r].name, rows[r].err64,
                   rows[r].max_grad);
            t->failures++;
        }
    }
    free(rows);
}
