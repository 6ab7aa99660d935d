/* Control flow with full ONNX semantics: If, Loop (trip count and/or
 * condition, loop-carried values, scan outputs), Scan (opset 8 with its batch
 * axis, and 9+ with axes and directions per input and output). Region blocks
 * run through the executor as frames of their own. */
#include "../runtime.h"
#include <stdlib.h>
#include <string.h>

static const lt_block *region(lt_kctx *k, const char *attr)
{
    const lt_attr *a = lt_attr_find(k->node, attr);
    if (!a || a->kind != LT_ATTR_GRAPH || a->region < 0 || a->region >= k->node->nregions)
        return NULL;
    return k->node->regions[a->region];
}

static void free_values(lt_value **v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        lt_value_free(v[i]);
        v[i] = NULL;
    }
}

/* A body's failure said again by the looping node, so that running out of
 * memory (scan outputs piling up) or an interruption names the Loop or Scan
 * and its iteration, not only the body node that happened to fail. */
static lt_status body_failed(lt_kctx *k, lt_status s, int64_t it)
{
    if (s != LT_ERR_NOMEM && s != LT_ERR_INTERRUPTED)
        return s;
    char inner[LT_ERR_MSG_MAX];
    const char *msg = k->err->msg, *path = lt_k_module(k)->path;
    size_t pl = path ? strlen(path) : 0;
    if (pl && strncmp(msg, path, pl) == 0 && msg[pl] == ':' && msg[pl + 1] == ' ')
        msg += pl + 2;
    snprintf(inner, sizeof inner, "%s", msg);
    return lt_k_fail(k, s, "iteration %lld: %s", (long long)it, inner);
}

static bool truthy(const lt_tensor *t)
{
    return t && t->numel >= 1 && lt_tensor_get_f64(t, 0) != 0;
}

static lt_status op_if(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0);
    if (!c || c->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "the condition must hold exactly one element");
    const lt_block *b = region(k, truthy(c) ? "then_branch" : "else_branch");
    if (!b)
        return lt_k_fail(k, LT_ERR_INVALID, "missing branch graph");
    if (b->nresults != k->nout)
        return lt_k_fail(k, LT_ERR_INVALID, "branch returns %d values, the node has %d outputs", b->nresults,
                         k->nout);
    lt_value **res = calloc(b->nresults + 1, sizeof *res);
    if (!res)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_k_run_block(k, b, NULL, res);
    if (s == LT_OK)
        for (int i = 0; i < k->nout; i++) {
            lt_k_out_value(k, i, res[i]);
            res[i] = NULL;
        }
    free_values(res, b->nresults);
    free(res);
    return s;
}

/* Stacks n tensors of one shape along a new axis (at `axis`), in reverse
 * order when `reverse`. */
static lt_status stack(lt_kctx *k, int out, lt_value **items, int64_t n, int axis, bool reverse, const lt_ival *iv)
{
    if (n == 0) {
        /* no iterations: an empty tensor whose other dims come from the type */
        int64_t dims[LT_MAX_RANK] = {0};
        int rank = 1;
        lt_dtype dt = iv && iv->type.dtype != LT_UNDEFINED ? iv->type.dtype : LT_F32;
        if (iv && iv->type.rank >= 1) {
            rank = iv->type.rank;
            for (int d = 0; d < rank; d++)
                dims[d] = iv->type.dims[d].sym < 0 && iv->type.dims[d].v >= 0 ? iv->type.dims[d].v : 0;
            dims[axis < rank ? axis : 0] = 0;
        }
        return lt_k_out(k, out, dt, rank, dims, NULL);
    }
    const lt_tensor *t0 = &items[0]->t;
    if (items[0]->kind != LT_VAL_TENSOR)
        return lt_k_fail(k, LT_ERR_RUNTIME, "scan output %d is not a tensor", out);
    if (axis < 0)
        axis += t0->rank + 1;
    if (axis < 0 || axis > t0->rank || t0->rank + 1 > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_INVALID, "scan output axis out of range");
    for (int64_t i = 1; i < n; i++) {
        const lt_tensor *t = &items[i]->t;
        bool same = items[i]->kind == LT_VAL_TENSOR && t->dtype == t0->dtype && t->rank == t0->rank;
        for (int d = 0; same && d < t->rank; d++)
            same = t->dims[d] == t0->dims[d];
        if (!same)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scan output %d changes shape or type between iterations", out);
    }
    int64_t dims[LT_MAX_RANK];
    for (int d = 0, j = 0; d <= t0->rank; d++)
        dims[d] = d == axis ? n : t0->dims[j++];
    lt_tensor *o;
    lt_status s = lt_k_out(k, out, t0->dtype, t0->rank + 1, dims, &o);
    if (s != LT_OK)
        return s;
    size_t es = lt_dtype_size(t0->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= t0->dims[d];
    for (int d = axis; d < t0->rank; d++)
        inner *= t0->dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t pos = reverse ? n - 1 - i : i;
        const char *src = items[i]->t.data;
        for (int64_t a = 0; a < outer; a++)
            memcpy((char *)o->data + ((size_t)a * n + pos) * inner * es, src + (size_t)a * inner * es, inner * es);
    }
    return LT_OK;
}

