/* IR objects: the module's arena, builders, attribute lookup, types, the op
 * name table generated from ops.def. */
#include "ir.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const lt_op_names[LT_OP_COUNT] = {
#define LT_OP(id, name, dom) name,
#include "ops.def"
#undef LT_OP
};
const int lt_op_domains[LT_OP_COUNT] = {
#define LT_OP(id, name, dom) dom,
#include "ops.def"
#undef LT_OP
};
_Static_assert(sizeof lt_op_names / sizeof lt_op_names[0] == LT_OP_COUNT, "op table out of step");

lt_op lt_op_lookup(const char *name, int domain)
{
    /* linear scan is fine: import looks each node up once */
    for (int i = 0; i < LT_OP_COUNT; i++)
        if (lt_op_domains[i] == domain && strcmp(lt_op_names[i], name) == 0)
            return (lt_op)i;
    return LT_OP_COUNT;
}

const char *lt_status_str(lt_status s)
{
    switch (s) {
    case LT_OK: return "ok";
    case LT_ERR_INVALID: return "invalid input";
    case LT_ERR_UNSUPPORTED: return "unsupported";
    case LT_ERR_NOMEM: return "out of memory";
    case LT_ERR_IO: return "i/o error";
    case LT_ERR_RUNTIME: return "runtime error";
    case LT_ERR_INTERNAL: return "internal error";
    case LT_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

lt_status lt_errf(lt_err *err, lt_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* names taken from files (members, nodes, paths) may hold control
         * characters: a message stays one printable line */
        for (char *c = err->msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
    return s;
}

/* ---- arena: chunks of at least 64 KiB, freed together ---- */
struct lt_chunk {
    struct lt_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *lt_ir_alloc(lt_module *m, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    lt_chunk *c = m->arena;
    if (!c || c->cap - c->used < bytes) {
        size_t cap = bytes > 65536 ? bytes : 65536;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = m->arena;
        m->arena = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += bytes;
    memset(p, 0, bytes);
    return p;
}

const char *lt_ir_strndup(lt_module *m, const char *s, size_t n)
{
    char *p = lt_ir_alloc(m, n + 1);
    if (p) {
        if (n)
            memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

const char *lt_ir_strdup(lt_module *m, const char *s)
{
    return lt_ir_strndup(m, s ? s : "", s ? strlen(s) : 0);
}

lt_module *lt_module_new(void)
{
    lt_module *m = calloc(1, sizeof *m);
    return m;
}

void lt_module_free(lt_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nparams; i++)
        free(m->params[i].data.data);
    free(m->params);
    free(m->values);
    free(m->syms);
    free(m->unsupported);
    free(m->funcs);
    while (m->arena) {
        lt_chunk *c = m->arena;
        m->arena = c->next;
        free(c);
    }
    free(m);
}

void lt_model_free(lt_model *m) { lt_module_free(m); }

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return false;
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *p = q;
    *cap = nc;
    return true;
}

lt_block *lt_block_new(lt_module *m, lt_block *parent, const char *name)
{
    lt_block *b = lt_ir_alloc(m, sizeof *b);
    if (!b)
        return NULL;
    b->parent = parent;
    b->name = lt_ir_strdup(m, name);
    return b;
}

lt_ival *lt_ival_new(lt_module *m, lt_block *b, const char *name)
{
    if (!grow((void **)&m->values, &m->cap_values, m->nvalues + 1, sizeof *m->values))
        return NULL;
    lt_ival *v = lt_ir_alloc(m, sizeof *v);
    if (!v)
        return NULL;
    v->id = m->nvalues;
    v->name = lt_ir_strdup(m, name);
    v->block = b;
    v->param = -1;
    lt_type_unknown(&v->type, LT_UNDEFINED, -1);
    m->values[m->nvalues++] = v;
    return v;
}

lt_node *lt_node_new(lt_module *m, lt_block *b, lt_op op, int nin, int nout)
{
    lt_node *n = lt_ir_alloc(m, sizeof *n);
    if (!n)
        return NULL;
    n->op = op;
    n->nin = nin;
    n->nout = nout;
    n->in = lt_ir_alloc(m, sizeof *n->in * (nin ? nin : 1));
    n->out = lt_ir_alloc(m, sizeof *n->out * (nout ? nout : 1));
    n->name = "";
    n->domain_name = "";
    if (!n->in || !n->out)
        return NULL;
    if (b->nnodes == b->cap) {
        int nc = b->cap ? b->cap * 2 : 16;
        lt_node **nn = lt_ir_alloc(m, sizeof *nn * nc);
        if (!nn)
            return NULL;
        if (b->nnodes)
            memcpy(nn, b->nodes, sizeof *nn * b->nnodes);
        b->nodes = nn;
        b->cap = nc;
    }
    n->block = b;
    n->index = b->nnodes;
    b->nodes[b->nnodes++] = n;
    return n;
}

void lt_block_place_at(lt_block *b, lt_node *n, int at)
{
    for (int k = b->nnodes - 1; k > at; k--) {
        b->nodes[k] = b->nodes[k - 1];
        b->nodes[k]->index = k;
    }
    b->nodes[at] = n;
    n->index = at;
}

bool lt_ir_one_value(const lt_tensor *t)
{
    size_t es = lt_dtype_size(t->dtype);
    const char *d = t->data;
    for (int64_t i = 1; i < t->numel; i++)
        if (memcmp(d, d + (size_t)i * es, es) != 0)
            return false;
    return true;
}

lt_status lt_block_set_params(lt_module *m, lt_block *b, int n)
{
    b->nparams = n;
    b->params = lt_ir_alloc(m, sizeof *b->params * (n ? n : 1));
    return b->params ? LT_OK : LT_ERR_NOMEM;
}

lt_status lt_block_set_results(lt_module *m, lt_block *b, int n)
{
    b->nresults = n;
    b->results = lt_ir_alloc(m, sizeof *b->results * (n ? n : 1));
    return b->results ? LT_OK : LT_ERR_NOMEM;
}

lt_status lt_node_set_attrs(lt_module *m, lt_node *n, int nattr)
{
    n->nattr = nattr;
    n->attrs = lt_ir_alloc(m, sizeof *n->attrs * (nattr ? nattr : 1));
    return n->attrs ? LT_OK : LT_ERR_NOMEM;
}

lt_status lt_node_set_regions(lt_module *m, lt_node *n, int nregions)
{
    n->nregions = nregions;
    n->regions = lt_ir_alloc(m, sizeof *n->regions * (nregions ? nregions : 1));
    return n->regions ? LT_OK : LT_ERR_NOMEM;
}

int lt_module_sym(lt_module *m, const char *name)
{
    for (int i = 0; i < m->nsyms; i++)
        if (strcmp(m->syms[i], name) == 0)
            return i;
    if (!grow((void **)&m->syms, &m->cap_syms, m->nsyms + 1, sizeof *m->syms))
        return -1;
    m->syms[m->nsyms] = lt_ir_strdup(m, name);
    return m->syms[m->nsyms] ? m->nsyms++ : -1;
}

int lt_module_add_param(lt_module *m, const char *name)
{
    if (!grow((void **)&m->params, &m->cap_params, m->nparams + 1, sizeof *m->params))
        return -1;
    lt_param *p = &m->params[m->nparams];
    memset(p, 0, sizeof *p);
    p->name = lt_ir_strdup(m, name);
    p->trainable = true;
    return m->nparams++;
}

int lt_module_new_param(lt_module *m, const char *name, lt_tensor t, bool trainable)
{
    lt_ival *v = lt_ival_new(m, m->main, name);
    int q = v ? lt_module_add_param(m, name) : -1;
    if (q < 0)
        return -1;
    lt_param *p = &m->params[q];
    p->data = t;
    p->trainable = trainable;
    p->value = v;
    v->param = q;
    lt_type_tensor(&v->type, t.dtype, t.rank, t.dims);
    return q;
}

bool lt_node_reads(const lt_node *n, const lt_ival *v)
{
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] == v)
            return true;
    return false;
}

int lt_module_copy_param(lt_module *m, int src, const char *name, lt_ival *v)
{
    const lt_tensor *t = &m->params[src].data;
    size_t bytes = (size_t)t->numel * lt_dtype_size(t->dtype);
    void *copy = malloc(bytes ? bytes : 1);
    int q = copy ? lt_module_add_param(m, name) : -1;
    if (q < 0) {
        free(copy);
        return -1;
    }
    lt_param *sp = &m->params[src], *np = &m->params[q]; /* after add_param moved them */
    if (bytes)
        memcpy(copy, sp->data.data, bytes);
    np->data = sp->data;
    np->data.data = copy;
    np->data.buf = NULL;
    np->trainable = sp->trainable;
    np->value = v;
    v->def = NULL;
    v->param = q;
    lt_type_tensor(&v->type, np->data.dtype, np->data.rank, np->data.dims);
    return q;
}

lt_func *lt_module_add_func(lt_module *m, const char *name)
{
    if (!grow((void **)&m->funcs, &m->cap_funcs, m->nfuncs + 1, sizeof *m->funcs))
        return NULL;
    lt_func *f = lt_ir_alloc(m, sizeof *f);
    if (!f || !(f->body = lt_block_new(m, NULL, name)))
        return NULL;
    f->name = f->body->name;
    m->funcs[m->nfuncs++] = f;
    return f;
}

/* ---- attributes ---- */
const lt_attr *lt_attr_find(const lt_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t lt_attr_int(const lt_node *n, const char *name, int64_t dflt)
{
    const lt_attr *a = lt_attr_find(n, name);
    return a && a->kind == LT_ATTR_INT ? a->i : dflt;
}

float lt_attr_float(const lt_node *n, const char *name, float dflt)
{
    const lt_attr *a = lt_attr_find(n, name);
    return a && a->kind == LT_ATTR_FLOAT ? a->f : dflt;
}

const char *lt_attr_str(const lt_node *n, const char *name, const char *dflt)
{
    const lt_attr *a = lt_attr_find(n, name);
    return a && a->kind == LT_ATTR_STRING ? a->s : dflt;
}

const int64_t *lt_attr_ints(const lt_node *n, const char *name, int *len)
{
    const lt_attr *a = lt_attr_find(n, name);
    if (!a || a->kind != LT_ATTR_INTS) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = a->n;
    static const int64_t none[1];
    return a->ints ? a->ints : none;
}

const float *lt_attr_floats(const lt_node *n, const char *name, int *len)
{
    const lt_attr *a = lt_attr_find(n, name);
    if (!a || a->kind != LT_ATTR_FLOATS) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = a->n;
    static const float none[1];
    return a->floats ? a->floats : none;
}

const lt_tensor *lt_attr_tensor(const lt_node *n, const char *name)
{
    const lt_attr *a = lt_attr_find(n, name);
    return a && a->kind == LT_ATTR_TENSOR ? a->t : NULL;
}

/* ---- types ---- */
void lt_type_unknown(lt_type *t, lt_dtype dtype, int rank)
{
    memset(t, 0, sizeof *t);
    t->kind = LT_KIND_TENSOR;
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < LT_MAX_RANK; i++) {
        t->dims[i].v = -1;
        t->dims[i].sym = -1;
    }
}

void lt_type_tensor(lt_type *t, lt_dtype dtype, int rank, const int64_t *dims)
{
    lt_type_unknown(t, dtype, rank);
    for (int i = 0; i < rank && i < LT_MAX_RANK; i++)
        t->dims[i].v = dims ? dims[i] : -1;
}

bool lt_type_equal(const lt_type *a, const lt_type *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i].sym != b->dims[i].sym || (a->dims[i].sym < 0 && a->dims[i].v != b->dims[i].v))
            return false;
    return true;
}

void lt_type_print(const lt_module *m, const lt_type *t, FILE *f)
{
    if (t->kind == LT_KIND_SEQUENCE)
        fprintf(f, "seq<");
    else if (t->kind == LT_KIND_OPTIONAL)
        fprintf(f, t->inner == LT_KIND_SEQUENCE ? "opt<seq<" : "opt<");
    else if (t->kind == LT_KIND_CELL)
        fprintf(f, "cell<");
    else if (t->kind == LT_KIND_FUNCTION) {
        fprintf(f, "fn");
        return;
    }
    fprintf(f, "%s", lt_dtype_name(t->dtype));
    if (t->kind == LT_KIND_TENSOR || t->kind == LT_KIND_CELL || t->kind == LT_KIND_SEQUENCE ||
        t->inner == LT_KIND_TENSOR) {
        if (t->rank < 0) {
            fprintf(f, "[*]");
        } else {
            fputc('[', f);
            for (int i = 0; i < t->rank; i++) {
                if (i)
                    fputc(',', f);
                if (t->dims[i].sym >= 0 && m && t->dims[i].sym < m->nsyms)
                    lt_fputs_printable(m->syms[t->dims[i].sym], f);
                else if (t->dims[i].v >= 0)
                    fprintf(f, "%lld", (long long)t->dims[i].v);
                else
                    fputc('?', f);
            }
            fputc(']', f);
        }
    }
    if (t->kind == LT_KIND_SEQUENCE || t->kind == LT_KIND_CELL)
        fputc('>', f);
    else if (t->kind == LT_KIND_OPTIONAL)
        fprintf(f, t->inner == LT_KIND_SEQUENCE ? ">>" : ">");
}

const char *lt_node_label(const lt_node *n, char *buf, size_t len)
{
    if (n->name && *n->name)
        snprintf(buf, len, "node '%s' (%s)", n->name, lt_op_names[n->op]);
    else if (n->nout > 0 && n->out[0])
        snprintf(buf, len, "node producing '%s' (%s)", n->out[0]->name, lt_op_names[n->op]);
    else
        snprintf(buf, len, "unnamed node (%s)", lt_op_names[n->op]);
    return buf;
}

/* ---- interned strings ---- */
static struct {
    pthread_mutex_t mu;
    char **slots;
    size_t cap, n;
} interned = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t str_hash(const char *s, size_t len)
{
    size_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

const char *lt_str_intern(const char *s, size_t len)
{
    const char *found = NULL;
    pthread_mutex_lock(&interned.mu);
    if ((interned.n + 1) * 2 > interned.cap) {
        size_t nc = interned.cap ? interned.cap * 2 : 256;
        char **ns = calloc(nc, sizeof *ns);
        if (!ns)
            goto done;
        for (size_t i = 0; i < interned.cap; i++)
            if (interned.slots[i]) {
                size_t j = str_hash(interned.slots[i], strlen(interned.slots[i])) & (nc - 1);
                while (ns[j])
                    j = (j + 1) & (nc - 1);
                ns[j] = interned.slots[i];
            }
        free(interned.slots);
        interned.slots = ns;
        interned.cap = nc;
    }
    size_t j = str_hash(s, len) & (interned.cap - 1);
    while (interned.slots[j]) {
        /* stored strings hold no NUL (lengths agree when the bytes do) */
        if (strlen(interned.slots[j]) == len && memcmp(interned.slots[j], s, len) == 0) {
            found = interned.slots[j];
            goto done;
        }
        j = (j + 1) & (interned.cap - 1);
    }
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = 0;
        interned.slots[j] = c;
        interned.n++;
        found = c;
    }
done:
    pthread_mutex_unlock(&interned.mu);
    return found;
}

void lt_block_count_uses(const lt_block *b, int *uses)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j])
                uses[n->in[j]->id]++;
        for (int r = 0; r < n->nregions; r++)
            lt_block_count_uses(n->regions[r], uses);
    }
    for (int r = 0; r < b->nresults; r++)
        if (b->results[r])
            uses[b->results[r]->id]++;
}

