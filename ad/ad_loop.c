/* Loop and Scan under the CPS transform (the paper's WHILE rule): a loop
 * becomes a recursive IR function
 *   loop(i, cond, carried..., cells..., stacks...) =
 *     if (i < M && cond) { body-forward; r = loop(i+1, cond', carried'...); body-backward; r }
 *     else { k(carried..., stacked...) ; adjoint cells of the stacked outputs }
 * so iteration i's backward runs as the call for i+1 returns and its
 * intermediates live exactly until then. Loop-carried adjoints travel as
 * cells passed down the recursion; scan outputs are gathered in a sequence
 * on the way down, stacked at the bottom (empty where no iteration ran: the
 * carried values then pass straight to k, their cells with them), and their
 * adjoints are read slice by slice on the way back up. Scan is the same rule with scanned inputs
 * sliced per iteration (axes and directions as ONNX defines them). */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

#define MAXV 64

typedef struct loopx {
    const lt_node *n;
    const lt_block *body;
    bool scan;
    int N, K, S;             /* carried/states, scan outputs, scan inputs */
    int bp_carried, br_carried, br_scan; /* offsets in body params/results */
    int64_t in_axis[MAXV], in_dir[MAXV], out_axis[MAXV], out_dir[MAXV];
    lt_func *f, *k;
    /* loop function parameters */
    lt_ival *i, *cond, *carried[MAXV], *cells[MAXV], *seqs[MAXV];
    lt_ival *T; /* iteration count (Scan) or trip count M (Loop), outer value, may be NULL */
    lt_ival *idx_in[MAXV]; /* per scan input: the index of this iteration's slice */
    lt_ival *slice_cell[MAXV];
    lt_node *self_call;
    lt_ival *ret[MAXV]; /* adjoint cells of active scan outputs returned upward, then
                         * the enclosing loop iteration's results (nesc_o) that
                         * its continuation k made, passed up through this loop */
    int nesc_o;
} loopx;

static bool active(lt_ad *c, const lt_ival *v) { return v && v->id < c->nsrc && c->active[v->id]; }

static lt_ival *param(lt_ad *c, lt_block *b, int at, const char *name, const lt_type *t)
{
    lt_ival *v = lt_ival_new(c->m, b, name);
    if (v) {
        v->type = *t;
        b->params[at] = v;
    }
    return v;
}

static lt_status oom(lt_ad *c) { return lt_errf(c->err, LT_ERR_NOMEM, "out of memory"); }

/* per-iteration continuation inside the then-branch: recurse, then take this
 * iteration's slices of the scan-output adjoints */
static lt_status iter_kont(lt_ad *c, void *envp)
{
    loopx *x = envp;
    const lt_block *body = x->body;
    lt_ival *args[4 * MAXV + 8];
    int na = 0;
    lt_ival *one = lt_ad_scalar(c, LT_I64, 1);
    args[na++] = lt_ad_op2(c, LT_OP_ADD, x->i, one);
    if (!x->scan)
        args[na++] = lt_ad_mapped(c, body->results[0]);
    for (int j = 0; j < x->N; j++)
        args[na++] = lt_ad_mapped(c, body->results[x->br_carried + j]);
    for (int j = 0; j < x->N; j++) {
        if (!active(c, body->params[x->bp_carried + j]))
            continue;
        const lt_ival *r = body->results[x->br_carried + j];
        lt_ival *cell = r->id < c->nsrc ? c->cell[r->id] : NULL;
        args[na++] = cell ? cell : lt_ad_new_cell(c, lt_ad_mapped(c, r));
    }
    for (int k = 0; k < x->K; k++) {
        lt_ival *v = lt_ad_mapped(c, body->results[x->br_scan + k]);
        lt_ival *front = x->out_dir[k] ? lt_ad_scalar(c, LT_I64, 0) : NULL;
        lt_node *ins = lt_ad_node(c, LT_OP_SEQUENCE_INSERT, x->out_dir[k] ? 3 : 2, 1);
        if (!ins)
            return oom(c);
        ins->in[0] = x->seqs[k];
        ins->in[1] = v;
        if (front)
            ins->in[2] = front;
        ins->out[0]->type = x->seqs[k]->type;
        args[na++] = ins->out[0];
    }
    for (int a = 0; a < na; a++)
        if (!args[a])
            return oom(c);
    int nret = 0;
    for (int k = 0; k < x->K; k++)
        nret += active(c, x->n->out[x->N + k]);
    lt_node *call = lt_ad_call(c, x->f, na, args, nret + x->nesc_o);
    if (!call)
        return oom(c);
    x->self_call = call;
    for (int q = 0; q < x->nesc_o; q++) {
        call->out[nret + q]->type = x->k->body->results[q]->type;
        x->ret[nret + q] = call->out[nret + q];
    }
    int r = 0;
    for (int k = 0; k < x->K; k++) {
        if (!active(c, x->n->out[x->N + k]))
            continue;
        lt_ival *held = call->out[r];
        held->type = x->n->out[x->N + k]->type;
        held->type.kind = LT_KIND_CELL;
        x->ret[r++] = held;
        const lt_ival *sv = body->results[x->br_scan + k];
        if (!(sv->id < c->nsrc && c->cell[sv->id]))
            continue;
        lt_ival *pos = x->i;
        if (x->out_dir[k]) /* inserted at the front: iteration i sits at T-1-i */
            pos = lt_ad_op2(c, LT_OP_SUB, lt_ad_op2(c, LT_OP_SUB, x->T, one), x->i);
        lt_node *g = lt_ad_node(c, LT_OP_GATHER, 2, 1);
        if (!g || !pos)
            return oom(c);
        g->in[0] = held;
        g->in[1] = pos;
        lt_ad_attr_int(c, g, "axis", x->out_axis[k]);
        g->out[0]->type = sv->type;
        lt_node *acc = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
        if (!acc)
            return oom(c);
        acc->in[0] = c->cell[sv->id];
        acc->in[1] = g->out[0];
    }
    return LT_OK;
}

