/* Shape inference rules: control flow (If, Loop, Scan), sequences and
 * optionals. Region parameters get their types from the node's inputs before
 * the region is inferred (lt_infer_region_params). */
#include "infer.h"

static void join(lt_type *a, const lt_type *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype) {
        if (a->dtype == LT_UNDEFINED)
            *a = *b;
        return;
    }
    if (a->rank != b->rank) {
        a->rank = -1;
        return;
    }
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d].sym != b->dims[d].sym || a->dims[d].v != b->dims[d].v)
            a->dims[d] = (lt_dim){-1, -1};
}

static bool unknown(const lt_type *t) { return t->dtype == LT_UNDEFINED && t->rank < 0; }

/* A carried value's declared type (a Loop or Scan state, a Scan slice) whose rank the value it starts from
 * contradicts (torch's TorchScript exporter declares rank 3 for a state of
 * rank 2 in a loop after an unbind): the start's type is the one to trust,
 * as a rule's answer replaces a declared rank for node outputs (infer.c). */
static bool other_rank(const lt_type *declared, const lt_type *start)
{
    return declared->kind == LT_KIND_TENSOR && start->kind == LT_KIND_TENSOR && declared->rank >= 0 &&
           start->rank >= 0 && declared->rank != start->rank;
}

/* A sequence's element type, where rules know it (LT_SEQ_ELEMS: a file's
 * declared sequence type never has one, tensor_proto.c), or a sequence with
 * no elements yet (LT_SEQ_NONE: SequenceEmpty's, and a Loop's carried
 * sequence that starts from one), to which the first element inserted
 * gives the type. */
static bool seq_empty(const lt_type *t) { return t->kind == LT_KIND_SEQUENCE && t->inner == LT_SEQ_NONE; }

static bool seq_known(const lt_type *t)
{
    return t->kind == LT_KIND_SEQUENCE && t->inner == LT_SEQ_ELEMS && t->rank >= 0;
}

/* elements of a and of b */
static void seq_join(lt_type *a, const lt_type *b)
{
    if (seq_empty(a) && (seq_empty(b) || seq_known(b))) {
        *a = *b;
        return;
    }
    if (seq_empty(b) && seq_known(a))
        return;
    if (!seq_known(a) || !seq_known(b) || a->dtype != b->dtype || a->rank != b->rank) {
        lt_type_unknown(a, a->dtype != LT_UNDEFINED ? a->dtype : b->dtype, -1);
        a->kind = LT_KIND_SEQUENCE;
        return;
    }
    join(a, b);
}

/* a sequence of elements of tensor type t */
static lt_type seq_of(const lt_type *t)
{
    lt_type s = *t;
    if (t->kind != LT_KIND_TENSOR || t->rank < 0)
        lt_type_unknown(&s, t->dtype, -1);
    else
        s.inner = LT_SEQ_ELEMS;
    s.kind = LT_KIND_SEQUENCE;
    return s;
}

/* A carried value's param with an element type but no shape declared (a
 * loop body's state as some exporters leave it): the start's element type
 * and rank, with every dimension unknown (the value may grow from one
 * iteration to the next, its rank does not change); without a rank, a
 * MatMul or a broadcast in the body cannot be differentiated */
static bool no_shape(const lt_type *declared, const lt_type *start)
{
    return declared->kind == LT_KIND_TENSOR && start->kind == LT_KIND_TENSOR && declared->rank < 0 &&
           start->rank >= 0 && (declared->dtype == LT_UNDEFINED || declared->dtype == start->dtype);
}

static void start_rank(lt_type *param, const lt_type *start)
{
    lt_type_unknown(param, start->dtype, start->rank);
}

static void add_axis(lt_type *t, int axis, lt_dim d)
{
    if (t->kind != LT_KIND_TENSOR || t->rank < 0 || t->rank >= LT_MAX_RANK) {
        t->rank = -1;
        return;
    }
    if (axis < 0)
        axis += t->rank + 1;
    if (axis < 0 || axis > t->rank) {
        t->rank = -1;
        return;
    }
    for (int i = t->rank; i > axis; i--)
        t->dims[i] = t->dims[i - 1];
    t->dims[axis] = d;
    t->rank++;
}

