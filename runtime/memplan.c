/* Planned memory (memplan.h): per block and input-shape signature, every
 * output a kernel allocates gets an offset in one arena, from the lifetimes
 * the signature's first frame showed; later frames take slices of it. */
#include "memplan.h"
#include "exec.h"
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define DIED_ESCAPED (-2) /* outlived the frame that made it */

struct lt_arena {
    lt_buf *buf;
    size_t size;
    int64_t refs; /* 1 for the plan holding it + 1 per slice handed out */
};

/* One output of one node. b comes first: a slice's lt_buf is its slot. */
typedef struct mslot {
    lt_buf b;
    lt_mlayout *lay;
    lt_buf *inner;   /* recording: the pool buffer behind b */
    lt_arena *arena; /* replay: the arena b is a slice of */
    size_t bytes;
    int born, died;  /* node indices; died: -1 not yet, nnodes at the frame's end, DIED_ESCAPED */
    int side;        /* 0 the host, 1 the device-path backend */
    int over_slot;   /* recording: the slot of the input the kernel could write over */
    int over_in;     /* that input's index */
    int takes;       /* planned: the slot whose storage it writes over, -1 */
    int64_t off;     /* planned offset, -1: the pool */
    bool seen, bad, live;
} mslot;

struct lt_mlayout {
    int64_t refs; /* 1 for the plan's cache + 1 per buffer handed out */
    lt_mlayout *next;
    lt_mplan *mp;
    const lt_block *b;
    const uint64_t *dies_in; /* per node: inputs the plan releases after it */
    int nsig;
    int64_t *sig;
    int nnodes, nslots;
    int *first; /* first slot of node i */
    mslot *slots;
    int *die_start, *die_ids; /* planned slots by the node they die at (0..nnodes) */
    size_t need[2];
    int cur;
    bool ready, in_frame, off, dirty, cached;
};

/* ---- totals ---- */
static lt_mplan_stats totals;

#define ADD(field, n) __atomic_add_fetch(&totals.field, (n), __ATOMIC_RELAXED)

void lt_mplan_stats_get(lt_mplan_stats *out)
{
    out->layouts = __atomic_load_n(&totals.layouts, __ATOMIC_RELAXED);
    out->replans = __atomic_load_n(&totals.replans, __ATOMIC_RELAXED);
    out->arenas = __atomic_load_n(&totals.arenas, __ATOMIC_RELAXED);
    out->planned = __atomic_load_n(&totals.planned, __ATOMIC_RELAXED);
    out->pooled = __atomic_load_n(&totals.pooled, __ATOMIC_RELAXED);
    out->inplace = __atomic_load_n(&totals.inplace, __ATOMIC_RELAXED);
    out->arena_bytes = __atomic_load_n(&totals.arena_bytes, __ATOMIC_RELAXED);
    out->arena_peak = __atomic_load_n(&totals.arena_peak, __ATOMIC_RELAXED);
    out->check_failures = __atomic_load_n(&totals.check_failures, __ATOMIC_RELAXED);
}

void lt_mplan_stats_reset(void)
{
    size_t held = __atomic_load_n(&totals.arena_bytes, __ATOMIC_RELAXED);
    memset(&totals, 0, sizeof totals);
    totals.arena_bytes = held;
    totals.arena_peak = held;
}

static bool env_on(const char *name, bool dflt)
{
    const char *e = getenv(name);
    if (!e || !*e)
        return dflt;
    return strcmp(e, "0") != 0;
}

bool lt_mplan_enabled(void) { return !lt_checked_memory() && env_on("LANTERN_MEMPLAN", true); }

static bool check_mode(void)
{
    static int m = -1;
    int v = __atomic_load_n(&m, __ATOMIC_RELAXED);
    if (v < 0) {
        v = env_on("LANTERN_MEMPLAN_CHECK", false);
        __atomic_store_n(&m, v, __ATOMIC_RELAXED);
    }
    return v == 1;
}

/* ---- arenas ---- */
static void host_arena_release(lt_buf *b)
{
    lt_pool_account(lt_pool_host(), -(int64_t)b->size);
    free(b->data);
    free(b);
}

