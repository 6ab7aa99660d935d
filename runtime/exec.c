/* The executor: plan each block once (kernel per node, which values die after
 * which node), then run the plan. Values live in an environment indexed by
 * SSA id; a value is released right after its last use in its own block, so
 * the pool hands its memory to the next allocation. Region blocks (If, Loop,
 * Scan bodies) run through lt_k_run_block. */
#include "exec.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- scratch arena: stack discipline, one frame per kernel call ---- */
typedef struct lt_scratch_chunk {
    struct lt_scratch_chunk *next;
    size_t used, cap;
    _Alignas(64) unsigned char data[];
} lt_scratch_chunk;

static void *scratch_alloc(lt_exec *ex, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    lt_scratch_chunk *c = ex->scratch;
    if (!c || c->cap - c->used < bytes) {
        /* take a cached chunk that fits, else a new one */
        lt_scratch_chunk **pp = &ex->scratch_free, *f;
        while ((f = *pp) && f->cap < bytes)
            pp = &f->next;
        if (f) {
            *pp = f->next;
        } else {
            size_t cap = bytes > ((size_t)1 << 20) ? bytes : ((size_t)1 << 20);
            f = aligned_alloc(64, (sizeof *f + cap + 63) & ~(size_t)63);
            if (!f)
                return NULL;
            f->cap = cap;
        }
        f->used = 0;
        f->next = ex->scratch;
        ex->scratch = f;
        c = f;
    }
    void *p = c->data + c->used;
    c->used += bytes;
    ex->scratch_in_use += bytes;
    if (ex->scratch_in_use > ex->scratch_hw)
        ex->scratch_hw = ex->scratch_in_use;
    return p;
}

typedef struct {
    lt_scratch_chunk *chunk;
    size_t used, in_use;
} scratch_mark;

static scratch_mark scratch_mark_get(lt_exec *ex)
{
    return (scratch_mark){ex->scratch, ex->scratch ? ex->scratch->used : 0, ex->scratch_in_use};
}

static void scratch_release(lt_exec *ex, scratch_mark mk)
{
    while (ex->scratch && ex->scratch != mk.chunk) {
        lt_scratch_chunk *c = ex->scratch;
        ex->scratch = c->next;
        c->next = ex->scratch_free;
        ex->scratch_free = c;
    }
    if (ex->scratch)
        ex->scratch->used = mk.used;
    ex->scratch_in_use = mk.in_use;
}

/* One workspace for every kernel's scratch: when no scratch is taken, the
 * cached chunks give way to a single one as large as the most scratch a
 * run has held at once, its pages faulted in at once. */
static void scratch_reserve(lt_exec *ex)
{
    if (ex->scratch || !ex->scratch_hw)
        return;
    size_t want = ex->scratch_hw > ((size_t)1 << 20) ? ex->scratch_hw : ((size_t)1 << 20);
    if (ex->scratch_free && !ex->scratch_free->next && ex->scratch_free->cap >= want)
        return;
    lt_scratch_chunk *f = aligned_alloc(64, (sizeof *f + want + 63) & ~(size_t)63);
    if (!f)
        return;
    f->cap = want;
    f->used = 0;
    /* every page faulted in now: a kernel's per-thread slices are touched
     * by whichever thread takes a task, and a thread that first reaches a
     * page of its slice many steps later would fault in a steady step */
    memset(f->data, 0, want);
    while (ex->scratch_free) {
        lt_scratch_chunk *c = ex->scratch_free;
        ex->scratch_free = c->next;
        free(c);
    }
    f->next = NULL;
    ex->scratch_free = f;
}

/* ---- planning ---- */
static void mark_reads(const lt_block *owner, const lt_block *b, int at, int *last)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && n->in[j]->block == owner && n->in[j]->def)
                last[n->in[j]->id] = at;
        for (int r = 0; r < n->nregions; r++)
            mark_reads(owner, n->regions[r], at, last);
    }
    for (int j = 0; j < b->nresults; j++)
        if (b->results[j]->block == owner && b->results[j]->def)
            last[b->results[j]->id] = at;
}

static int collect_ids(const lt_block *b, int *ids)
{
    int n = 0;
    for (int p = 0; p < b->nparams; p++)
        if (ids)
            ids[n++] = b->params[p]->id;
        else
            n++;
    for (int i = 0; i < b->nnodes; i++) {
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j]) {
                if (ids)
                    ids[n] = b->nodes[i]->out[j]->id;
                n++;
            }
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            n += collect_ids(b->nodes[i]->regions[r], ids ? ids + n : NULL);
    }
    return n;
}