void lt_infer_region_params(lt_node *n)
{
    if (n->op == LT_OP_LOOP && n->nregions == 1) {
        lt_block *b = n->regions[0];
        if (b->nparams >= 2) {
            if (unknown(&b->params[0]->type))
                lt_type_tensor(&b->params[0]->type, LT_I64, 0, NULL);
            if (unknown(&b->params[1]->type))
                lt_type_tensor(&b->params[1]->type, LT_BOOL, 0, NULL);
        }
        for (int i = 2; i < b->nparams && i < n->nin; i++) {
            if (!n->in[i])
                continue;
            if (unknown(&b->params[i]->type) || other_rank(&b->params[i]->type, &n->in[i]->type))
                b->params[i]->type = n->in[i]->type;
            else if (no_shape(&b->params[i]->type, &n->in[i]->type))
                start_rank(&b->params[i]->type, &n->in[i]->type);
            else if (b->params[i]->type.kind == LT_KIND_SEQUENCE && seq_empty(&n->in[i]->type) &&
                     b->params[i]->type.dtype == n->in[i]->type.dtype)
                b->params[i]->type = n->in[i]->type; /* its elements are those the body inserts */
        }
    } else if (n->op == LT_OP_SCAN && n->nregions == 1 && n->opset >= 9) {
        lt_block *b = n->regions[0];
        int nscan = (int)lt_attr_int(n, "num_scan_inputs", 0), nstate = n->nin - nscan, na;
        const int64_t *axes = lt_attr_ints(n, "scan_input_axes", &na);
        for (int i = 0; i < b->nparams && i < n->nin; i++) {
            if (!n->in[i])
                continue;
            lt_type t = n->in[i]->type;
            if (i >= nstate && t.rank > 0) {
                int ax = axes && i - nstate < na ? (int)axes[i - nstate] : 0;
                if (ax < 0)
                    ax += t.rank;
                if (ax >= 0 && ax < t.rank) {
                    for (int d = ax; d + 1 < t.rank; d++)
                        t.dims[d] = t.dims[d + 1];
                    t.rank--;
                }
            }
            if (unknown(&b->params[i]->type) || other_rank(&b->params[i]->type, &t))
                b->params[i]->type = t;
            else if (no_shape(&b->params[i]->type, &t)) {
                if (i < nstate)
                    start_rank(&b->params[i]->type, &t);
                else
                    b->params[i]->type = t; /* every slice has the same shape */
            }
        }
    } else if (n->op == LT_OP_SEQUENCE_MAP && n->nregions == 1) {
        lt_block *b = n->regions[0];
        for (int i = 0; i < b->nparams && i < n->nin; i++) {
            if (!n->in[i] || !unknown(&b->params[i]->type))
                continue;
            lt_type t = n->in[i]->type;
            if (t.kind == LT_KIND_SEQUENCE)
                lt_type_unknown(&t, t.dtype, -1);
            b->params[i]->type = t;
        }
    }
}

static lt_status infer_if(lt_infer_ctx *c, lt_node *n)
{
    if (n->nregions != 2)
        return LT_OK;
    for (int i = 0; i < n->nout; i++) {
        if (!n->out[i] || i >= n->regions[0]->nresults || i >= n->regions[1]->nresults)
            continue;
        lt_type t = n->regions[0]->results[i]->type;
        if (t.kind == LT_KIND_SEQUENCE)
            seq_join(&t, &n->regions[1]->results[i]->type);
        else
            join(&t, &n->regions[1]->results[i]->type);
        n->out[i]->type = t;
    }
    return LT_OK;
}

static lt_status infer_loop(lt_infer_ctx *c, lt_node *n)
{
    if (n->nregions != 1)
        return LT_OK;
    lt_block *b = n->regions[0];
    int ncarried = n->nin - 2;
    const lt_tensor *trip = lt_infer_const(c, n->in[0]);
    lt_dim iters = {-1, -1};
    if (trip && trip->numel == 1 && !n->in[1])
        iters.v = trip->dtype == LT_I64 ? *(const int64_t *)trip->data : -1;
    for (int i = 0; i < n->nout; i++) {
        if (!n->out[i] || 1 + i >= b->nresults)
            continue;
        lt_type t = b->results[1 + i]->type;
        if (i < ncarried) {
            if (unknown(&t) && n->in[2 + i])
                t = n->in[2 + i]->type;
        } else {
            add_axis(&t, 0, iters);
        }
        n->out[i]->type = t;
    }
    return LT_OK;
}