/* The scan outputs stacked once the loop is over (i iterations ran):
 * ConcatFromSequence of each one's sequence where i > 0; where the loop ran
 * no iteration, the sequences are empty (ConcatFromSequence refuses them, as
 * onnxruntime does: the spec takes the rank from the elements) and each
 * output is the empty tensor the forward Loop and Scan kernels make (stack in
 * runtime/cpu/control.c): the output's type with its unknown dims and the
 * stacking axis 0, float32[0] where the rank is unknown. */
static lt_status stack_scan_outputs(lt_ad *c, loopx *x, lt_ival **stacked)
{
    const lt_node *n = x->n;
    if (x->K == 0)
        return LT_OK;
    lt_ival *ran = lt_ad_op2(c, LT_OP_GREATER, x->i, lt_ad_scalar(c, LT_I64, 0));
    lt_node *iff = ran ? lt_ad_node(c, LT_OP_IF, 1, x->K) : NULL;
    if (!iff || lt_node_set_regions(c->m, iff, 2) != LT_OK)
        return oom(c);
    iff->in[0] = ran;
    lt_node_set_attrs(c->m, iff, 2);
    iff->attrs[0] = (lt_attr){.name = "then_branch", .kind = LT_ATTR_GRAPH, .region = 0};
    iff->attrs[1] = (lt_attr){.name = "else_branch", .kind = LT_ATTR_GRAPH, .region = 1};
    lt_block *outer = c->out;
    lt_block *tb = lt_block_new(c->m, outer, "stack");
    lt_block *eb = lt_block_new(c->m, outer, "none_ran");
    if (!tb || !eb || lt_block_set_results(c->m, tb, x->K) != LT_OK ||
        lt_block_set_results(c->m, eb, x->K) != LT_OK)
        return oom(c);
    tb->owner = eb->owner = iff;
    iff->regions[0] = tb;
    iff->regions[1] = eb;
    for (int k = 0; k < x->K; k++) {
        const lt_type *ot = &n->out[x->N + k]->type;
        c->out = tb;
        lt_node *cat = lt_ad_node(c, LT_OP_CONCAT_FROM_SEQUENCE, 1, 1);
        if (!cat) {
            c->out = outer;
            return oom(c);
        }
        cat->in[0] = x->seqs[k];
        lt_ad_attr_int(c, cat, "axis", x->out_axis[k]);
        lt_ad_attr_int(c, cat, "new_axis", 1);
        cat->out[0]->type = *ot;
        tb->results[k] = cat->out[0];
        c->out = eb;
        int64_t dims[LT_MAX_RANK] = {0};
        int rank = 1;
        if (ot->rank >= 1) {
            rank = ot->rank;
            for (int d = 0; d < rank; d++)
                dims[d] = ot->dims[d].sym < 0 && ot->dims[d].v >= 0 ? ot->dims[d].v : 0;
            dims[x->out_axis[k] < rank ? x->out_axis[k] : 0] = 0;
        }
        lt_dtype dt = ot->dtype != LT_UNDEFINED ? ot->dtype : LT_F32;
        eb->results[k] = lt_ad_const(c, dt, rank, dims, NULL);
        c->out = outer;
        if (!eb->results[k])
            return oom(c);
        iff->out[k]->type = *ot;
        stacked[k] = iff->out[k];
    }
    return LT_OK;
}