static lt_arena *arena_new(const lt_backend *be, int side, size_t bytes)
{
    lt_arena *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (side) {
        a->buf = be->alloc(be, bytes);
    } else {
        lt_buf *b = calloc(1, sizeof *b);
        void *p = NULL;
        if (b && posix_memalign(&p, 64, bytes) == 0) {
            b->data = p;
            b->size = bytes;
            b->cls = -1;
            b->refs = 1;
            b->release = host_arena_release;
            a->buf = b;
            lt_pool_account(lt_pool_host(), (int64_t)bytes);
        } else {
            free(b);
        }
    }
    if (!a->buf) {
        free(a);
        return NULL;
    }
    a->size = bytes;
    a->refs = 1;
    ADD(arenas, 1);
    size_t held = ADD(arena_bytes, bytes);
    size_t peak = __atomic_load_n(&totals.arena_peak, __ATOMIC_RELAXED);
    while (held > peak && !__atomic_compare_exchange_n(&totals.arena_peak, &peak, held, true, __ATOMIC_RELAXED,
                                                       __ATOMIC_RELAXED))
        ;
    return a;
}

static void arena_drop(lt_arena *a)
{
    if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    __atomic_sub_fetch(&totals.arena_bytes, a->size, __ATOMIC_RELAXED);
    lt_buf_release(a->buf);
    free(a);
}