static lt_status infer_scan(lt_infer_ctx *c, lt_node *n)
{
    if (n->nregions != 1 || n->opset < 9)
        return LT_OK;
    lt_block *b = n->regions[0];
    int nscan = (int)lt_attr_int(n, "num_scan_inputs", 0), nstate = n->nin - nscan, na, nb;
    const int64_t *in_axes = lt_attr_ints(n, "scan_input_axes", &na);
    const int64_t *out_axes = lt_attr_ints(n, "scan_output_axes", &nb);
    /* the axes must name axes the values have: the run refuses others, and
     * the gradient would be built on them */
    if (in_axes && na != nscan)
        return lt_infer_fail(c, n, "scan_input_axes has %d entries for %d scan inputs", na, nscan);
    if (out_axes && nb != b->nresults - nstate)
        return lt_infer_fail(c, n, "scan_output_axes has %d entries for %d scan outputs", nb, b->nresults - nstate);
    for (int i = 0; in_axes && i < na && nstate + i < n->nin; i++) {
        int r = n->in[nstate + i] ? n->in[nstate + i]->type.rank : -1;
        if (r >= 0 && (in_axes[i] < -r || in_axes[i] >= r))
            return lt_infer_fail(c, n, "scan_input_axes[%d] is %lld for an input of rank %d", i, (long long)in_axes[i],
                                 r);
    }
    for (int i = 0; out_axes && i < nb && nstate + i < b->nresults; i++) {
        int r = b->results[nstate + i]->type.rank; /* the output has one axis more */
        if (r >= 0 && (out_axes[i] < -(r + 1) || out_axes[i] > r))
            return lt_infer_fail(c, n, "scan_output_axes[%d] is %lld for an output of rank %d", i,
                                 (long long)out_axes[i], r + 1);
    }
    lt_dim T = {-1, -1};
    if (nscan > 0 && n->in[nstate] && n->in[nstate]->type.rank > 0) {
        int ax = in_axes && na > 0 ? (int)in_axes[0] : 0;
        if (ax < 0)
            ax += n->in[nstate]->type.rank;
        if (ax >= 0 && ax < n->in[nstate]->type.rank)
            T = n->in[nstate]->type.dims[ax];
    }
    for (int i = 0; i < n->nout && i < b->nresults; i++) {
        if (!n->out[i])
            continue;
        lt_type t = b->results[i]->type;
        if (i >= nstate)
            add_axis(&t, out_axes && i - nstate < nb ? (int)out_axes[i - nstate] : 0, T);
        n->out[i]->type = t;
    }
    return LT_OK;
}

static void seq_type(lt_node *n, lt_dtype dt)
{
    if (n->nout > 0 && n->out[0]) {
        lt_type_unknown(&n->out[0]->type, dt, -1);
        n->out[0]->type.kind = LT_KIND_SEQUENCE;
    }
}

static lt_dtype in_dtype(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? n->in[i]->type.dtype : LT_UNDEFINED;
}

static lt_status infer_seq_from_input(lt_infer_ctx *c, lt_node *n)
{
    seq_type(n, in_dtype(n, 0));
    if (!n->out[0] || n->nin < 1 || !n->in[0])
        return LT_OK;
    if (n->op == LT_OP_SEQUENCE_CONSTRUCT) {
        lt_type t = seq_of(&n->in[0]->type);
        for (int i = 1; i < n->nin; i++) {
            lt_type e = n->in[i] ? seq_of(&n->in[i]->type) : t;
            seq_join(&t, &e);
        }
        n->out[0]->type = t;
    } else if (n->op == LT_OP_SEQUENCE_INSERT && n->nin >= 2 && n->in[1]) {
        lt_type t = n->in[0]->type, e = seq_of(&n->in[1]->type);
        if (seq_empty(&t) || seq_known(&t)) {
            seq_join(&t, &e);
            n->out[0]->type = t;
        }
    } else if (n->op == LT_OP_SEQUENCE_ERASE && (seq_empty(&n->in[0]->type) || seq_known(&n->in[0]->type))) {
        n->out[0]->type = n->in[0]->type;
    }
    return LT_OK;
}