/* the loop function's body: test, then recurse or continue */
static lt_status emit_loop_body(lt_ad *c, loopx *x)
{
    const lt_node *n = x->n;
    const lt_block *body = x->body;
    lt_status s;
    lt_ival *go;
    if (x->scan) {
        go = lt_ad_op2(c, LT_OP_LESS, x->i, x->T);
    } else {
        go = x->cond;
        if (x->T)
            go = lt_ad_op2(c, LT_OP_AND, lt_ad_op2(c, LT_OP_LESS, x->i, x->T), x->cond);
    }
    if (!go)
        return oom(c);
    int nret = 0;
    for (int k = 0; k < x->K; k++)
        nret += active(c, n->out[x->N + k]);
    int nall = nret + x->nesc_o;
    lt_node *iff = lt_ad_node(c, LT_OP_IF, 1, nall);
    if (!iff || lt_node_set_regions(c->m, iff, 2) != LT_OK)
        return oom(c);
    iff->in[0] = go;
    lt_node_set_attrs(c->m, iff, 2);
    iff->attrs[0] = (lt_attr){.name = "then_branch", .kind = LT_ATTR_GRAPH, .region = 0};
    iff->attrs[1] = (lt_attr){.name = "else_branch", .kind = LT_ATTR_GRAPH, .region = 1};
    lt_block *F = c->out;

    /* then: one iteration */
    lt_block *tb = lt_block_new(c->m, F, "iteration");
    tb->owner = iff;
    iff->regions[0] = tb;
    c->out = tb;
    if (!x->scan) {
        c->map[body->params[0]->id] = x->i;
        c->map[body->params[1]->id] = x->cond;
    }
    int q = 0;
    for (int j = 0; j < x->N; j++) {
        const lt_ival *bp = body->params[x->bp_carried + j];
        c->map[bp->id] = x->carried[j];
        if (active(c, bp))
            c->cell[bp->id] = x->cells[q++];
    }
    for (int sidx = 0; sidx < x->S; sidx++) {
        const lt_ival *xs_src = n->in[x->N + sidx];
        lt_ival *xs = lt_ad_mapped(c, xs_src);
        lt_ival *idx = x->i;
        if (x->in_dir[sidx])
            idx = lt_ad_op2(c, LT_OP_SUB, lt_ad_op2(c, LT_OP_SUB, x->T, lt_ad_scalar(c, LT_I64, 1)), x->i);
        lt_node *g = lt_ad_node(c, LT_OP_GATHER, 2, 1);
        if (!g || !idx)
            return oom(c);
        g->in[0] = xs;
        g->in[1] = idx;
        lt_ad_attr_int(c, g, "axis", x->in_axis[sidx]);
        const lt_ival *bp = body->params[x->N + sidx];
        g->out[0]->type = bp->type;
        c->map[bp->id] = g->out[0];
        x->idx_in[sidx] = idx;
        x->slice_cell[sidx] = NULL;
        if (active(c, bp) && active(c, xs_src) && c->cell[xs_src->id]) {
            x->slice_cell[sidx] = c->cell[bp->id] = lt_ad_new_cell(c, g->out[0]);
            if (!x->slice_cell[sidx])
                return oom(c);
        }
    }
    /* the scan-output adjoints the recursive call returns are this
     * iteration's results, carried out of the body's continuations */
    lt_ival **outer_esc = c->esc;
    int outer_nesc = c->nesc;
    for (int r = 0; r < nall; r++)
        x->ret[r] = NULL;
    c->esc = x->ret;
    c->nesc = nall;
    s = lt_ad_block(c, body, 0, (lt_ad_kont){iter_kont, x});
    c->esc = outer_esc;
    c->nesc = outer_nesc;
    if (s != LT_OK)
        return s;
    /* scanned inputs: each iteration's slice adjoint goes back into place */
    for (int sidx = 0; sidx < x->S; sidx++) {
        if (!x->slice_cell[sidx])
            continue;
        const lt_ival *xs_src = n->in[x->N + sidx];
        lt_ival *ds = lt_ad_op1(c, LT_OP_ACC_READ, x->slice_cell[sidx]);
        lt_node *gg = lt_ad_node(c, LT_OP_GATHER_GRAD, 3, 1);
        lt_node *acc = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
        if (!ds || !gg || !acc)
            return oom(c);
        ds->type = body->params[x->N + sidx]->type;
        gg->in[0] = ds;
        gg->in[1] = x->idx_in[sidx];
        gg->in[2] = lt_ad_mapped(c, xs_src);
        lt_ad_attr_int(c, gg, "axis", x->in_axis[sidx]);
        gg->out[0]->type = xs_src->type;
        acc->in[0] = c->cell[xs_src->id];
        acc->in[1] = gg->out[0];
    }
    lt_block_set_results(c->m, tb, nall);
    for (int r = 0; r < nall; r++)
        tb->results[r] = x->ret[r];

    /* else: the loop is over; stack the scan outputs and continue */
    lt_block *eb = lt_block_new(c->m, F, "done");
    eb->owner = iff;
    iff->regions[1] = eb;
    c->out = eb;
    lt_ival *args[4 * MAXV + 8], *stacked[MAXV];
    int na = 0;
    for (int j = 0; j < x->N; j++)
        args[na++] = x->carried[j];
    if ((s = stack_scan_outputs(c, x, stacked)) != LT_OK)
        return s;
    for (int k = 0; k < x->K; k++)
        args[na++] = stacked[k];
    q = 0;
    for (int j = 0; j < x->N; j++)
        if (active(c, body->params[x->bp_carried + j]))
            args[na++] = x->cells[q++];
    lt_block_set_results(c->m, eb, nall);
    int r = 0;
    for (int k = 0; k < x->K; k++)
        if (active(c, n->out[x->N + k])) {
            lt_ival *cell = lt_ad_new_cell(c, stacked[k]);
            if (!cell)
                return oom(c);
            args[na++] = cell;
            eb->results[r++] = cell;
        }
    lt_node *kc = lt_ad_call(c, x->k, na, args, x->nesc_o);
    if (!kc)
        return oom(c);
    for (int q = 0; q < x->nesc_o; q++) {
        kc->out[q]->type = x->k->body->results[q]->type;
        eb->results[r++] = kc->out[q];
    }
    c->out = F;
    lt_block_set_results(c->m, F, nall);
    for (r = 0; r < nall; r++) {
        iff->out[r]->type = tb->results[r] ? tb->results[r]->type : eb->results[r]->type;
        F->results[r] = iff->out[r];
    }
    return LT_OK;
}