static lt_status op_loop(lt_kctx *k)
{
    const lt_block *b = region(k, "body");
    if (!b)
        return lt_k_fail(k, LT_ERR_INVALID, "missing body graph");
    int ncarried = k->nin - 2;
    if (ncarried < 0 || b->nparams != ncarried + 2 || b->nresults < ncarried + 1)
        return lt_k_fail(k, LT_ERR_INVALID, "body takes %d inputs and returns %d values for %d carried values",
                         b->nparams, b->nresults, ncarried);
    int nscan = b->nresults - 1 - ncarried;
    if (k->nout != ncarried + nscan)
        return lt_k_fail(k, LT_ERR_INVALID, "node has %d outputs, the body implies %d", k->nout, ncarried + nscan);
    const lt_tensor *mt = lt_k_in(k, 0), *ct = lt_k_in(k, 1);
    int64_t max_trip = mt ? lt_tensor_get_i64(mt, 0) : INT64_MAX;
    if (mt && mt->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "trip count must be a scalar");
    bool cond = ct ? truthy(ct) : true;

    lt_status s = LT_OK;
    int nargs = b->nparams;
    lt_value **args = calloc(nargs + 1, sizeof *args), **res = calloc(b->nresults + 1, sizeof *res);
    lt_value ***scans = calloc(nscan + 1, sizeof *scans);
    int64_t scan_cap = 0, iters = 0;
    lt_value *iv = lt_value_new_tensor(), *cv = lt_value_new_tensor();
    if (!args || !res || !scans || !iv || !cv) {
        s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((s = lt_tensor_alloc(&iv->t, LT_I64, 0, NULL, k->err)) != LT_OK ||
        (s = lt_tensor_alloc(&cv->t, LT_BOOL, 0, NULL, k->err)) != LT_OK)
        goto done;
    for (int i = 0; i < ncarried; i++) {
        if (!k->in[2 + i]) {
            s = lt_k_fail(k, LT_ERR_RUNTIME, "loop-carried input %d is missing", i);
            goto done;
        }
        args[2 + i] = lt_value_ref(k->in[2 + i]);
    }
    args[0] = iv;
    args[1] = cv;
    for (int64_t it = 0; it < max_trip && cond; it++) {
        if (lt_k_interrupted()) {
            s = lt_k_fail(k, LT_ERR_INTERRUPTED, "interrupted in iteration %lld", (long long)it);
            goto done;
        }
        *(int64_t *)iv->t.data = it;
        *(uint8_t *)cv->t.data = cond;
        s = lt_k_run_block(k, b, args, res);
        if (s != LT_OK) {
            s = body_failed(k, s, it);
            goto done;
        }
        const lt_tensor *nc = lt_value_tensor(res[0]);
        if (!nc || nc->numel != 1) {
            s = lt_k_fail(k, LT_ERR_RUNTIME, "body's condition output must be one boolean");
            goto done;
        }
        cond = truthy(nc);
        for (int i = 0; i < ncarried; i++) {
            lt_value_free(args[2 + i]);
            args[2 + i] = res[1 + i];
            res[1 + i] = NULL;
        }
        if (nscan && iters == scan_cap) {
            scan_cap = scan_cap ? scan_cap * 2 : 16;
            for (int j = 0; j < nscan; j++) {
                lt_value **q = (size_t)scan_cap <= SIZE_MAX / sizeof *q ? realloc(scans[j], sizeof *q * (size_t)scan_cap)
                                                                        : NULL;
                if (!q) {
                    s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory after %lld iterations (scan outputs of %lld "
                                  "iterations are kept until the loop ends)", (long long)iters, (long long)iters);
                    goto done;
                }
                scans[j] = q;
            }
        }
        for (int j = 0; j < nscan; j++) {
            scans[j][iters] = res[1 + ncarried + j];
            res[1 + ncarried + j] = NULL;
        }
        iters++;
        free_values(res, b->nresults);
    }
    for (int i = 0; i < ncarried; i++) {
        lt_k_out_value(k, i, args[2 + i]);
        args[2 + i] = NULL;
    }
    for (int j = 0; j < nscan && s == LT_OK; j++)
        s = stack(k, ncarried + j, scans[j], iters, 0, false, k->node->out[ncarried + j]);
done:
    if (args) {
        args[0] = args[1] = NULL;
        free_values(args, nargs);
    }
    lt_value_free(iv);
    lt_value_free(cv);
    if (res)
        free_values(res, b->nresults);
    for (int j = 0; scans && j < nscan; j++) {
        if (scans[j])
            free_values(scans[j], iters);
        free(scans[j]);
    }
    free(scans);
    free(args);
    free(res);
    return s;
}

/* Copies slice `i` along `axis` of t into a new tensor value. */
static lt_status slice_axis(lt_kctx *k, const lt_tensor *t, int axis, int64_t i, lt_value **out)
{
    int64_t dims[LT_MAX_RANK];
    int64_t outer = 1, inner = 1, n = t->dims[axis];
    for (int d = 0, j = 0; d < t->rank; d++) {
        if (d == axis)
            continue;
        dims[j++] = t->dims[d];
        if (d < axis)
            outer *= t->dims[d];
        else
            inner *= t->dims[d];
    }
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_tensor_alloc(&v->t, t->dtype, t->rank - 1, dims, k->err);
    if (s != LT_OK) {
        free(v);
        return s;
    }
    size_t es = lt_dtype_size(t->dtype);
    for (int64_t a = 0; a < outer; a++)
        memcpy((char *)v->t.data + (size_t)a * inner * es, (const char *)t->data + ((size_t)a * n + i) * inner * es,
               inner * es);
    *out = v;
    return LT_OK;
}

/* One Scan over tensors states[] and scan inputs xs[]; outputs go to
 * final[] (states) and stacked scan outputs through stack(). */
static lt_status scan_run(lt_kctx *k, const lt_block *b, int nstate, lt_value **states, int nin_scan,
                          const lt_tensor **xs, const int64_t *in_axes, const int64_t *in_dirs, int nout_scan,
                          lt_value ***scans, int64_t *iters_out)
{
    int64_t T = -1;
    for (int j = 0; j < nin_scan; j++) {
        int64_t ax = in_axes[j];
        if (ax < 0 || ax >= xs[j]->rank)
            return lt_k_fail(k, LT_ERR_INVALID, "scan input axis %lld out of range", (long long)ax);
        if (T >= 0 && xs[j]->dims[ax] != T)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scan inputs disagree on the sequence length");
        T = xs[j]->dims[ax];
    }
    if (T < 0)
        T = 0;
    lt_status s = LT_OK;
    lt_value **args = calloc(nstate + nin_scan + 1, sizeof *args), **res = calloc(b->nresults + 1, sizeof *res);
    if (!args || !res) {
        free(args);
        free(res);
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    for (int j = 0; j < nout_scan; j++) {
        scans[j] = calloc(T + 1, sizeof **scans);
        if (!scans[j]) {
            s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    for (int64_t t = 0; t < T; t++) {
        if (lt_k_interrupted()) {
            s = lt_k_fail(k, LT_ERR_INTERRUPTED, "interrupted in iteration %lld", (long long)t);
            goto done;
        }
        for (int i = 0; i < nstate; i++)
            args[i] = states[i];
        for (int j = 0; j < nin_scan && s == LT_OK; j++) {
            int64_t pos = in_dirs[j] ? T - 1 - t : t;
            s = slice_axis(k, xs[j], (int)in_axes[j], pos, &args[nstate + j]);
        }
        if (s == LT_OK && (s = lt_k_run_block(k, b, args, res)) != LT_OK)
            s = body_failed(k, s, t);
        for (int j = 0; j < nin_scan; j++) {
            lt_value_free(args[nstate + j]);
            args[nstate + j] = NULL;
        }
        if (s != LT_OK)
            goto done;
        for (int i = 0; i < nstate; i++) {
            lt_value_free(states[i]);
            states[i] = res[i];
            res[i] = NULL;
        }
        for (int j = 0; j < nout_scan; j++) {
            scans[j][t] = res[nstate + j];
            res[nstate + j] = NULL;
        }
    }
    *iters_out = T;
done:
    free_values(res, b->nresults);
    free(res);
    free(args);
    return s;
}

/* A new tensor of t's type whose axis 0 has n entries: t's first
 * min(n, t's) rows, then zeros (Scan-8's sequence lengths: a shorter
 * sequence's scan inputs cut, its scan outputs padded). */
static lt_status resize_axis0(lt_kctx *k, const lt_tensor *t, int64_t n, lt_value **out)
{
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, t->dims, sizeof *dims * (size_t)t->rank);
    dims[0] = n;
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_tensor_alloc(&v->t, t->dtype, t->rank, dims, k->err);
    if (s != LT_OK) {
        free(v);
        return s;
    }
    size_t row = t->dims[0] ? (size_t)(t->numel / t->dims[0]) * lt_dtype_size(t->dtype) : 0;
    size_t keep = (size_t)(n < t->dims[0] ? n : t->dims[0]) * row;
    if (keep)
        memcpy(v->t.data, t->data, keep);
    memset((char *)v->t.data + keep, 0, (size_t)n * row - keep);
    *out = v;
    return LT_OK;
}

/* Scan-8's sequence_lens: one length per batch entry in 0..T (an absent
 * input: every sequence is T long). */
static lt_status scan8_lengths(lt_kctx *k, int64_t B, int64_t T, int64_t **lens)
{
    *lens = NULL;
    const lt_tensor *l = k->nin > 0 && k->in[0] ? lt_k_in(k, 0) : NULL;
    if (!l)
        return LT_OK;
    if (l->rank != 1 || l->dims[0] != B)
        return lt_k_fail(k, LT_ERR_INVALID, "sequence_lens has %lld entries for a batch of %lld",
                         (long long)(l->rank == 1 ? l->dims[0] : l->numel), (long long)B);
    int64_t *v = malloc(sizeof *v * (size_t)(B + 1));
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < B; b++) {
        double x = lt_tensor_get_f64(l, b);
        if (!(x >= 0 && x <= (double)T)) {
            free(v);
            return lt_k_fail(k, LT_ERR_INVALID, "sequence_lens[%lld] is %g, outside 0..%lld (the sequence axis)",
                             (long long)b, x, (long long)T);
        }
        v[b] = (int64_t)x;
    }
    *lens = v;
    return LT_OK;
}

static lt_status op_scan(lt_kctx *k)
{
    const lt_block *b = region(k, "body");
    if (!b)
        return lt_k_fail(k, LT_ERR_INVALID, "missing body graph");
    bool v8 = k->node->opset < 9;
    int first = v8 ? 1 : 0; /* opset 8: input 0 is sequence_lens */
    int64_t nscan_in = lt_attr_int(k->node, "num_scan_inputs", -1);
    int nstate = k->nin - first - (int)nscan_in;
    if (nscan_in < 0 || nstate < 0 || b->nparams != nstate + nscan_in || b->nresults < nstate)
        return lt_k_fail(k, LT_ERR_INVALID, "num_scan_inputs does not fit the node and its body");
    int nscan_out = b->nresults - nstate;
    if (k->nout != nstate + nscan_out)
        return lt_k_fail(k, LT_ERR_INVALID, "node has %d outputs, the body implies %d", k->nout, nstate + nscan_out);
    int na;
    int64_t in_axes[64] = {0}, in_dirs[64] = {0}, out_axes[64] = {0}, out_dirs[64] = {0};
    if (nscan_in > 64 || nscan_out > 64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "more than 64 scan inputs or outputs");
    const int64_t *a;
    if ((a = lt_attr_ints(k->node, v8 ? "directions" : "scan_input_directions", &na)))
        for (int i = 0; i < na && i < nscan_in; i++)
            in_dirs[i] = a[i];
    if (!v8) {
        if ((a = lt_attr_ints(k->node, "scan_input_axes", &na)))
            for (int i = 0; i < na && i < nscan_in; i++)
                in_axes[i] = a[i];
        if ((a = lt_attr_ints(k->node, "scan_output_axes", &na)))
            for (int i = 0; i < na && i < nscan_out; i++)
                out_axes[i] = a[i];
        if ((a = lt_attr_ints(k->node, "scan_output_directions", &na)))
            for (int i = 0; i < na && i < nscan_out; i++)
                out_dirs[i] = a[i];
    }
    const lt_tensor *xs[64];
    for (int j = 0; j < nscan_in; j++) {
        xs[j] = lt_k_in(k, first + nstate + j);
        if (!xs[j])
            return lt_k_fail(k, LT_ERR_RUNTIME, "scan input %d is missing", j);
        if (!v8 && in_axes[j] < 0)
            in_axes[j] += xs[j]->rank;
    }
    lt_status s = LT_OK;
    lt_value **states = calloc(nstate + 1, sizeof *states);
    lt_value ***scans = calloc(nscan_out + 1, sizeof *scans);
    int64_t T = 0;
    if (!states || !scans) {
        free(states);
        free(scans);
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    if (!v8) {
        for (int i = 0; i < nstate; i++)
            states[i] = lt_value_ref(k->in[first + i]);
        s = scan_run(k, b, nstate, states, (int)nscan_in, xs, in_axes, in_dirs, nscan_out, scans, &T);
        for (int i = 0; i < nstate && s == LT_OK; i++) {
            lt_k_out_value(k, i, states[i]);
            states[i] = NULL;
        }
        for (int j = 0; j < nscan_out && s == LT_OK; j++) {
            int64_t ax = out_axes[j];
            s = stack(k, nstate + j, scans[j], (int)T, (int)ax, out_dirs[j] != 0, k->node->out[nstate + j]);
        }
    } else {
        /* opset 8: axis 0 of every state and scan input is the batch; the
         * sequence axis of scan inputs is 1; outputs stack on axis 1 */
        const lt_tensor *st0 = nstate ? lt_k_in(k, first) : xs[0];
        int64_t B = st0 ? st0->dims[0] : 0, T8 = nscan_in && xs[0]->rank >= 2 ? xs[0]->dims[1] : 0, *lens = NULL;
        for (int j = 0; j < nscan_in && s == LT_OK; j++)
            if (xs[j]->rank < 2 || xs[j]->dims[0] != B || xs[j]->dims[1] != T8)
                s = lt_k_fail(k, LT_ERR_INVALID, "Scan-8's scan input %d is not [batch %lld, sequence %lld, ...]", j,
                              (long long)B, (long long)T8);
        if (s == LT_OK)
            s = scan8_lengths(k, B, T8, &lens);
        lt_value ***per_b_state = calloc(B + 1, sizeof *per_b_state);
        lt_value **batch_scan_out = calloc((size_t)nscan_out * (B + 1) + 1, sizeof *batch_scan_out);
        if (s == LT_OK && (!per_b_state || !batch_scan_out))
            s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        for (int64_t bi = 0; bi < B && s == LT_OK; bi++) {
            const lt_tensor *xb[64];
            lt_value *xbv[64] = {0};
            int64_t axes1[64];
            for (int j = 0; j < nscan_in && s == LT_OK; j++) {
                s = slice_axis(k, xs[j], 0, bi, &xbv[j]);
                if (s == LT_OK && lens && lens[bi] < T8) {
                    /* this sequence's first lens[bi] steps only */
                    lt_value *cut = NULL;
                    s = resize_axis0(k, &xbv[j]->t, lens[bi], &cut);
                    lt_value_free(xbv[j]);
                    xbv[j] = cut;
                }
                xb[j] = xbv[j] ? &xbv[j]->t : NULL;
                axes1[j] = 0;
            }
            for (int i = 0; i < nstate && s == LT_OK; i++)
                s = slice_axis(k, lt_k_in(k, first + i), 0, bi, &states[i]);
            int64_t Tb = 0;
            lt_value **sc[64] = {0};
            if (s == LT_OK)
                s = scan_run(k, b, nstate, states, (int)nscan_in, xb, axes1, in_dirs, nscan_out, sc, &Tb);
            for (int j = 0; j < nscan_in; j++)
                lt_value_free(xbv[j]);
            per_b_state[bi] = calloc(nstate + 1, sizeof **per_b_state);
            for (int i = 0; i < nstate; i++) {
                if (per_b_state[bi])
                    per_b_state[bi][i] = states[i];
                else
                    lt_value_free(states[i]);
                states[i] = NULL;
            }
            /* stack this batch element's outputs into one tensor each,
             * zeros past a shorter sequence's end (none at all: filled in
             * below from another element's shape) */
            for (int j = 0; j < nscan_out; j++) {
                if (s == LT_OK && Tb > 0) {
                    lt_kctx tmp = *k;
                    lt_value *slot[1] = {NULL};
                    tmp.out = slot;
                    tmp.nout = 1;
                    s = stack(&tmp, 0, sc[j], (int)Tb, 0, false, NULL);
                    if (s == LT_OK && Tb < T8) {
                        lt_value *padded = NULL;
                        s = resize_axis0(k, &slot[0]->t, T8, &padded);
                        lt_value_free(slot[0]);
                        slot[0] = padded;
                    }
                    batch_scan_out[(size_t)j * B + bi] = slot[0];
                }
                if (sc[j])
                    free_values(sc[j], (int)Tb);
                free(sc[j]);
            }
        }
        for (int i = 0; i < nstate && s == LT_OK; i++) {
            lt_value **col = calloc(B + 1, sizeof *col);
            for (int64_t bi = 0; col && bi < B; bi++)
                col[bi] = per_b_state[bi][i];
            s = col ? stack(k, i, col, (int)B, 0, false, NULL) : lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
            free(col);
        }
        for (int j = 0; j < nscan_out && s == LT_OK; j++) {
            lt_value **col = &batch_scan_out[(size_t)j * B];
            const lt_value *shape = NULL;
            for (int64_t bi = 0; bi < B && !shape; bi++)
                shape = col[bi];
            for (int64_t bi = 0; bi < B && s == LT_OK; bi++)
                if (!col[bi]) {
                    if (!shape)
                        s = lt_k_fail(k, LT_ERR_UNSUPPORTED,
                                      "every sequence_lens entry is 0: scan output %d has no shape to fill", j);
                    else if ((s = resize_axis0(k, &shape->t, T8, &col[bi])) == LT_OK)
                        memset(col[bi]->t.data, 0, (size_t)col[bi]->t.numel * lt_dtype_size(col[bi]->t.dtype));
                }
            if (s == LT_OK)
                s = stack(k, nstate + j, col, (int)B, 0, false, NULL);
        }
        free(lens);
        for (int64_t bi = 0; bi < B; bi++) {
            if (per_b_state && per_b_state[bi]) {
                free_values(per_b_state[bi], nstate);
                free(per_b_state[bi]);
            }
        }
        if (batch_scan_out)
            free_values(batch_scan_out, nscan_out * (int)B);
        free(per_b_state);
        free(batch_scan_out);
        T = 0;
    }
    free_values(states, nstate);
    for (int j = 0; j < nscan_out; j++) {
        if (scans[j])
            free_values(scans[j], (int)T);
        free(scans[j]);
    }
    free(states);
    free(scans);
    return s;
}

void lt_cpu_register_control_seq(lt_kernel_fn *tab);
void lt_cpu_register_control_call(lt_kernel_fn *tab);
void lt_cpu_register_control_cells(lt_kernel_fn *tab);
void lt_cpu_register_control_gradient(lt_kernel_fn *tab);

void lt_cpu_register_control(lt_kernel_fn *tab)
{
    tab[LT_OP_IF] = op_if;
    tab[LT_OP_LOOP] = op_loop;
    tab[LT_OP_SCAN] = op_scan;
    lt_cpu_register_control_seq(tab);
    lt_cpu_register_control_call(tab);
    lt_cpu_register_control_cells(tab);
    lt_cpu_register_control_gradient(tab);
}