/* SplitToSequence's elements: the input's type with the split axis of
 * unknown size, or gone where the pieces drop it (no split and keepdims=0,
 * or a constant scalar split of 1 and keepdims=0: runtime/cpu/
 * control_seq.c). The sequence's type carries them (LT_SEQ_ELEMS), so
 * that SequenceAt gives its rank to the ops that read it (a MatMul's
 * gradient needs it). */
static lt_status infer_split_to_seq(lt_infer_ctx *c, lt_node *n)
{
    seq_type(n, in_dtype(n, 0));
    const lt_ival *x = n->nin > 0 ? n->in[0] : NULL;
    if (!n->out[0] || !x || x->type.kind != LT_KIND_TENSOR || x->type.rank < 1)
        return LT_OK;
    int rank = x->type.rank;
    int64_t axis = lt_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return LT_OK;
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    const lt_ival *sp = n->nin > 1 ? n->in[1] : NULL;
    bool drop;
    if (!sp) {
        drop = !keep;
    } else if (sp->type.rank == 0 && !keep) {
        const lt_tensor *k = lt_infer_const(c, sp);
        if (!k || k->numel != 1)
            return LT_OK; /* the rank depends on the split's value */
        drop = lt_tensor_get_i64(k, 0) == 1;
    } else {
        drop = false;
    }
    lt_type t = x->type;
    if (drop) {
        for (int d = (int)axis; d + 1 < rank; d++)
            t.dims[d] = t.dims[d + 1];
        t.rank--;
    } else {
        t.dims[axis].sym = -1;
        t.dims[axis].v = !sp ? 1 : -1;
    }
    t.kind = LT_KIND_SEQUENCE;
    t.inner = LT_SEQ_ELEMS;
    n->out[0]->type = t;
    return LT_OK;
}

static lt_status infer_seq_empty(lt_infer_ctx *c, lt_node *n)
{
    seq_type(n, (lt_dtype)lt_attr_int(n, "dtype", LT_F32));
    if (n->out[0])
        n->out[0]->type.inner = LT_SEQ_NONE;
    return LT_OK;
}

static lt_status infer_seq_at(lt_infer_ctx *c, lt_node *n)
{
    if (!n->out[0])
        return LT_OK;
    /* the elements of a sequence a node made (SplitToSequence, SequenceInsert
     * or Construct, a Loop's carried sequence), as the rules found them; a
     * body's sequence parameter is not relied on (its elements change from
     * one iteration to the next) */
    const lt_ival *s = n->nin > 0 ? n->in[0] : NULL;
    if (s && s->def && seq_known(&s->type)) {
        n->out[0]->type = s->type;
        n->out[0]->type.kind = LT_KIND_TENSOR;
        n->out[0]->type.inner = 0;
    } else {
        lt_type_unknown(&n->out[0]->type, in_dtype(n, 0), -1);
    }
    return LT_OK;
}

static lt_status infer_seq_length(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0])
        lt_type_tensor(&n->out[0]->type, LT_I64, 0, NULL);
    return LT_OK;
}

static lt_status infer_concat_from_seq(lt_infer_ctx *c, lt_node *n)
{
    if (!n->out[0])
        return LT_OK;
    lt_type_unknown(&n->out[0]->type, in_dtype(n, 0), -1);
    /* the elements' type, the axis joined (or a new one) of unknown size: a
     * stack of a loop's states has a rank (torch.stack after a TorchScript
     * loop, whose exporter declares one rank too many) */
    const lt_ival *s = n->nin > 0 ? n->in[0] : NULL;
    if (!s || !s->def || !seq_known(&s->type))
        return LT_OK;
    lt_type t = s->type;
    t.kind = LT_KIND_TENSOR;
    t.inner = 0;
    int64_t axis = lt_attr_int(n, "axis", 0);
    if (lt_attr_int(n, "new_axis", 0) != 0) {
        add_axis(&t, (int)axis, (lt_dim){-1, -1});
    } else {
        if (axis < 0)
            axis += t.rank;
        if (axis < 0 || axis >= t.rank)
            return LT_OK;
        t.dims[axis] = (lt_dim){-1, -1};
    }
    if (t.rank >= 0)
        n->out[0]->type = t;
    return LT_OK;
}