void lt_module_count_uses(const lt_module *m, int *uses)
{
    memset(uses, 0, sizeof *uses * ((size_t)m->nvalues + 1));
    if (m->main)
        lt_block_count_uses(m->main, uses);
    for (int i = 0; i < m->nfuncs; i++)
        lt_block_count_uses(m->funcs[i]->body, uses);
}

void lt_module_recount_uses(lt_module *m, int *uses)
{
    lt_module_count_uses(m, uses);
    for (int i = 0; i < m->nvalues; i++)
        if (m->values[i])
            m->values[i]->uses = uses[i];
}

static lt_status each_block(lt_block *b, lt_status (*fn)(lt_block *b, void *ctx), void *ctx)
{
    for (int i = 0; i < b->nnodes; i++)
        for (int r = 0; r < b->nodes[i]->nregions; r++) {
            lt_status s = each_block(b->nodes[i]->regions[r], fn, ctx);
            if (s != LT_OK)
                return s;
        }
    return fn(b, ctx);
}

lt_status lt_module_each_block(lt_module *m, lt_status (*fn)(lt_block *b, void *ctx), void *ctx)
{
    lt_status s = m->main ? each_block(m->main, fn, ctx) : LT_OK;
    for (int i = 0; i < m->nfuncs && s == LT_OK; i++)
        s = each_block(m->funcs[i]->body, fn, ctx);
    return s;
}

typedef struct replace_ctx {
    lt_ival *from, *to;
} replace_ctx;

static lt_status replace_in_block(lt_block *b, void *ctx)
{
    const replace_ctx *r = ctx;
    for (int i = 0; i < b->nnodes; i++)
        for (int k = 0; k < b->nodes[i]->nin; k++)
            if (b->nodes[i]->in[k] == r->from && b->nodes[i] != r->to->def) {
                b->nodes[i]->in[k] = r->to;
                r->from->uses--;
                r->to->uses++;
            }
    for (int k = 0; k < b->nresults; k++)
        if (b->results[k] == r->from) {
            b->results[k] = r->to;
            r->from->uses--;
            r->to->uses++;
        }
    return LT_OK;
}

void lt_module_replace_reads(lt_module *m, lt_ival *from, lt_ival *to)
{
    replace_ctx r = {from, to};
    lt_module_each_block(m, replace_in_block, &r);
}

void lt_block_drop_nodes(lt_block *b, const bool *dead)
{
    int w = 0;
    for (int i = 0; i < b->nnodes; i++) {
        if (dead[i])
            continue;
        b->nodes[i]->index = w;
        b->nodes[w++] = b->nodes[i];
    }
    b->nnodes = w;
}