lt_status lt_ad_loop(lt_ad *c, const lt_block *b, int i, lt_ad_kont kont)
{
    const lt_node *n = b->nodes[i];
    if (n->nregions != 1)
        return lt_ad_fail(c, n, "malformed loop");
    loopx *x = calloc(1, sizeof *x);
    if (!x)
        return oom(c);
    x->n = n;
    x->body = n->regions[0];
    x->scan = n->op == LT_OP_SCAN;
    lt_status s = LT_OK;
    if (x->scan) {
        if (n->opset < 9) {
            free(x);
            return lt_ad_fail(c, n, "differentiating Scan-8 (with its batch axis) is not supported; re-export at opset 9+");
        }
        x->S = (int)lt_attr_int(n, "num_scan_inputs", 0);
        x->N = n->nin - x->S;
        x->K = x->body->nresults - x->N;
        x->bp_carried = 0;
        x->br_carried = 0;
        x->br_scan = x->N;
        int na;
        const int64_t *a;
        if ((a = lt_attr_ints(n, "scan_input_axes", &na)))
            for (int j = 0; j < na && j < x->S; j++)
                x->in_axis[j] = a[j];
        if ((a = lt_attr_ints(n, "scan_input_directions", &na)))
            for (int j = 0; j < na && j < x->S; j++)
                x->in_dir[j] = a[j];
        if ((a = lt_attr_ints(n, "scan_output_axes", &na)))
            for (int j = 0; j < na && j < x->K; j++)
                x->out_axis[j] = a[j];
        if ((a = lt_attr_ints(n, "scan_output_directions", &na)))
            for (int j = 0; j < na && j < x->K; j++)
                x->out_dir[j] = a[j];
        for (int j = 0; j < x->S; j++) {
            int r = n->in[x->N + j] ? n->in[x->N + j]->type.rank : -1;
            if (x->in_axis[j] < 0 && r > 0)
                x->in_axis[j] += r;
        }
        for (int k = 0; k < x->K; k++) {
            int r = n->out[x->N + k] ? n->out[x->N + k]->type.rank : -1;
            if (x->out_axis[k] < 0 && r > 0)
                x->out_axis[k] += r;
        }
    } else {
        x->N = n->nin - 2;
        x->K = x->body->nresults - 1 - x->N;
        x->bp_carried = 2;
        x->br_carried = 1;
        x->br_scan = 1 + x->N;
    }
    if (x->N < 0 || x->K < 0 || x->N + x->K > MAXV || x->S > MAXV) {
        free(x);
        return lt_ad_fail(c, n, "loop shape lantern cannot differentiate");
    }
    for (int k = 0; k < x->K; k++)
        if (x->out_axis[k] < 0 || x->in_axis[0] < 0) {
            free(x);
            return lt_ad_fail(c, n, "scan axes must be known");
        }

    /* the iteration count, computed before the loop */
    if (x->scan) {
        if (x->S == 0) {
            free(x);
            return lt_ad_fail(c, n, "Scan without scanned inputs");
        }
        lt_ival *shape = lt_ad_op1(c, LT_OP_SHAPE, lt_ad_mapped(c, n->in[x->N]));
        lt_ival *ax = lt_ad_scalar(c, LT_I64, (double)x->in_axis[0]);
        lt_node *g = lt_ad_node(c, LT_OP_GATHER, 2, 1);
        if (!shape || !ax || !g) {
            free(x);
            return oom(c);
        }
        g->in[0] = shape;
        g->in[1] = ax;
        lt_ad_attr_int(c, g, "axis", 0);
        lt_type_tensor(&g->out[0]->type, LT_I64, 0, NULL);
        x->T = g->out[0];
    } else {
        x->T = n->in[0] ? lt_ad_mapped(c, n->in[0]) : NULL;
    }

    /* continuation k(final carried..., stacked..., cells...) */
    char nm[300];
    snprintf(nm, sizeof nm, "k_after_%s", *n->name ? n->name : lt_op_names[n->op]);
    x->k = lt_module_add_func(c->m, nm);
    int nactive_out = 0;
    for (int j = 0; j < x->N + x->K; j++)
        nactive_out += active(c, n->out[j]);
    if (!x->k || lt_block_set_params(c->m, x->k->body, x->N + x->K + nactive_out) != LT_OK) {
        free(x);
        return oom(c);
    }
    int p = 0;
    for (int j = 0; j < x->N + x->K; j++) {
        lt_type t = n->out[j] ? n->out[j]->type : x->body->params[x->bp_carried + (j < x->N ? j : 0)]->type;
        lt_ival *v = param(c, x->k->body, p++, n->out[j] ? n->out[j]->name : "unused", &t);
        if (n->out[j])
            c->map[n->out[j]->id] = v;
    }
    for (int j = 0; j < x->N + x->K; j++)
        if (active(c, n->out[j])) {
            lt_type t = n->out[j]->type;
            t.kind = LT_KIND_CELL;
            c->cell[n->out[j]->id] = param(c, x->k->body, p++, "cell", &t);
        }
    lt_block *outer = c->out;
    lt_ival *was[MAXV];
    /* x->ret holds this loop's scan-output adjoints, then the enclosing
     * iteration's results it passes up */
    if (x->K + c->nesc > MAXV) {
        s = lt_ad_fail(c, n, "too many values to return from a loop iteration");
        goto done;
    }
    for (int r = 0; r < c->nesc; r++)
        was[r] = c->esc[r];
    c->out = x->k->body;
    s = lt_ad_block(c, b, i + 1, kont);
    c->out = outer;
    /* an enclosing iteration's results made in k come back up through
     * this loop's calls (their last results) */
    bool moved = false;
    for (int r = 0; s == LT_OK && r < c->nesc; r++)
        moved |= c->esc[r] != was[r];
    x->nesc_o = moved ? c->nesc : 0;
    if (s == LT_OK)
        s = lt_block_set_results(c->m, x->k->body, x->nesc_o);
    for (int r = 0; s == LT_OK && r < x->nesc_o; r++)
        x->k->body->results[r] = c->esc[r];
    if (s != LT_OK)
        goto done;
    lt_ival **outer_esc = c->esc;

    /* the loop function */
    snprintf(nm, sizeof nm, "loop_%s", *n->name ? n->name : lt_op_names[n->op]);
    x->f = lt_module_add_func(c->m, nm);
    int ncells = 0;
    for (int j = 0; j < x->N; j++)
        ncells += active(c, x->body->params[x->bp_carried + j]);
    int nfp = 1 + (x->scan ? 0 : 1) + x->N + ncells + x->K;
    if (!x->f || lt_block_set_params(c->m, x->f->body, nfp) != LT_OK) {
        s = oom(c);
        goto done;
    }
    lt_block *F = x->f->body;
    lt_type ti, tb;
    lt_type_tensor(&ti, LT_I64, 0, NULL);
    lt_type_tensor(&tb, LT_BOOL, 0, NULL);
    p = 0;
    x->i = param(c, F, p++, "i", &ti);
    if (!x->scan)
        x->cond = param(c, F, p++, "cond", &tb);
    for (int j = 0; j < x->N; j++)
        x->carried[j] = param(c, F, p++, x->body->params[x->bp_carried + j]->name,
                              &x->body->params[x->bp_carried + j]->type);
    int q = 0;
    for (int j = 0; j < x->N; j++)
        if (active(c, x->body->params[x->bp_carried + j])) {
            lt_type t = x->body->params[x->bp_carried + j]->type;
            t.kind = LT_KIND_CELL;
            x->cells[q++] = param(c, F, p++, "cell", &t);
        }
    for (int k = 0; k < x->K; k++) {
        lt_type t;
        lt_type_unknown(&t, x->body->results[x->br_scan + k]->type.dtype, -1);
        t.kind = LT_KIND_SEQUENCE;
        x->seqs[k] = param(c, F, p++, "stack", &t);
    }
    c->out = F;
    s = emit_loop_body(c, x);
    c->out = outer;
    if (s != LT_OK)
        goto done;

    /* the first call, where the Loop stood */
    lt_ival *args[4 * MAXV + 8];
    int na = 0;
    args[na++] = lt_ad_scalar(c, LT_I64, 0);
    if (!x->scan)
        args[na++] = n->in[1] ? lt_ad_mapped(c, n->in[1]) : lt_ad_scalar(c, LT_BOOL, 1);
    int init0 = x->scan ? 0 : 2;
    for (int j = 0; j < x->N; j++)
        args[na++] = lt_ad_mapped(c, n->in[init0 + j]);
    for (int j = 0; j < x->N; j++) {
        if (!active(c, x->body->params[x->bp_carried + j]))
            continue;
        const lt_ival *iv = n->in[init0 + j];
        lt_ival *cell = iv->id < c->nsrc && c->cell[iv->id] ? c->cell[iv->id] : lt_ad_new_cell(c, lt_ad_mapped(c, iv));
        args[na++] = cell;
    }
    for (int k = 0; k < x->K; k++) {
        lt_node *e = lt_ad_node(c, LT_OP_SEQUENCE_EMPTY, 0, 1);
        if (!e) {
            s = oom(c);
            break;
        }
        lt_dtype dt = x->body->results[x->br_scan + k]->type.dtype;
        lt_ad_attr_int(c, e, "dtype", dt == LT_UNDEFINED ? LT_F32 : dt);
        e->out[0]->type = x->seqs[k]->type;
        args[na++] = e->out[0];
    }
    for (int a = 0; a < na && s == LT_OK; a++)
        if (!args[a])
            s = oom(c);
    int nret = 0;
    for (int k = 0; k < x->K; k++)
        nret += active(c, n->out[x->N + k]);
    lt_node *first = s == LT_OK ? lt_ad_call(c, x->f, na, args, nret + x->nesc_o) : NULL;
    if (s == LT_OK && !first)
        s = oom(c);
    for (int q = 0; first && q < x->nesc_o; q++) {
        first->out[nret + q]->type = x->k->body->results[q]->type;
        outer_esc[q] = first->out[nret + q];
    }
done:
    free(x);
    return s;
}