/* ---- layouts ---- */
static void layout_unref(lt_mlayout *lay)
{
    if (!lay || __atomic_sub_fetch(&lay->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    free(lay->sig);
    free(lay->first);
    free(lay->slots);
    free(lay->die_start);
    free(lay->die_ids);
    free(lay);
}

static void slot_release(lt_buf *b)
{
    mslot *s = (mslot *)b;
    lt_mlayout *lay = s->lay;
    s->live = false;
    if (s->inner) {
        if (lay->in_frame && !lay->ready)
            s->died = lay->cur;
        lt_buf *in = s->inner;
        s->inner = NULL;
        lt_buf_release(in);
    } else if (s->arena) {
        lt_arena *a = s->arena;
        s->arena = NULL;
        arena_drop(a);
    }
    layout_unref(lay);
}

static int side_of(const lt_exec *ex, const lt_backend *be)
{
    if (!be || be->host)
        return 0;
    return be == ex->be && be == lt_backend_cpu_device() ? 1 : -1;
}

/* The signature of a frame: every parameter's kind, dtype and dims. */
static int signature(const lt_block *b, lt_value *const *args, int64_t *sig, int cap)
{
    int n = 0;
#define PUT(x)                  \
    do {                        \
        if (n < cap)            \
            sig[n] = (int64_t)(x); \
        n++;                    \
    } while (0)
    for (int i = 0; i < b->nparams; i++) {
        const lt_value *v = args[i];
        if (!v) {
            PUT(-1);
            continue;
        }
        PUT(v->kind);
        if (v->kind == LT_VAL_TENSOR) {
            PUT(v->t.dtype);
            PUT(v->t.rank);
            for (int d = 0; d < v->t.rank; d++)
                PUT(v->t.dims[d]);
        } else if (v->kind == LT_VAL_SEQUENCE) {
            PUT(v->nseq);
            for (int e = 0; e < v->nseq; e++) {
                PUT(v->seq[e].dtype);
                PUT(v->seq[e].rank);
                for (int d = 0; d < v->seq[e].rank; d++)
                    PUT(v->seq[e].dims[d]);
            }
        }
    }
#undef PUT
    return n;
}

static lt_mlayout *layout_new(lt_mplan *mp, const lt_block *b, const int64_t *sig, int nsig)
{
    lt_mlayout *lay = calloc(1, sizeof *lay);
    if (!lay)
        return NULL;
    lay->refs = 1;
    lay->mp = mp;
    lay->b = b;
    lay->nnodes = b->nnodes;
    for (int i = 0; i < b->nnodes; i++)
        lay->nslots += b->nodes[i]->nout;
    lay->nsig = nsig;
    lay->sig = malloc(sizeof *lay->sig * (nsig ? nsig : 1));
    lay->first = malloc(sizeof *lay->first * (b->nnodes + 1));
    lay->slots = calloc(lay->nslots ? lay->nslots : 1, sizeof *lay->slots);
    lay->die_start = calloc(b->nnodes + 2, sizeof *lay->die_start);
    lay->die_ids = malloc(sizeof *lay->die_ids * (lay->nslots ? lay->nslots : 1));
    if (!lay->sig || !lay->first || !lay->slots || !lay->die_start || !lay->die_ids) {
        layout_unref(lay);
        return NULL;
    }
    memcpy(lay->sig, sig, sizeof *sig * nsig);
    int k = 0;
    for (int i = 0; i < b->nnodes; i++) {
        lay->first[i] = k;
        for (int j = 0; j < b->nodes[i]->nout; j++, k++) {
            mslot *s = &lay->slots[k];
            s->lay = lay;
            s->died = -1;
            s->over_slot = -1;
            s->over_in = -1;
            s->takes = -1;
            s->off = -1;
        }
    }
    lay->first[b->nnodes] = k;
    lay->cached = true;
    return lay;
}

/* ---- planning offsets ---- */
typedef struct group {
    int head;
    int born, died;
    size_t size;
    int64_t off;
} group;

static int by_size(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->born - y->born;
}

static int by_off(const void *a, const void *b)
{
    const group *x = *(const group *const *)a, *y = *(const group *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static bool plannable(const mslot *s) { return s->seen && !s->bad && s->died >= 0; }

/* Offsets for every plannable slot on one side: outputs written over a
 * dying input join its group; groups are placed largest first at the lowest
 * offset free over their whole lifetime. */
static lt_status plan_side(lt_mlayout *lay, int side)
{
    int n = lay->nslots, ng = 0;
    int *taker = malloc(sizeof *taker * (n ? n : 1));
    group *g = malloc(sizeof *g * (n ? n : 1));
    group **placed = malloc(sizeof *placed * (n ? n : 1));
    group **near = malloc(sizeof *near * (n ? n : 1));
    if (!taker || !g || !placed || !near) {
        free(taker);
        free(g);
        free(placed);
        free(near);
        return LT_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        taker[i] = -1;
    for (int i = 0; i < n; i++) {
        mslot *s = &lay->slots[i];
        if (s->side != side)
            continue;
        s->takes = -1;
        s->off = -1;
        if (!plannable(s))
            continue;
        int x = s->over_slot;
        if (x >= 0 && plannable(&lay->slots[x]) && lay->slots[x].side == side && lay->slots[x].died == s->born &&
            lay->slots[x].bytes >= s->bytes && taker[x] < 0) {
            s->takes = x;
            taker[x] = i;
        }
    }
    for (int i = 0; i < n; i++) {
        mslot *s = &lay->slots[i];
        if (s->side != side || !plannable(s) || s->takes >= 0)
            continue;
        group *gr = &g[ng++];
        gr->head = i;
        gr->born = s->born;
        gr->size = s->bytes;
        int t = i;
        while (taker[t] >= 0)
            t = taker[t];
        gr->died = lay->slots[t].died;
        gr->off = -1;
    }
    qsort(g, ng, sizeof *g, by_size);
    int np = 0;
    size_t need = 0;
    for (int i = 0; i < ng; i++) {
        int nn = 0;
        for (int p = 0; p < np; p++)
            if (!(placed[p]->died < g[i].born || g[i].died < placed[p]->born))
                near[nn++] = placed[p];
        qsort(near, nn, sizeof *near, by_off);
        size_t off = 0;
        for (int p = 0; p < nn; p++) {
            if (off + g[i].size <= (size_t)near[p]->off)
                break;
            size_t end = (size_t)near[p]->off + near[p]->size;
            if (end > off)
                off = end;
        }
        g[i].off = (int64_t)off;
        placed[np++] = &g[i];
        if (off + g[i].size > need)
            need = off + g[i].size;
    }
    for (int i = 0; i < ng; i++)
        for (int t = g[i].head; t >= 0; t = taker[t])
            lay->slots[t].off = g[i].off;
    lay->need[side] = need;
    free(taker);
    free(g);
    free(placed);
    free(near);
    return LT_OK;
}

/* The check: no two planned slots alive at once share a byte, except an
 * output and the input it is written over. */
static int check_layout(const lt_mlayout *lay)
{
    int bad = 0;
    for (int i = 0; i < lay->nslots; i++) {
        const mslot *a = &lay->slots[i];
        if (a->off < 0)
            continue;
        for (int j = i + 1; j < lay->nslots; j++) {
            const mslot *c = &lay->slots[j];
            if (c->off < 0 || c->side != a->side || a->died < c->born || c->died < a->born)
                continue;
            if (a->off + (int64_t)a->bytes <= c->off || c->off + (int64_t)c->bytes <= a->off)
                continue;
            if (a->takes == j || c->takes == i)
                continue;
            bad++;
        }
    }
    return bad;
}

static lt_status plan_layout(lt_mlayout *lay)
{
    for (int side = 0; side < 2; side++)
        if (plan_side(lay, side) != LT_OK)
            return LT_ERR_NOMEM;
    for (int i = 0; i < lay->nslots; i++)
        if (!plannable(&lay->slots[i]))
            lay->slots[i].off = -1;
    /* planned slots by the node they die at (a counting sort: slot order
     * within a node, linear in nodes plus slots) */
    int *start = lay->die_start;
    memset(start, 0, sizeof *start * (size_t)(lay->nnodes + 2));
    for (int i = 0; i < lay->nslots; i++)
        if (lay->slots[i].off >= 0 && lay->slots[i].died <= lay->nnodes)
            start[lay->slots[i].died + 1]++;
    for (int at = 0; at <= lay->nnodes; at++)
        start[at + 1] += start[at];
    for (int i = 0; i < lay->nslots; i++)
        if (lay->slots[i].off >= 0 && lay->slots[i].died <= lay->nnodes)
            lay->die_ids[start[lay->slots[i].died]++] = i;
    for (int at = lay->nnodes; at > 0; at--) /* each start moved to the next node's: back one */
        start[at] = start[at - 1];
    start[0] = 0;
    lay->dirty = false;
    return LT_OK;
}

/* ---- frames ---- */
static void cache_remove(lt_mplan *mp, lt_mlayout *lay)
{
    for (lt_mlayout **pp = &mp->layouts; *pp; pp = &(*pp)->next)
        if (*pp == lay) {
            *pp = lay->next;
            mp->nlayouts--;
            lay->cached = false;
            lay->next = NULL;
            layout_unref(lay);
            return;
        }
}

/* The plan's arenas as large as the layout needs, with no slice held: a
 * new one where not (the old one goes with its last slice). A new host
 * arena is touched once here, so its pages are the process's before the
 * frames that use it. */
static bool arenas_fit(lt_exec *ex, lt_mplan *mp, const lt_mlayout *lay)
{
    bool ok = true;
    for (int side = 0; side < 2; side++) {
        lt_arena *a = mp->arena[side];
        if (!lay->need[side] || (a && a->refs == 1 && a->size >= lay->need[side]))
            continue;
        size_t size = lay->need[side];
        if (a && a->size > size)
            size = a->size;
        mp->arena[side] = NULL;
        arena_drop(a);
        mp->arena[side] = arena_new(ex->be, side, size);
        if (!mp->arena[side])
            ok = false;
        else if (side == 0)
            memset(mp->arena[side]->buf->data, 0, size);
    }
    return ok;
}

lt_status lt_mplan_begin(lt_exec *ex, lt_mplan *mp, const lt_block *b, lt_value *const *args,
                         const uint64_t *dies_in, lt_mlayout **out)
{
    *out = NULL;
    int64_t local[256], *sig = local;
    int nsig = signature(b, args, local, 256);
    if (nsig > 256) {
        sig = malloc(sizeof *sig * nsig);
        if (!sig)
            return LT_OK; /* the pool serves the frame */
        signature(b, args, sig, nsig);
    }
    lt_mlayout *lay = NULL, **pp = &mp->layouts;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->nsig == nsig && memcmp((*pp)->sig, sig, sizeof *sig * nsig) == 0) {
            lay = *pp;
            *pp = lay->next; /* to the front */
            lay->next = mp->layouts;
            mp->layouts = lay;
            break;
        }
    if (!lay) {
        lay = layout_new(mp, b, sig, nsig);
        if (sig != local)
            free(sig);
        if (!lay)
            return LT_OK;
        lay->next = mp->layouts;
        mp->layouts = lay;
        if (++mp->nlayouts > LT_MPLAN_KEEP) {
            lt_mlayout *last = mp->layouts;
            while (last->next)
                last = last->next;
            cache_remove(mp, last);
        }
    } else if (sig != local) {
        free(sig);
    }
    lay->off = false;
    if (lay->ready) {
        if (lay->dirty) {
            ADD(replans, 1);
            if (plan_layout(lay) != LT_OK)
                return LT_OK;
        }
        if (!arenas_fit(ex, mp, lay))
            lay->off = true;
    }
    lay->dies_in = dies_in;
    lay->cur = -1;
    lay->in_frame = true;
    *out = lay;
    return LT_OK;
}

void lt_mplan_node(lt_mlayout *lay, int i)
{
    if (lay)
        lay->cur = i;
}

/* A slot that outlived the node the plan has it die at: nothing planned
 * after it may be handed out in this frame, and the next is planned again. */
static void outlived(lt_mlayout *lay, mslot *s)
{
    s->bad = true;
    lay->dirty = true;
    lay->off = true;
}

void lt_mplan_after_node(lt_mlayout *lay, int i)
{
    if (!lay || !lay->ready || lay->off)
        return;
    for (int d = lay->die_start[i]; d < lay->die_start[i + 1]; d++) {
        mslot *s = &lay->slots[lay->die_ids[d]];
        if (s->live && s->arena)
            outlived(lay, s);
    }
}

lt_status lt_mplan_end(lt_exec *ex, lt_mplan *mp, lt_mlayout *lay, bool ok)
{
    (void)ex;
    if (!lay)
        return LT_OK;
    lay->in_frame = false;
    if (lay->ready) {
        int at = lay->nnodes;
        for (int d = lay->die_start[at]; d < lay->die_start[at + 1]; d++) {
            mslot *s = &lay->slots[lay->die_ids[d]];
            if (s->live && s->arena)
                outlived(lay, s);
        }
        return LT_OK;
    }
    if (!ok) { /* recorded again next time */
        cache_remove(mp, lay);
        return LT_OK;
    }
    for (int i = 0; i < lay->nslots; i++) {
        mslot *s = &lay->slots[i];
        if (s->seen && (s->live || s->died < 0)) {
            s->died = DIED_ESCAPED;
            s->bad = true;
        }
    }
    if (plan_layout(lay) != LT_OK) {
        cache_remove(mp, lay);
        return LT_OK;
    }
    lay->ready = true;
    ADD(layouts, 1);
    if (check_mode()) {
        int bad = check_layout(lay);
        if (bad) {
            ADD(check_failures, 1);
            return lt_errf(ex->err, LT_ERR_INTERNAL, "%s: memory plan: %d pairs of values alive at once overlap",
                           ex->m->path, bad);
        }
    }
    /* what the pool cached for the recorded frame goes back to the system
     * when the arena grows to take its place */
    if (lay->need[0] >= ((size_t)1 << 20) && (!mp->arena[0] || mp->arena[0]->size < lay->need[0])) {
        lt_pool_trim();
#ifdef __GLIBC__
        malloc_trim(0);
#endif
    }
    arenas_fit(ex, mp, lay);
    return LT_OK;
}

/* Whether input j of the running node is released after it by the plan. */
static bool dies_here(const lt_mlayout *lay, int j)
{
    return lay->dies_in && j < 64 && ((lay->dies_in[lay->cur] >> j) & 1);
}

static lt_buf *hand_out(mslot *s, lt_buf *src, void *data, size_t size)
{
    s->b = *src;
    s->b.data = data;
    s->b.size = size;
    s->b.refs = 1;
    s->b.cls = -1;
    s->b.pool = NULL;
    s->b.release = slot_release;
    s->live = true;
    __atomic_add_fetch(&s->lay->refs, 1, __ATOMIC_RELAXED);
    return &s->b;
}

lt_buf *lt_mplan_alloc(lt_kctx *k, int i, int over, lt_dtype dtype, size_t bytes)
{
    lt_exec *ex = k->ex;
    lt_mlayout *lay = ex->mem;
    if (!lay || lay->off || lay->cur < 0 || lay->cur >= lay->nnodes || lay->b->nodes[lay->cur] != k->node || i < 0 ||
        i >= k->node->nout || dtype == LT_STRING)
        return NULL;
    int side = side_of(ex, k->be);
    if (side < 0)
        return NULL;
    mslot *s = &lay->slots[lay->first[lay->cur] + i];
    size_t need = (bytes + 63) & ~(size_t)63;
    if (!need)
        need = 64;
    const lt_value *in = over >= 0 && over < k->nin ? k->in[over] : NULL;
    if (in && in->kind != LT_VAL_TENSOR)
        in = NULL;
    if (!lay->ready) {
        if (s->seen) {
            s->bad = true;
            return NULL;
        }
        s->seen = true;
        lt_buf *inner = side ? ex->be->alloc(ex->be, need) : lt_buf_alloc(need);
        if (!inner)
            return NULL;
        s->inner = inner;
        s->bytes = need;
        s->born = lay->cur;
        s->side = side;
        if (in && in->t.buf && in->t.buf->release == slot_release && in->t.data == in->t.buf->data &&
            dies_here(lay, over)) {
            mslot *x = (mslot *)in->t.buf;
            if (x->lay == lay && x->bytes == need && x->side == side) {
                s->over_slot = (int)(x - lay->slots);
                s->over_in = over;
            }
        }
        return hand_out(s, inner, inner->data, inner->size);
    }
    lt_arena *a = lay->mp->arena[side];
    if (s->off < 0 || !a) {
        ADD(pooled, 1);
        return NULL;
    }
    if (s->live || need > s->bytes) {
        s->bad = true;
        lay->dirty = true;
        ADD(pooled, 1);
        return NULL;
    }
    if (s->takes >= 0) {
        mslot *x = &lay->slots[s->takes];
        bool fits = over == s->over_in && in && in->t.buf == &x->b && x->live && x->arena == a &&
                    __atomic_load_n(&x->b.refs, __ATOMIC_ACQUIRE) == 1 && in->t.data == x->b.data &&
                    dies_here(lay, over);
        if (!fits) { /* planned again with a place of its own */
            s->over_slot = -1;
            lay->dirty = true;
            ADD(pooled, 1);
            return NULL;
        }
        ADD(inplace, 1);
    }
    if (check_mode()) {
        int64_t lo = s->off, hi = s->off + (int64_t)s->bytes;
        for (int t = 0; t < lay->nslots; t++) {
            const mslot *o = &lay->slots[t];
            if (o == s || t == s->takes || !o->live || o->arena != a || o->off >= hi || o->off + (int64_t)o->bytes <= lo)
                continue;
            ADD(check_failures, 1);
            lay->off = true;
            return NULL;
        }
    }
    __atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
    s->arena = a;
    ADD(planned, 1);
    return hand_out(s, a->buf, (unsigned char *)a->buf->data + s->off, s->bytes);
}

void lt_mplan_free(lt_mplan *mp)
{
    if (!mp)
        return;
    while (mp->layouts)
        cache_remove(mp, mp->layouts);
    for (int side = 0; side < 2; side++) {
        arena_drop(mp->arena[side]);
        mp->arena[side] = NULL;
    }
}