/* Integer and boolean tensors of at most LT_HOST_SMALL elements, by their
 * static types: loop counters, trip counts, conditions, shapes and the
 * indices made from them. A node that reads and makes only such values runs
 * on the host whatever the session's backend: a loop's condition is then
 * never read back from a device (a copy that waits for every queued kernel)
 * and a counter never makes a round trip per iteration. */
#define LT_HOST_SMALL 16

static bool int_or_bool(lt_dtype t)
{
    switch (t) {
    case LT_BOOL:
    case LT_I8:
    case LT_U8:
    case LT_I16:
    case LT_U16:
    case LT_I32:
    case LT_U32:
    case LT_I64:
    case LT_U64:
        return true;
    default:
        return false;
    }
}

static bool small_host_type(const lt_ival *v)
{
    if (!v)
        return true;
    if (v->type.kind != LT_KIND_TENSOR || v->type.rank < 0)
        return false;
    if (!int_or_bool(v->type.dtype))
        return false;
    int64_t numel = 1;
    for (int d = 0; d < v->type.rank; d++) {
        if (v->type.dims[d].sym >= 0 || v->type.dims[d].v < 0)
            return false;
        numel *= v->type.dims[d].v;
        if (numel > LT_HOST_SMALL)
            return false;
    }
    return true;
}

static bool small_host_node(const lt_node *n)
{
    if (n->nregions > 0 || n->nout == 0)
        return false;
    bool any = false;
    for (int j = 0; j < n->nout; j++) {
        if (!small_host_type(n->out[j]))
            return false;
        any = any || n->out[j];
    }
    for (int j = 0; j < n->nin; j++)
        if (!small_host_type(n->in[j]))
            return false;
    return any;
}

static lt_status plan_block(lt_exec *ex, const lt_block *b, lt_plan **out)
{
    lt_module *m = ex->m;
    lt_plan *p = calloc(1, sizeof *p);
    int *last = malloc(sizeof *last * (m->nvalues ? m->nvalues : 1));
    if (!p || !last) {
        free(p);
        free(last);
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory planning block");
    }
    for (int v = 0; v < m->nvalues; v++)
        last[v] = -1;
    p->nnodes = b->nnodes;
    p->kernels = calloc(b->nnodes ? b->nnodes : 1, sizeof *p->kernels);
    p->free_start = calloc(b->nnodes + 1, sizeof *p->free_start);
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        /* a value nobody reads dies right after its definition */
        for (int j = 0; j < n->nout; j++)
            if (n->out[j])
                last[n->out[j]->id] = i;
        lt_block one = {.nnodes = 1, .nodes = (lt_node **)&b->nodes[i]};
        mark_reads(b, &one, i, last);
    }
    for (int j = 0; j < b->nresults; j++)
        if (b->results[j]->block == b && b->results[j]->def)
            last[b->results[j]->id] = b->nnodes; /* released by the frame */
    /* bucket values by the node after which they die */
    int total = 0;
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j] && last[b->nodes[i]->out[j]->id] < b->nnodes)
                total++;
    p->free_ids = calloc(total ? total : 1, sizeof *p->free_ids);
    if (!p->kernels || !p->free_start || !p->free_ids) {
        free(last);
        lt_plan_free(p);
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory planning block");
    }
    /* a counting sort, stable in definition order: linear in the values */
    int *fs = p->free_start;
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++) {
            lt_ival *v = b->nodes[i]->out[j];
            if (v && last[v->id] >= 0 && last[v->id] < b->nnodes)
                fs[last[v->id] + 1]++;
        }
    for (int at = 0; at < b->nnodes; at++)
        fs[at + 1] += fs[at];
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++) {
            lt_ival *v = b->nodes[i]->out[j];
            if (v && last[v->id] >= 0 && last[v->id] < b->nnodes)
                p->free_ids[fs[last[v->id]]++] = v->id;
        }
    for (int at = b->nnodes; at > 0; at--) /* each start moved on to the next node's: back one */
        fs[at] = fs[at - 1];
    fs[0] = 0;
    p->dies_in = calloc(b->nnodes ? b->nnodes : 1, sizeof *p->dies_in);
    if (!p->dies_in) {
        free(last);
        lt_plan_free(p);
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory planning block");
    }
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin && j < 64; j++)
            if (n->in[j] && n->in[j]->block == b && n->in[j]->def && last[n->in[j]->id] == i)
                p->dies_in[i] |= (uint64_t)1 << j;
    }
    free(last);
    p->nids = collect_ids(b, NULL);
    p->ids = malloc(sizeof *p->ids * (p->nids + 1));
    if (!p->ids) {
        lt_plan_free(p);
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory planning block");
    }
    collect_ids(b, p->ids);
    p->on_dev = calloc(b->nnodes ? b->nnodes : 1, sizeof *p->on_dev);
    p->host_in = calloc(b->nnodes ? b->nnodes : 1, sizeof *p->host_in);
    if (!p->on_dev || !p->host_in) {
        lt_plan_free(p);
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory planning block");
    }
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        p->kernels[i] = lt_cpu_kernels[n->op];
        if (ex->be && !ex->be->host && !small_host_node(n)) {
            lt_kernel_fn dk = ex->be->kernel(ex->be, n, &p->host_in[i]);
            if (dk) {
                p->kernels[i] = dk;
                p->on_dev[i] = true;
            }
        }
        if (!p->kernels[i]) {
            char lb[256];
            lt_status s = lt_errf(ex->err, LT_ERR_UNSUPPORTED, "%s: %s: no CPU kernel for op %s", m->path,
                                  lt_node_label(n, lb, sizeof lb), lt_op_names[n->op]);
            lt_plan_free(p);
            return s;
        }
    }
    p->next_all = ex->plans;
    ex->plans = p;
    *out = p;
    return LT_OK;
}