static lt_status infer_optional_has(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0])
        lt_type_tensor(&n->out[0]->type, LT_BOOL, 0, NULL);
    return LT_OK;
}

static lt_status infer_optional_get(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0] && n->nin > 0 && n->in[0]) {
        lt_type t = n->in[0]->type;
        if (t.kind == LT_KIND_OPTIONAL)
            t.kind = t.inner;
        n->out[0]->type = t;
    }
    return LT_OK;
}

static lt_status infer_optional(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0] && n->nin > 0 && n->in[0]) {
        lt_type t = n->in[0]->type;
        t.inner = t.kind == LT_KIND_SEQUENCE ? LT_KIND_SEQUENCE : LT_KIND_TENSOR;
        t.kind = LT_KIND_OPTIONAL;
        n->out[0]->type = t;
    }
    return LT_OK;
}

static lt_status infer_seq_map(lt_infer_ctx *c, lt_node *n)
{
    if (n->nregions != 1)
        return LT_OK;
    for (int i = 0; i < n->nout && i < n->regions[0]->nresults; i++)
        if (n->out[i]) {
            lt_type_unknown(&n->out[i]->type, n->regions[0]->results[i]->type.dtype, -1);
            n->out[i]->type.kind = LT_KIND_SEQUENCE;
        }
    return LT_OK;
}

static lt_status infer_call(lt_infer_ctx *c, lt_node *n)
{
    int64_t fi = lt_attr_int(n, "callee", -1);
    if (fi < 0 || fi >= c->m->nfuncs)
        return lt_infer_fail(c, n, "calls function %lld, which does not exist", (long long)fi);
    const lt_block *b = c->m->funcs[fi]->body;
    for (int i = 0; i < n->nout && i < b->nresults; i++)
        if (n->out[i])
            n->out[i]->type = b->results[i]->type;
    return LT_OK;
}

static lt_status infer_acc_zeros_like(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0] && n->in[0]) {
        n->out[0]->type = n->in[0]->type;
        n->out[0]->type.kind = LT_KIND_CELL;
    }
    return LT_OK;
}

static lt_status infer_acc_read(lt_infer_ctx *c, lt_node *n)
{
    if (n->out[0] && n->in[0]) {
        n->out[0]->type = n->in[0]->type;
        n->out[0]->type.kind = LT_KIND_TENSOR;
    }
    return LT_OK;
}

void lt_infer_register_control(lt_infer_fn *tab)
{
    tab[LT_OP_CALL] = infer_call;
    tab[LT_OP_ACC_ZEROS_LIKE] = infer_acc_zeros_like;
    tab[LT_OP_ACC_READ] = infer_acc_read;
    tab[LT_OP_IF] = infer_if;
    tab[LT_OP_LOOP] = infer_loop;
    tab[LT_OP_SCAN] = infer_scan;
    tab[LT_OP_SEQUENCE_EMPTY] = infer_seq_empty;
    tab[LT_OP_SEQUENCE_CONSTRUCT] = infer_seq_from_input;
    tab[LT_OP_SEQUENCE_INSERT] = infer_seq_from_input;
    tab[LT_OP_SEQUENCE_ERASE] = infer_seq_from_input;
    tab[LT_OP_SPLIT_TO_SEQUENCE] = infer_split_to_seq;
    tab[LT_OP_SEQUENCE_AT] = infer_seq_at;
    tab[LT_OP_SEQUENCE_LENGTH] = infer_seq_length;
    tab[LT_OP_CONCAT_FROM_SEQUENCE] = infer_concat_from_seq;
    tab[LT_OP_SEQUENCE_MAP] = infer_seq_map;
    tab[LT_OP_OPTIONAL] = infer_optional;
    tab[LT_OP_OPTIONAL_HAS_ELEMENT] = infer_optional_has;
    tab[LT_OP_OPTIONAL_GET_ELEMENT] = infer_optional_get;
}