void lt_plan_free(lt_plan *p)
{
    if (!p)
        return;
    free(p->kernels);
    free(p->on_dev);
    free(p->host_in);
    free(p->free_start);
    free(p->free_ids);
    free(p->dies_in);
    free(p->ids);
    for (int i = 0; i < p->nmem; i++) {
        lt_mplan_free(p->mem[i]);
        free(p->mem[i]);
    }
    free(p->mem);
    free(p);
}

/* ---- checked memory mode: values do not change while they live ---- */
static bool digestible(const lt_value *v)
{
    return v && v->kind == LT_VAL_TENSOR && v->t.data && v->t.numel > 0 && v->t.dtype != LT_STRING;
}

static uint64_t value_digest(const lt_value *v)
{
    return lt_bytes_digest(v->t.data, lt_tensor_nbytes(&v->t));
}

/* Inputs whose bytes differ from the digest taken when they were made: a
 * buffer written while still alive, by this node (after) or another one
 * (before). */
static lt_status check_inputs(lt_kctx *k, bool after)
{
    for (int j = 0; j < k->nin; j++) {
        lt_value *v = k->in[j];
        if (!v || !v->digest_set || !digestible(v) || value_digest(v) == v->digest)
            continue;
        if (after)
            return lt_k_fail(k, LT_ERR_INTERNAL, "checked memory: the kernel wrote into its input %d ('%s')", j,
                             k->node->in[j]->name);
        return lt_k_fail(k, LT_ERR_INTERNAL,
                         "checked memory: input %d ('%s') changed after it was made (its buffer was written "
                         "while it was still alive)",
                         j, k->node->in[j]->name);
    }
    return LT_OK;
}

/* ---- running ---- */
static void env_drop(lt_exec *ex, int id)
{
    lt_value_free(ex->env[id]);
    ex->env[id] = NULL;
}

static const volatile sig_atomic_t *interrupt_flag;

void lt_set_interrupt(const volatile sig_atomic_t *flag) { interrupt_flag = flag; }

bool lt_k_interrupted(void) { return interrupt_flag && *interrupt_flag; }

/* Puts node i's inputs (in[], already read from the environment) where its
 * kernel reads them: on the session's backend when the plan runs it there
 * (host inputs excepted), else on the host. A value that moves is replaced
 * in the environment by its copy, so later readers on the same side take it
 * without another copy; borrowed storage (module parameters, which the
 * optimizer updates on the host between runs) gets a copy for this node
 * only, in tmp[j]; a replaced value waits in tmp[nin + j] until the node
 * has run. A node planned for the backend falls back to the host
 * kernel when an input turns out to be one the backend does not hold. */
static bool cell_op(lt_op op) { return op == LT_OP_ACC_ADD || op == LT_OP_ACC_GEMM || op == LT_OP_ACC_READ; }

/* Inputs that stay where they are, on either side (bit per input): those a
 * kernel reads only the type and dimensions of, a call's arguments, which
 * it hands to the callee's nodes without reading them, and what Identity
 * hands on as a view (a host constant stays on the host for a host reader:
 * the count of a running statistic). */
static uint64_t unmoved_inputs(lt_op op)
{
    if (op == LT_OP_CALL)
        return ~(uint64_t)0;
    if (op == LT_OP_IDENTITY)
        return 1u;
    if (op == LT_OP_GATHER_GRAD) /* (dy, indices, data): data for its shape */
        return 1u << 2;
    if (op == LT_OP_SLICE_GRAD) /* (dy, x, starts, ...): x for its shape */
        return 1u << 1;
    return op == LT_OP_SHAPE || op == LT_OP_SIZE || op == LT_OP_ACC_ZEROS_LIKE ? 1u : 0u;
}

/* A host value small enough that a device node gets a copy of its own and
 * the host keeps the original (a loop counter read by a device Gather and
 * then by the host's Add stays on the host). */
static bool small_host_value(const lt_value *v)
{
    return v->kind == LT_VAL_TENSOR && v->t.numel <= LT_HOST_SMALL && !lt_value_backend(v) && int_or_bool(v->t.dtype);
}

static lt_status place_inputs(lt_exec *ex, const lt_plan *p, int i, lt_kctx *k, lt_kernel_fn *kern, lt_value **tmp)
{
    const lt_node *n = k->node;
    bool dev = p->on_dev[i];
    for (int j = 0; j < n->nin && dev; j++)
        if (k->in[j] && (k->in[j]->kind != LT_VAL_TENSOR || k->in[j]->t.dtype == LT_STRING))
            dev = false;
    /* an accumulation cell stays in the memory AccZerosLike made it in, and
     * the ops on it run on that side */
    if (cell_op(n->op) && n->nin > 0 && k->in[0]) {
        const lt_backend *where = lt_value_backend(k->in[0]);
        if (where && !dev)
            return lt_k_fail(k, LT_ERR_INTERNAL, "an accumulation cell in %s memory, but no %s kernel for the op",
                             where->name, where->name);
        if (!where)
            dev = false;
    }
    if (!dev && p->on_dev[i])
        *kern = lt_cpu_kernels[n->op];
    k->be = dev ? ex->be : NULL;
    if (dev)
        ex->stats.device_nodes++;
    else
        ex->stats.host_nodes++;
    if (!ex->be || ex->be->host)
        return LT_OK;
    uint64_t keep = unmoved_inputs(n->op);
    for (int j = 0; j < n->nin; j++) {
        if (!k->in[j] || ((keep >> j) & 1))
            continue;
        /* a cell stays where it lives: the ops on a cell run there, and any
         * other reader (a Gather of a loop's stacked gradient) gets a copy
         * of its contents for this node only */
        bool cell = n->in[j]->type.kind == LT_KIND_CELL;
        if (cell && cell_op(n->op))
            continue;
        const lt_backend *want = dev && !((p->host_in[i] >> j) & 1) ? ex->be : NULL;
        lt_value *moved;
        lt_status s = lt_value_move(k->in[j], want, &moved, &ex->stats, ex->err);
        if (s != LT_OK) {
            char msg[LT_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", ex->err->msg);
            return lt_k_fail(k, s, "input %d: %s", j, msg);
        }
        if (!moved)
            continue;
        if (lt_profile_enabled())
            lt_profile_copy(n->op, want != NULL);
        /* a value read twice by the node (x * x) moves once */
        lt_value *old = k->in[j];
        for (int jj = j; jj < n->nin; jj++)
            if (k->in[jj] == old)
                k->in[jj] = moved;
        /* a module parameter stays where it lives (the host's borrowed
         * data, or backend memory it is bound to) for the next runs, and a
         * small host value stays on the host for the host's next readers */
        bool borrowed = cell || (old->kind == LT_VAL_TENSOR && !old->t.buf) || n->in[j]->param >= 0 ||
                        (want && small_host_value(old));
        if (borrowed) {
            tmp[j] = moved;
        } else {
            /* the value it replaces goes after the node: an earlier input
             * slot may still point at it */
            tmp[n->nin + j] = ex->env[n->in[j]->id];
            ex->env[n->in[j]->id] = moved;
        }
    }
    /* what the kernel will read is on its side (a host kernel handed device
     * memory would read it as host memory; on cpu-device that goes unseen) */
    for (int j = 0; j < n->nin; j++) {
        const lt_value *v = k->in[j];
        if (!v || ((keep >> j) & 1) || v->kind != LT_VAL_TENSOR || v->t.dtype == LT_STRING)
            continue;
        const lt_backend *at = lt_value_backend(v), *want = dev && !((p->host_in[i] >> j) & 1) ? ex->be : NULL;
        if (at && at->host)
            at = NULL;
        if (at != want)
            return lt_k_fail(k, LT_ERR_INTERNAL, "input %d is in %s memory but the node runs on %s", j,
                             at ? at->name : "host", want ? want->name : "the host");
    }
    return LT_OK;
}

lt_status lt_exec_to_host(lt_exec *ex, int n, lt_value **vals)
{
    for (int i = 0; i < n; i++) {
        lt_value *moved;
        lt_status s = lt_value_move(vals[i], NULL, &moved, &ex->stats, ex->err);
        if (s != LT_OK)
            return s;
        if (moved) {
            lt_value_free(vals[i]);
            vals[i] = moved;
        }
    }
    return LT_OK;
}

static lt_status run_nodes(lt_exec *ex, const lt_block *b, lt_plan *p, lt_mlayout *lay)
{
    lt_value *inbuf[64], *outbuf[64];
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        char lb[256];
        if (lt_k_interrupted())
            return lt_errf(ex->err, LT_ERR_INTERRUPTED, "%s: interrupted before %s", ex->m->path,
                           lt_node_label(n, lb, sizeof lb));
        lt_value **in = n->nin <= 64 ? inbuf : calloc(n->nin, sizeof *in);
        lt_value **outv = n->nout <= 64 ? outbuf : calloc(n->nout, sizeof *outv);
        if (!in || !outv) {
            if (in != inbuf)
                free(in);
            if (outv != outbuf)
                free(outv);
            return lt_errf(ex->err, LT_ERR_NOMEM, "%s: %s: out of memory", ex->m->path,
                           lt_node_label(n, lb, sizeof lb));
        }
        for (int j = 0; j < n->nin; j++)
            in[j] = n->in[j] ? ex->env[n->in[j]->id] : NULL;
        memset(outv, 0, sizeof *outv * n->nout);
        lt_kctx k = {.ex = ex, .node = n, .nin = n->nin, .nout = n->nout, .in = in, .out = outv, .err = ex->err};
        lt_kernel_fn kern = p->kernels[i];
        /* copies at a backend's edges wait in tmp until the node has run;
         * on the host alone nothing moves and tmp stays NULL */
        lt_value *tmpbuf[128], **tmp = NULL;
        if (ex->be && !ex->be->host) {
            tmp = n->nin <= 64 ? tmpbuf : malloc(2 * sizeof *tmp * (size_t)n->nin);
            if (tmp)
                memset(tmp, 0, 2 * sizeof *tmp * (size_t)n->nin);
        }
        lt_status s = tmp || !ex->be || ex->be->host
                          ? place_inputs(ex, p, i, &k, &kern, tmp)
                          : lt_errf(ex->err, LT_ERR_NOMEM, "%s: %s: out of memory", ex->m->path,
                                    lt_node_label(n, lb, sizeof lb));
        scratch_mark mk = scratch_mark_get(ex);
        for (int j = 0; j < n->nin && s == LT_OK; j++)
            if (n->in[j] && !in[j])
                s = lt_k_fail(&k, LT_ERR_INTERNAL, "input %d ('%s') has no value", j, n->in[j]->name);
        bool checked = lt_checked_memory();
        if (s == LT_OK && checked)
            s = check_inputs(&k, false);
        lt_mplan_node(lay, i);
        if (s == LT_OK && lt_profile_enabled()) {
            double outer = lt_profile_enter();
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            s = kern(&k);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            lt_profile_leave((int)n->op, (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec), outer,
                             k.be && !k.be->host);
        } else if (s == LT_OK) {
            s = kern(&k);
        }
        /* a CPU kernel's failure (on the host or a backend that runs them) is
         * the model's or its values' (lt_k_fail); a CUDA kernel's may be the
         * library's own */
        if (s == LT_ERR_RUNTIME && kern == lt_cpu_kernels[n->op])
            s = LT_ERR_INVALID;
        if (s == LT_OK && checked)
            s = check_inputs(&k, true);
        scratch_release(ex, mk);
        if (tmp) {
            for (int j = 0; j < 2 * n->nin; j++)
                lt_value_free(tmp[j]);
            if (tmp != tmpbuf)
                free(tmp);
        }
        for (int j = 0; j < n->nout && s == LT_OK; j++)
            if (n->out[j] && !outv[j])
                s = lt_k_fail(&k, LT_ERR_INTERNAL, "kernel produced no output %d", j);
        for (int j = 0; j < n->nout; j++) {
            if (s == LT_OK && n->out[j]) {
                if (checked && n->out[j]->type.kind != LT_KIND_CELL && digestible(outv[j])) {
                    outv[j]->digest = value_digest(outv[j]);
                    outv[j]->digest_set = true;
                }
                if (ex->env[n->out[j]->id])
                    env_drop(ex, n->out[j]->id);
                ex->env[n->out[j]->id] = outv[j];
            } else {
                lt_value_free(outv[j]);
            }
        }
        if (in != inbuf)
            free(in);
        if (outv != outbuf)
            free(outv);
        if (s != LT_OK)
            return s;
        for (int f = p->free_start[i]; f < p->free_start[i + 1]; f++)
            env_drop(ex, p->free_ids[f]);
        lt_mplan_after_node(lay, i);
    }
    return LT_OK;
}

/* The planned memory of level `level` of a block's recursion, made when
 * first needed; NULL past LT_EXEC_MEM_LEVELS or out of memory (the pool). */
#define LT_EXEC_MEM_LEVELS 256
static lt_mplan *plan_mem(lt_plan *p, int level)
{
    if (level < 0 || level >= LT_EXEC_MEM_LEVELS)
        return NULL;
    if (level >= p->nmem) {
        int n = level + 1 > 2 * p->nmem ? level + 1 : 2 * p->nmem;
        lt_mplan **m = realloc(p->mem, sizeof *m * n);
        if (!m)
            return NULL;
        memset(m + p->nmem, 0, sizeof *m * (n - p->nmem));
        p->mem = m;
        p->nmem = n;
    }
    if (!p->mem[level])
        p->mem[level] = calloc(1, sizeof *p->mem[level]);
    return p->mem[level];
}

static size_t plan_hash(const lt_block *b, int cap)
{
    return (size_t)(((uint64_t)(uintptr_t)b >> 4) * 0x9e3779b97f4a7c15ull >> 32) & (size_t)(cap - 1);
}

/* this session's plan of b; NULL when it has none yet */
static lt_plan *plan_find(const lt_exec *ex, const lt_block *b)
{
    if (!ex->plan_cap)
        return NULL;
    for (size_t i = plan_hash(b, ex->plan_cap);; i = (i + 1) & (size_t)(ex->plan_cap - 1)) {
        lt_plan *p = ex->plan_slots[i];
        if (!p || p->block == b)
            return p;
    }
}

static bool plan_add(lt_exec *ex, lt_plan *p)
{
    if (2 * (ex->plan_n + 1) > ex->plan_cap) {
        int cap = ex->plan_cap ? 2 * ex->plan_cap : 16;
        lt_plan **slots = calloc((size_t)cap, sizeof *slots);
        if (!slots)
            return false;
        for (int j = 0; j < ex->plan_cap; j++) {
            lt_plan *q = ex->plan_slots[j];
            size_t i = q ? plan_hash(q->block, cap) : 0;
            while (q && slots[i])
                i = (i + 1) & (size_t)(cap - 1);
            if (q)
                slots[i] = q;
        }
        free(ex->plan_slots);
        ex->plan_slots = slots;
        ex->plan_cap = cap;
    }
    size_t i = plan_hash(p->block, ex->plan_cap);
    while (ex->plan_slots[i])
        i = (i + 1) & (size_t)(ex->plan_cap - 1);
    ex->plan_slots[i] = p;
    ex->plan_n++;
    return true;
}

lt_status lt_exec_block(lt_exec *ex, const lt_block *b, lt_value *const *args, lt_value **results)
{
    lt_plan *plan = plan_find(ex, b);
    if (!plan) {
        lt_status s = plan_block(ex, b, &plan);
        if (s != LT_OK)
            return s;
        plan->block = b;
        if (!plan_add(ex, plan))
            return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory");
    }
    if (++ex->depth > (ex->max_depth ? ex->max_depth : LT_EXEC_MAX_DEPTH)) {
        ex->depth--;
        return lt_errf(ex->err, LT_ERR_RUNTIME, "%s: frames nested deeper than %d at run time", ex->m->path,
                       ex->max_depth ? ex->max_depth : LT_EXEC_MAX_DEPTH);
    }
    /* a block entered again while it runs (a recursive Call) gets fresh
     * slots: the outer frame's values are set aside until it returns */
    lt_value **saved = NULL;
    if (plan->active > 0) {
        saved = malloc(sizeof *saved * (plan->nids + 1));
        if (!saved) {
            ex->depth--;
            return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory");
        }
        for (int i = 0; i < plan->nids; i++) {
            saved[i] = ex->env[plan->ids[i]];
            ex->env[plan->ids[i]] = NULL;
        }
    }
    plan->active++;
    lt_status s = LT_OK;
    for (int i = 0; i < b->nparams && s == LT_OK; i++) {
        int id = b->params[i]->id;
        if (ex->env[id])
            env_drop(ex, id);
        ex->env[id] = args[i] ? lt_value_ref(args[i]) : NULL;
        if (args[i] && !ex->env[id])
            s = lt_errf(ex->err, LT_ERR_NOMEM, "out of memory");
    }
    /* the frame takes the planned memory of its level of recursion */
    lt_mlayout *lay = NULL, *outer = ex->mem;
    lt_mplan *mp = s == LT_OK && ex->memplan ? plan_mem(plan, plan->active - 1) : NULL;
    if (mp) {
        if (ex->depth == 1)
            scratch_reserve(ex);
        s = lt_mplan_begin(ex, mp, b, args, plan->dies_in, &lay);
    }
    ex->mem = lay;
    if (s == LT_OK)
        s = run_nodes(ex, b, plan, lay);
    for (int i = 0; i < b->nresults; i++)
        results[i] = NULL;
    for (int i = 0; i < b->nresults && s == LT_OK; i++) {
        lt_value *v = ex->env[b->results[i]->id];
        if (!v) {
            s = lt_errf(ex->err, LT_ERR_INTERNAL, "%s: block result '%s' has no value", ex->m->path,
                        b->results[i]->name);
            break;
        }
        results[i] = lt_value_ref(v);
        if (!results[i])
            s = lt_errf(ex->err, LT_ERR_NOMEM, "out of memory");
    }
    /* the frame ends: everything it defined goes */
    lt_mplan_node(lay, b->nnodes);
    for (int i = 0; i < b->nparams; i++)
        if (ex->env[b->params[i]->id])
            env_drop(ex, b->params[i]->id);
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j] && ex->env[b->nodes[i]->out[j]->id])
                env_drop(ex, b->nodes[i]->out[j]->id);
    lt_status ms = lt_mplan_end(ex, mp, lay, s == LT_OK);
    if (s == LT_OK)
        s = ms;
    ex->mem = outer;
    if (s != LT_OK)
        for (int i = 0; i < b->nresults; i++) {
            lt_value_free(results[i]);
            results[i] = NULL;
        }
    plan->active--;
    if (saved) {
        for (int i = 0; i < plan->nids; i++) {
            lt_value_free(ex->env[plan->ids[i]]);
            ex->env[plan->ids[i]] = saved[i];
        }
        free(saved);
    }
    ex->depth--;
    return s;
}

/* ---- kernel helpers ---- */
const lt_tensor *lt_k_in(lt_kctx *k, int i)
{
    if (i < 0 || i >= k->nin || !k->in[i] || k->in[i]->kind != LT_VAL_TENSOR)
        return NULL;
    return &k->in[i]->t;
}

bool lt_k_want(const lt_kctx *k, int i)
{
    return i >= 0 && i < k->nout && k->node->out[i] != NULL;
}

static lt_status k_out(lt_kctx *k, int i, int over, lt_dtype dtype, int rank, const int64_t *dims, lt_tensor **t)
{
    if (i < 0 || i >= k->nout)
        return lt_k_fail(k, LT_ERR_INTERNAL, "output %d out of range", i);
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = LT_ERR_NOMEM;
    /* a slice of the frame's arena when the plan has one for it */
    size_t es = lt_dtype_size(dtype), bytes;
    int64_t n = rank >= 0 && rank <= LT_MAX_RANK ? lt_shape_numel(rank, dims) : -1;
    lt_buf *pb = k->ex->mem && es && n >= 0 && !__builtin_mul_overflow((size_t)n, es, &bytes)
                     ? lt_mplan_alloc(k, i, over, dtype, bytes)
                     : NULL;
    if (pb) {
        v->t.dtype = dtype;
        v->t.rank = rank;
        for (int d = 0; d < rank; d++)
            v->t.dims[d] = dims[d];
        v->t.numel = n;
        v->t.buf = pb;
        v->t.data = pb->data;
        s = LT_OK;
    } else {
        s = lt_tensor_alloc_on(&v->t, k->be, dtype, rank, dims, k->err);
    }
    if (s != LT_OK) {
        free(v);
        char msg[LT_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", k->err->msg);
        return lt_k_fail(k, s, "output %d: %s", i, msg);
    }
    lt_value_free(k->out[i]);
    k->out[i] = v;
    if (t)
        *t = &v->t;
    return LT_OK;
}

lt_status lt_k_out(lt_kctx *k, int i, lt_dtype dtype, int rank, const int64_t *dims, lt_tensor **t)
{
    return k_out(k, i, -1, dtype, rank, dims, t);
}

lt_status lt_k_out_over(lt_kctx *k, int i, int j, lt_dtype dtype, int rank, const int64_t *dims, lt_tensor **t)
{
    return k_out(k, i, j, dtype, rank, dims, t);
}

lt_status lt_k_out_view(lt_kctx *k, int i, const lt_tensor *src, int rank, const int64_t *dims)
{
    if (lt_shape_numel(rank, dims) != src->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot view %lld elements with the new shape", (long long)src->numel);
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_tensor_view(&v->t, src, rank, dims);
    lt_value_free(k->out[i]);
    k->out[i] = v;
    return LT_OK;
}

void lt_k_out_value(lt_kctx *k, int i, lt_value *v)
{
    lt_value_free(k->out[i]);
    k->out[i] = v;
}

lt_status lt_k_fail(lt_kctx *k, lt_status s, const char *fmt, ...)
{
    /* a kernel refuses what the model or the values it was given hold (an
     * attribute out of range, shapes that do not fit): invalid input, one
     * line naming the node and exit 2 from the CLI; the libraries' own
     * failures (CUDA, cuBLAS, cuDNN) keep LT_ERR_RUNTIME */
    if (s == LT_ERR_RUNTIME)
        s = LT_ERR_INVALID;
    char msg[LT_ERR_MSG_MAX], lb[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_errf(k->err, s, "%s: %s: %s", k->ex->m->path, lt_node_label(k->node, lb, sizeof lb), msg);
}

void *lt_k_scratch(lt_kctx *k, size_t bytes)
{
    return scratch_alloc(k->ex, bytes ? bytes : 1);
}

lt_status lt_k_run_block(lt_kctx *k, const lt_block *b, lt_value *const *args, lt_value **results)
{
    lt_status s = lt_exec_block(k->ex, b, args, results);
    /* a kernel on the host reads what the region gave back there; If and
     * Call only hand it on, so it stays where it was made */
    bool hands_on = k->node->op == LT_OP_IF || k->node->op == LT_OP_CALL;
    if (s == LT_OK && !k->be && k->ex->be && !k->ex->be->host && !hands_on)
        s = lt_exec_to_host(k->ex, b->nresults, results);
    if (s != LT_OK)
        for (int i = 0; i < b->nresults; i++) {
            lt_value_free(results[i]);
            results[i] = NULL;
        }
    return s;
}

const lt_module *lt_k_module(lt_kctx *k) { return k->ex->m; }

bool lt_k_from_pytorch(lt_kctx *k)
{
    const char *p = k->ex->m->producer_name;
    return p && !strcmp(p, "pytorch");
}

const lt_func *lt_k_callee(lt_kctx *k, int64_t fi)
{
    return fi >= 0 && fi < k->ex->m->nfuncs ? k->ex->m->funcs[fi] : NULL;
}

uint64_t lt_k_rand_u64(lt_kctx *k)
{
    /* splitmix64 */
    uint64_t z = (k->ex->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- executor lifetime ---- */
lt_status lt_exec_init(lt_exec *ex, lt_module *m, lt_err *err)
{
    memset(ex, 0, sizeof *ex);
    ex->m = m;
    ex->err = err;
    ex->rng = 0x6c616e7465726e00ull;
    ex->memplan = lt_mplan_enabled();
    lt_cpu_kernels_init();
    ex->be = lt_backend_from_env(err);
    if (!ex->be)
        return LT_ERR_INVALID;
    ex->env = calloc(m->nvalues ? m->nvalues : 1, sizeof *ex->env);
    if (!ex->env)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    /* module parameters are visible everywhere: borrowed views */
    for (int i = 0; i < m->nparams; i++) {
        lt_value *v = lt_value_new_tensor();
        if (!v)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        v->t = m->params[i].data;
        v->t.buf = NULL;
        ex->env[m->params[i].value->id] = v;
    }
    return LT_OK;
}

lt_status lt_exec_bind_param(lt_exec *ex, int p, const lt_tensor *t)
{
    lt_module *m = ex->m;
    if (p < 0 || p >= m->nparams)
        return lt_errf(ex->err, LT_ERR_INVALID, "%s: no parameter %d", m->path, p);
    const lt_tensor *h = &m->params[p].data;
    if (t && (t->dtype != h->dtype || t->numel != h->numel || !t->buf))
        return lt_errf(ex->err, LT_ERR_INVALID, "%s: parameter '%s' bound to a tensor of another type or size",
                       m->path, m->params[p].name);
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_errf(ex->err, LT_ERR_NOMEM, "out of memory");
    v->t = *h;
    v->t.buf = NULL;
    if (t) {
        v->t.data = t->data;
        v->t.buf = t->buf;
        lt_buf_retain(t->buf);
    }
    int id = m->params[p].value->id;
    lt_value_free(ex->env[id]);
    ex->env[id] = v;
    return LT_OK;
}

void lt_exec_fini(lt_exec *ex)
{
    if (ex->env)
        for (int v = 0; v < ex->m->nvalues; v++)
            lt_value_free(ex->env[v]);
    free(ex->env);
    while (ex->plans) {
        lt_plan *p = ex->plans;
        ex->plans = p->next_all;
        lt_plan_free(p);
    }
    free(ex->plan_slots);
    ex->plan_slots = NULL;
    ex->plan_cap = ex->plan_n = 0;
    for (lt_scratch_chunk *l[2] = {ex->scratch, ex->scratch_free}, **q = l; q < l + 2; q++)
        while (*q) {
            lt_scratch_chunk *c = *q;
            *q = c->next;
            free(c);
        }
    memset(ex, 0, sizeof *ex);
}
