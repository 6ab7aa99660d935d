/* ONNX ModelProto to IR. Graphs become blocks, If/Loop/Scan bodies become
 * regions whose names resolve by lexical scope, model-local functions are
 * inlined, initializers (in any graph) become module parameters. Every name,
 * count and size from the file is validated before use; nodes are put in
 * dependency order (a cycle is an error naming its nodes). */
#include "importer.h"
#include "../ir/infer.h"
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define LT_MAX_NESTING 64
/* Nodes that inlining model-local functions may create in all: a function
 * calling another twice, forty levels deep, is a few hundred bytes of file. */
#define LT_MAX_INLINED_NODES (1 << 20)
/* protobuf-c unpacks submessages by recursion without a limit; deeper
 * nesting than this is refused before unpacking. Subgraphs nested
 * LT_MAX_NESTING deep take 3 levels each (graph, node, attribute). */
#define LT_MAX_PROTO_DEPTH (3 * LT_MAX_NESTING + 64)

/* ---- name -> value map (open addressing) ---- */
typedef struct namemap {
    const char **keys;
    lt_ival **vals;
    size_t cap, n;
} namemap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

static lt_ival **map_slot(namemap *mp, const char *k)
{
    size_t i = hash_str(k) & (mp->cap - 1);
    while (mp->keys[i] && strcmp(mp->keys[i], k) != 0)
        i = (i + 1) & (mp->cap - 1);
    return &mp->vals[i];
}

static lt_ival *map_get(const namemap *mp, const char *k)
{
    if (!mp->cap)
        return NULL;
    size_t i = hash_str(k) & (mp->cap - 1);
    while (mp->keys[i]) {
        if (strcmp(mp->keys[i], k) == 0)
            return mp->vals[i];
        i = (i + 1) & (mp->cap - 1);
    }
    return NULL;
}

static bool map_put(namemap *mp, const char *k, lt_ival *v)
{
    if ((mp->n + 1) * 2 > mp->cap) {
        namemap nm = {0};
        nm.cap = mp->cap ? mp->cap * 2 : 64;
        nm.keys = calloc(nm.cap, sizeof *nm.keys);
        nm.vals = calloc(nm.cap, sizeof *nm.vals);
        if (!nm.keys || !nm.vals) {
            free(nm.keys);
            free(nm.vals);
            return false;
        }
        for (size_t i = 0; i < mp->cap; i++)
            if (mp->keys[i]) {
                lt_ival **s = map_slot(&nm, mp->keys[i]);
                nm.keys[s - nm.vals] = mp->keys[i];
                *s = mp->vals[i];
                nm.n++;
            }
        free(mp->keys);
        free(mp->vals);
        *mp = nm;
    }
    lt_ival **s = map_slot(mp, k);
    if (!mp->keys[s - mp->vals]) {
        mp->keys[s - mp->vals] = k;
        mp->n++;
    }
    *s = v;
    return true;
}

static void map_free(namemap *mp)
{
    free(mp->keys);
    free(mp->vals);
    memset(mp, 0, sizeof *mp);
}

typedef struct scope {
    struct scope *parent;
    namemap names;
} scope;

static lt_ival *scope_lookup(const scope *s, const char *name)
{
    for (; s; s = s->parent) {
        lt_ival *v = map_get(&s->names, name);
        if (v)
            return v;
    }
    return NULL;
}

/* ---- importer state ---- */
typedef struct opsets {
    int64_t onnx, training, preview, ml; /* -1 when not imported */
} opsets;

typedef struct imp {
    lt_module *m;
    lt_err *err;
    const Onnx__ModelProto *mp;
    const char *path;
    opsets model_ops;
    int depth;
    int64_t inlined;  /* nodes that function inlining creates, counted before inlining */
    int64_t *fn_size; /* per model function: 0 unknown, -1 being counted, else nodes + 1 */
    int in_function;  /* > 0 while a function body is being inlined */
} imp;

/* Function inlining context: the calling node supplies attribute values. */
typedef struct fnctx {
    const Onnx__NodeProto *caller;
    const char *prefix;
} fnctx;

static lt_status import_graph(imp *im, scope *outer, const Onnx__GraphProto *g, lt_block *b, bool is_main,
                              const opsets *ops);

static const char *str_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

static lt_status node_err(imp *im, const Onnx__NodeProto *np, lt_status st, const char *fmt, const char *detail)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail ? detail : "");
    return lt_errf(im->err, st, "%s: node '%s' (%s): %s", im->path, str_or(np->name, "<unnamed>"),
                   str_or(np->op_type, "<no op_type>"), msg);
}

/* Attribute names whose kind is fixed across ops: a mismatch would make a
 * kernel silently fall back to its default, so it is an import error. */
static const struct {
    const char *name;
    lt_attr_kind kind;
    lt_op except; /* op for which the name means something else */
} fixed_kinds[] = {
    {"axis", LT_ATTR_INT, LT_OP_COUNT},          {"axes", LT_ATTR_INTS, LT_OP_COUNT},
    {"perm", LT_ATTR_INTS, LT_OP_COUNT},         {"kernel_shape", LT_ATTR_INTS, LT_OP_COUNT},
    {"strides", LT_ATTR_INTS, LT_OP_COUNT},      {"pads", LT_ATTR_INTS, LT_OP_COUNT},
    {"dilations", LT_ATTR_INTS, LT_OP_COUNT},    {"group", LT_ATTR_INT, LT_OP_COUNT},
    {"epsilon", LT_ATTR_FLOAT, LT_OP_COUNT},     {"keepdims", LT_ATTR_INT, LT_OP_COUNT},
    {"auto_pad", LT_ATTR_STRING, LT_OP_COUNT},   {"transA", LT_ATTR_INT, LT_OP_COUNT},
    {"transB", LT_ATTR_INT, LT_OP_COUNT},        {"to", LT_ATTR_INT, LT_OP_COUNT},
    {"then_branch", LT_ATTR_GRAPH, LT_OP_COUNT}, {"else_branch", LT_ATTR_GRAPH, LT_OP_COUNT},
    {"body", LT_ATTR_GRAPH, LT_OP_COUNT},        {"value", LT_ATTR_TENSOR, LT_OP_PAD},
    {"output_padding", LT_ATTR_INTS, LT_OP_COUNT}, {"output_shape", LT_ATTR_INTS, LT_OP_COUNT},
    {"momentum", LT_ATTR_FLOAT, LT_OP_MOMENTUM},
};

/* An attribute's kind: its type, or for old exporters that omit the type,
 * the field that is set. Region counting and conversion must agree on it. */
static lt_attr_kind attr_kind(const Onnx__AttributeProto *ap)
{
    if (ap->has_type && ap->type != 0)
        return (lt_attr_kind)ap->type;
    if (ap->has_f) return LT_ATTR_FLOAT;
    if (ap->has_i) return LT_ATTR_INT;
    if (ap->has_s) return LT_ATTR_STRING;
    if (ap->t) return LT_ATTR_TENSOR;
    if (ap->g) return LT_ATTR_GRAPH;
    if (ap->n_floats) return LT_ATTR_FLOATS;
    if (ap->n_ints) return LT_ATTR_INTS;
    if (ap->n_strings) return LT_ATTR_STRINGS;
    return LT_ATTR_UNDEFINED;
}

static lt_status convert_attr(imp *im, const Onnx__NodeProto *np, lt_node *n, const Onnx__AttributeProto *ap,
                              lt_attr *a, lt_block *b, scope *s, const opsets *ops, int *region)
{
    lt_module *m = im->m;
    if (!ap->name || !*ap->name)
        return node_err(im, np, LT_ERR_INVALID, "an attribute has no name%s", NULL);
    a->name = lt_ir_strdup(m, ap->name);
    a->kind = attr_kind(ap);
    if (a->kind == LT_ATTR_UNDEFINED)
        return node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no type and no value", ap->name);
    for (size_t i = 0; i < sizeof fixed_kinds / sizeof fixed_kinds[0]; i++)
        if (strcmp(fixed_kinds[i].name, a->name) == 0 && fixed_kinds[i].except != n->op &&
            fixed_kinds[i].kind != a->kind)
            return node_err(im, np, LT_ERR_INVALID, "attribute '%s' has the wrong kind", a->name);
    char what[300];
    snprintf(what, sizeof what, "attribute '%s' of node '%s' (%s)", a->name, str_or(np->name, "<unnamed>"),
             np->op_type);
    switch (a->kind) {
    case LT_ATTR_FLOAT: a->f = ap->f; break;
    case LT_ATTR_INT: a->i = ap->i; break;
    case LT_ATTR_STRING:
        a->s = lt_ir_strndup(m, (const char *)ap->s.data, ap->s.len);
        a->slen = ap->s.len;
        break;
    case LT_ATTR_FLOATS:
        a->n = (int)ap->n_floats;
        a->floats = lt_ir_alloc(m, sizeof(float) * (ap->n_floats + 1));
        if (!a->floats)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        if (ap->n_floats)
            memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
        break;
    case LT_ATTR_INTS:
        a->n = (int)ap->n_ints;
        a->ints = lt_ir_alloc(m, sizeof(int64_t) * (ap->n_ints + 1));
        if (!a->ints)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        if (ap->n_ints)
            memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
        break;
    case LT_ATTR_STRINGS:
        a->n = (int)ap->n_strings;
        a->strings = lt_ir_alloc(m, sizeof(char *) * (ap->n_strings + 1));
        if (!a->strings)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < ap->n_strings; i++)
            a->strings[i] = lt_ir_strndup(m, (const char *)ap->strings[i].data, ap->strings[i].len);
        break;
    case LT_ATTR_TENSOR:
    case LT_ATTR_SPARSE_TENSOR: {
        lt_tp_ctx c = {im->path, NULL, what};
        lt_tensor t;
        lt_status st;
        if (a->kind == LT_ATTR_TENSOR) {
            if (!ap->t)
                return node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no tensor", a->name);
            st = lt_tensor_from_proto(&c, ap->t, &t, im->err);
        } else {
            if (!ap->sparse_tensor)
                return node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no sparse tensor", a->name);
            st = lt_tensor_from_sparse(&c, ap->sparse_tensor, &t, im->err);
            a->kind = LT_ATTR_TENSOR; /* densified */
        }
        if (st != LT_OK)
            return st;
        a->t = lt_ir_alloc(m, sizeof *a->t);
        size_t bytes = (size_t)t.numel * lt_dtype_size(t.dtype);
        void *data = a->t ? lt_ir_alloc(m, bytes ? bytes : 1) : NULL;
        if (!data) {
            free(t.data);
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        }
        if (bytes)
            memcpy(data, t.data, bytes);
        free(t.data);
        t.data = data;
        t.buf = NULL;
        *a->t = t;
        break;
    }
    case LT_ATTR_GRAPH: {
        if (!ap->g)
            return node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no graph", a->name);
        if (im->depth >= LT_MAX_NESTING)
            return node_err(im, np, LT_ERR_INVALID, "subgraphs are nested deeper than %s levels", "64");
        lt_block *sub = lt_block_new(m, b, a->name);
        if (!sub)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        sub->owner = n;
        a->region = (*region)++;
        n->regions[a->region] = sub;
        im->depth++;
        lt_status st = import_graph(im, s, ap->g, sub, false, ops);
        im->depth--;
        if (st != LT_OK)
            return st;
        break;
    }
    case LT_ATTR_TYPE_PROTO:
        break; /* only SequenceEmpty-style dtype hints; kernels read "dtype" ints */
    default:
        return node_err(im, np, LT_ERR_UNSUPPORTED, "attribute '%s' has a kind lantern does not support", a->name);
    }
    return LT_OK;
}

/* A string field the schema lantern is built with (Debian's onnx.proto, IR 8)
 * does not name, read from protobuf-c's unknown fields: the overload of
 * IR 10's functions and calls (NodeProto 8, FunctionProto 13). A
 * length-delimited unknown field keeps its length prefix. Absent is "". */
static void unknown_string(const ProtobufCMessage *msg, uint32_t tag, const uint8_t **p, size_t *len)
{
    *p = (const uint8_t *)"";
    *len = 0;
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
        if (u->tag != tag || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        uint64_t n = 0;
        size_t k = 0;
        for (int shift = 0; k < u->len && shift < 64; shift += 7) {
            uint8_t b = u->data[k++];
            n |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        if (k <= u->len && n == u->len - k) {
            *p = u->data + k;
            *len = (size_t)n; /* the last occurrence wins, as protobuf's own parsers do */
        }
    }
}

/* The model-local function (domain, name, overload) names. */
static const Onnx__FunctionProto *find_function(imp *im, const char *domain, const Onnx__NodeProto *np)
{
    const uint8_t *want, *have;
    size_t nwant, nhave;
    unknown_string(&np->base, 8, &want, &nwant);
    for (size_t i = 0; i < im->mp->n_functions; i++) {
        const Onnx__FunctionProto *f = im->mp->functions[i];
        if (!f->name || strcmp(f->name, np->op_type) != 0 || strcmp(f->domain ? f->domain : "", domain) != 0)
            continue;
        unknown_string(&f->base, 13, &have, &nhave);
        if (nhave == nwant && memcmp(have, want, nwant) == 0)
            return f;
    }
    return NULL;
}

/* The model-local function a node calls: only a name that is not an op of
 * the node's domain can be one. */
static const Onnx__FunctionProto *callee(imp *im, const Onnx__NodeProto *np)
{
    const char *domain = np->domain ? np->domain : "";
    if (!np->op_type || !*np->op_type)
        return NULL;
    if ((!*domain || strcmp(domain, "ai.onnx") == 0) && lt_op_lookup(np->op_type, LT_DOMAIN_ONNX) != LT_OP_COUNT)
        return NULL;
    if (strcmp(domain, "ai.onnx.preview.training") == 0 &&
        lt_op_lookup(np->op_type, LT_DOMAIN_TRAINING) != LT_OP_COUNT)
        return NULL;
    if (strcmp(domain, "ai.onnx.preview") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_PREVIEW) != LT_OP_COUNT)
        return NULL;
    if (strcmp(domain, "ai.onnx.ml") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_ML) != LT_OP_COUNT)
        return NULL;
    return find_function(im, domain, np);
}

static int64_t function_size(imp *im, const Onnx__FunctionProto *f, int depth);

/* Nodes these nodes become once calls are inlined, subgraphs included; stops
 * counting soon after LT_MAX_INLINED_NODES. */
static int64_t nodes_size(imp *im, Onnx__NodeProto *const *nodes, size_t n, int depth)
{
    int64_t total = 0;
    if (depth > LT_MAX_NESTING)
        return 0; /* too deep to import anyway: the importer says so */
    for (size_t i = 0; i < n && total <= LT_MAX_INLINED_NODES; i++) {
        const Onnx__FunctionProto *f = nodes[i] ? callee(im, nodes[i]) : NULL;
        total += f ? function_size(im, f, depth + 1) : 1;
        for (size_t a = 0; nodes[i] && a < nodes[i]->n_attribute; a++)
            if (nodes[i]->attribute[a] && nodes[i]->attribute[a]->g)
                total += nodes_size(im, nodes[i]->attribute[a]->g->node, nodes[i]->attribute[a]->g->n_node,
                                    depth + 1);
    }
    return total;
}

/* Counted once per function, so that a call tree that doubles at each of
 * forty levels is refused without being expanded. A function that calls
 * itself counts 0 for the recursive call: inlining reports the recursion. */
static int64_t function_size(imp *im, const Onnx__FunctionProto *f, int depth)
{
    size_t k = 0;
    while (im->mp->functions[k] != f)
        k++;
    if (im->fn_size[k] < 0)
        return 0;
    if (im->fn_size[k] == 0) {
        im->fn_size[k] = -1;
        im->fn_size[k] = nodes_size(im, f->node, f->n_node, depth) + 1;
    }
    return im->fn_size[k] - 1;
}

static lt_status define_value(imp *im, scope *s, lt_block *b, const char *name, lt_ival *v,
                              const Onnx__NodeProto *np)
{
    if (map_get(&s->names, name))
        return np ? node_err(im, np, LT_ERR_INVALID, "output '%s' is defined twice in its graph", name)
                  : lt_errf(im->err, LT_ERR_INVALID, "%s: value '%s' is defined twice in graph '%s'", im->path, name,
                            str_or(b->name, "main"));
    return map_put(&s->names, name, v) ? LT_OK : lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
}

static lt_status record_unsupported(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np,
                                    const char *domain)
{
    lt_module *m = im->m;
    if (m->nunsupported == m->cap_unsupported) {
        int nc = m->cap_unsupported ? m->cap_unsupported * 2 : 8;
        void *q = realloc(m->unsupported, sizeof *m->unsupported * nc);
        if (!q)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        m->unsupported = q;
        m->cap_unsupported = nc;
    }
    struct lt_unsupported *u = &m->unsupported[m->nunsupported++];
    u->op = lt_ir_strdup(m, np->op_type);
    u->domain = lt_ir_strdup(m, domain);
    u->node = lt_ir_strdup(m, str_or(np->name, "<unnamed>"));
    /* its outputs still need to resolve so the rest of the graph imports */
    for (size_t i = 0; i < np->n_output; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        lt_ival *v = lt_ival_new(m, b, np->output[i]);
        if (!v)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        lt_status st = define_value(im, s, b, np->output[i], v, np);
        if (st != LT_OK)
            return st;
    }
    return LT_OK;
}

static lt_status import_node(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const opsets *ops,
                             const fnctx *fc);

static const lt_block *graph_attr(const lt_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (n->attrs[i].kind == LT_ATTR_GRAPH && strcmp(n->attrs[i].name, name) == 0)
            return n->regions[n->attrs[i].region];
    return NULL;
}

/* If, Loop and Scan must carry exactly the graphs their op takes, with the
 * input and output counts the node implies: the verifier and the kernels
 * rely on both, and a mismatch is the file's fault, not a run-time one. */
static lt_status check_control(imp *im, const Onnx__NodeProto *np, const lt_node *n)
{
    static const char *const if_graphs[] = {"then_branch", "else_branch"}, *const body_graph[] = {"body"};
    const char *const *want = n->op == LT_OP_IF ? if_graphs : body_graph;
    int nwant = n->op == LT_OP_IF ? 2 : 1;
    char msg[256];
    if (n->op != LT_OP_IF && n->op != LT_OP_LOOP && n->op != LT_OP_SCAN)
        return LT_OK;
    for (int i = 0; i < n->nattr; i++) {
        if (n->attrs[i].kind != LT_ATTR_GRAPH)
            continue;
        bool known = false;
        for (int k = 0; k < nwant; k++)
            known = known || strcmp(n->attrs[i].name, want[k]) == 0;
        if (!known) {
            snprintf(msg, sizeof msg, "attribute '%s' is a graph, but %s takes only %s", n->attrs[i].name,
                     np->op_type, n->op == LT_OP_IF ? "then_branch and else_branch" : "body");
            return node_err(im, np, LT_ERR_INVALID, "%s", msg);
        }
    }
    for (int k = 0; k < nwant; k++)
        if (!graph_attr(n, want[k]))
            return node_err(im, np, LT_ERR_INVALID, "needs a graph attribute '%s'", want[k]);
    if (n->nregions != nwant)
        return node_err(im, np, LT_ERR_INVALID, "has a graph attribute twice%s", NULL);
    msg[0] = 0;
    if (n->op == LT_OP_IF) {
        for (int k = 0; k < 2 && !msg[0]; k++) {
            const lt_block *g = graph_attr(n, want[k]);
            if (g->nparams != 0)
                snprintf(msg, sizeof msg, "branch '%s' takes %d inputs, If branches take none", want[k], g->nparams);
            else if (g->nresults != n->nout)
                snprintf(msg, sizeof msg, "branch '%s' returns %d values, the node has %d outputs", want[k],
                         g->nresults, n->nout);
        }
    } else if (n->op == LT_OP_LOOP) {
        const lt_block *g = graph_attr(n, "body");
        int carried = n->nin - 2;
        if (carried < 0)
            snprintf(msg, sizeof msg, "has %d inputs, Loop needs at least M and cond (either may be empty)", n->nin);
        else if (g->nparams != carried + 2)
            snprintf(msg, sizeof msg, "the body takes %d inputs, but the node's %d loop-carried value(s) need %d",
                     g->nparams, carried, carried + 2);
        else if (g->nresults < carried + 1)
            snprintf(msg, sizeof msg,
                     "the body returns %d values, fewer than the %d its condition and loop-carried values need",
                     g->nresults, carried + 1);
        else if (n->nout != g->nresults - 1)
            snprintf(msg, sizeof msg, "the node has %d outputs, but its body returns %d after the condition",
                     n->nout, g->nresults - 1);
    } else {
        const lt_block *g = graph_attr(n, "body");
        int first = n->opset < 9 ? 1 : 0; /* Scan-8: input 0 is sequence_lens */
        int64_t nscan = lt_attr_int(n, "num_scan_inputs", -1);
        int64_t nstate = (int64_t)n->nin - first - nscan;
        if (nscan < 0 || nstate < 0)
            snprintf(msg, sizeof msg, "num_scan_inputs %lld does not fit the node's %d inputs", (long long)nscan,
                     n->nin);
        else if (g->nparams != nstate + nscan)
            snprintf(msg, sizeof msg, "the body takes %d inputs, but the node's %lld state and %lld scan input(s) need %lld",
                     g->nparams, (long long)nstate, (long long)nscan, (long long)(nstate + nscan));
        else if (g->nresults < nstate)
            snprintf(msg, sizeof msg, "the body returns %d values, fewer than the node's %lld state values",
                     g->nresults, (long long)nstate);
        else if (n->nout != g->nresults)
            snprintf(msg, sizeof msg, "the node has %d outputs, its body returns %d", n->nout, g->nresults);
    }
    return msg[0] ? node_err(im, np, LT_ERR_INVALID, "%s", msg) : LT_OK;
}

/* Inlines a model-local function: its body sees only its own inputs. */
static lt_status inline_function(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np,
                                 const Onnx__FunctionProto *f, const opsets *caller_ops)
{
    if (im->depth >= LT_MAX_NESTING)
        return node_err(im, np, LT_ERR_INVALID, "functions call each other deeper than %s levels", "64");
    opsets fops = *caller_ops;
    for (size_t i = 0; i < f->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = f->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if (!*d || strcmp(d, "ai.onnx") == 0)
            fops.onnx = o->version;
        else if (strcmp(d, "ai.onnx.preview.training") == 0)
            fops.training = o->version;
        else if (strcmp(d, "ai.onnx.preview") == 0)
            fops.preview = o->version;
        else if (strcmp(d, "ai.onnx.ml") == 0)
            fops.ml = o->version;
    }
    scope fs = {0};
    lt_status st = LT_OK;
    if (np->n_input > f->n_input)
        st = node_err(im, np, LT_ERR_INVALID, "more inputs than function '%s' takes", f->name);
    for (size_t i = 0; i < f->n_input && st == LT_OK; i++) {
        if (!f->input[i] || !*f->input[i])
            continue;
        lt_ival *v = NULL;
        if (i < np->n_input && np->input[i] && *np->input[i]) {
            v = scope_lookup(s, np->input[i]);
            if (!v)
                st = node_err(im, np, LT_ERR_INVALID, "input '%s' is not defined", np->input[i]);
        }
        if (v && !map_put(&fs.names, f->input[i], v))
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/", str_or(np->name, f->name));
    fnctx fc = {np, prefix};
    if (st == LT_OK && !im->in_function) { /* calls inside are counted with this one */
        im->inlined += function_size(im, f, 0);
        if (im->inlined > LT_MAX_INLINED_NODES)
            st = node_err(im, np, LT_ERR_INVALID, "functions expand to more than %s nodes", "1048576");
    }
    im->depth++;
    im->in_function++;
    for (size_t i = 0; i < f->n_node && st == LT_OK; i++) {
        if (!f->node[i])
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: function '%s' has an empty node", im->path, f->name);
        else
            st = import_node(im, &fs, b, f->node[i], &fops, &fc);
    }
    im->in_function--;
    im->depth--;
    for (size_t i = 0; i < np->n_output && st == LT_OK; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        lt_ival *v = i < f->n_output && f->output[i] ? map_get(&fs.names, f->output[i]) : NULL;
        if (!v) {
            st = node_err(im, np, LT_ERR_INVALID, "function output %s is never defined", f->name);
            break;
        }
        st = define_value(im, s, b, np->output[i], v, np);
    }
    map_free(&fs.names);
    return st;
}

static lt_status import_node(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const opsets *ops,
                             const fnctx *fc)
{
    lt_module *m = im->m;
    if (!np->op_type || !*np->op_type)
        return node_err(im, np, LT_ERR_INVALID, "node has no op_type%s", NULL);
    const char *domain = np->domain ? np->domain : "";
    int dom;
    int64_t version;
    if (!*domain || strcmp(domain, "ai.onnx") == 0) {
        dom = LT_DOMAIN_ONNX;
        version = ops->onnx;
    } else if (strcmp(domain, "ai.onnx.preview.training") == 0) {
        dom = LT_DOMAIN_TRAINING;
        version = ops->training;
    } else if (strcmp(domain, "ai.onnx.preview") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_PREVIEW) != LT_OP_COUNT) {
        dom = LT_DOMAIN_PREVIEW;
        version = ops->preview;
    } else if (strcmp(domain, "ai.onnx.ml") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_ML) != LT_OP_COUNT) {
        dom = LT_DOMAIN_ML;
        version = ops->ml;
    } else {
        const Onnx__FunctionProto *f = find_function(im, domain, np);
        if (f)
            return inline_function(im, s, b, np, f, ops);
        return record_unsupported(im, s, b, np, domain);
    }
    if (version < 0)
        return node_err(im, np, LT_ERR_INVALID, "the model does not import an opset for domain '%s'",
                        *domain ? domain : "ai.onnx");
    lt_op op = lt_op_lookup(np->op_type, dom);
    if (op == LT_OP_COUNT) {
        const Onnx__FunctionProto *f = find_function(im, domain, np);
        if (f)
            return inline_function(im, s, b, np, f, ops);
        return record_unsupported(im, s, b, np, *domain ? domain : "ai.onnx");
    }
    if (np->n_input > 4096 || np->n_output > 4096 || np->n_attribute > 4096)
        return node_err(im, np, LT_ERR_INVALID, "implausible number of inputs, outputs or attributes%s", NULL);
    lt_node *n = lt_node_new(m, b, op, (int)np->n_input, (int)np->n_output);
    if (!n)
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    n->opset = (int)version;
    char nm[512];
    snprintf(nm, sizeof nm, "%s%s", fc ? fc->prefix : "", str_or(np->name, ""));
    n->name = lt_ir_strdup(m, nm);
    n->domain_name = lt_ir_strdup(m, domain);
    for (size_t i = 0; i < np->n_input; i++) {
        if (!np->input[i] || !*np->input[i])
            continue;
        n->in[i] = scope_lookup(s, np->input[i]);
        if (!n->in[i])
            return node_err(im, np, LT_ERR_INVALID, "input '%s' is not defined", np->input[i]);
        n->in[i]->uses++;
    }
    /* attributes: a function body's references are resolved from the caller */
    int nattr = 0, nregions = 0;
    const Onnx__AttributeProto **aps = calloc(np->n_attribute + 1, sizeof *aps);
    if (!aps)
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (!ap)
            continue;
        if (ap->ref_attr_name && *ap->ref_attr_name) {
            ap = NULL;
            for (size_t j = 0; fc && j < fc->caller->n_attribute; j++)
                if (fc->caller->attribute[j] && fc->caller->attribute[j]->name &&
                    strcmp(fc->caller->attribute[j]->name, np->attribute[i]->ref_attr_name) == 0)
                    ap = fc->caller->attribute[j];
            if (!ap)
                continue; /* the caller did not set it: the op's default applies */
            /* keep the callee's attribute name */
            static Onnx__AttributeProto renamed;
            (void)renamed;
        }
        aps[nattr++] = ap;
        if (attr_kind(ap) == LT_ATTR_GRAPH)
            nregions++;
    }
    lt_status st = lt_node_set_attrs(m, n, nattr);
    if (st == LT_OK)
        st = lt_node_set_regions(m, n, nregions);
    if (st != LT_OK)
        st = lt_errf(im->err, st, "out of memory");
    int region = 0;
    for (int i = 0; i < nattr && st == LT_OK; i++) {
        st = convert_attr(im, np, n, aps[i], &n->attrs[i], b, s, ops, &region);
        /* a referenced attribute takes the name the callee uses */
        if (st == LT_OK && aps[i] != np->attribute[i] && fc) {
            for (size_t j = 0; j < np->n_attribute; j++)
                if (np->attribute[j]->ref_attr_name && aps[i]->name &&
                    strcmp(np->attribute[j]->ref_attr_name, aps[i]->name) == 0)
                    n->attrs[i].name = lt_ir_strdup(m, np->attribute[j]->name);
        }
    }
    n->nregions = region;
    free(aps);
    if (st == LT_OK)
        st = check_control(im, np, n);
    if (st != LT_OK)
        return st;
    for (size_t i = 0; i < np->n_output; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        char vn[512];
        snprintf(vn, sizeof vn, "%s%s", fc ? fc->prefix : "", np->output[i]);
        lt_ival *v = lt_ival_new(m, b, vn);
        if (!v)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        v->def = n;
        n->out[i] = v;
        st = define_value(im, s, b, np->output[i], v, np);
        if (st != LT_OK)
            return st;
    }
    return LT_OK;
}

/* Names a subgraph defines: they hide outer names for the nodes inside it. */
typedef struct local_names {
    const struct local_names *up;
    namemap names;
} local_names;

static bool is_local(const local_names *l, const char *name)
{
    for (; l; l = l->up)
        if (map_get(&l->names, name))
            return true;
    return false;
}

static void add_read(const char *name, const local_names *l, const namemap *producers, int *deps, int *ndeps,
                     int maxdeps)
{
    if (!name || !*name || is_local(l, name))
        return;
    lt_ival *p = map_get(producers, name);
    if (p && *ndeps < maxdeps)
        deps[(*ndeps)++] = (int)(intptr_t)p - 1;
}

/* The outer values a subgraph reads (at any depth, less the names defined
 * in between); used to order nodes whose regions capture outer values. If
 * memory for the local names runs out, a local name may count as a read:
 * at worst an order that fails later with a clear message. */
static void collect_reads(const Onnx__GraphProto *g, const namemap *producers, const local_names *up, int *deps,
                          int *ndeps, int maxdeps, int depth)
{
    if (depth > LT_MAX_NESTING)
        return;
    local_names l = {up, {0}};
    lt_ival *mark = (lt_ival *)(intptr_t)1;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i] && g->input[i]->name)
            map_put(&l.names, g->input[i]->name, mark);
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i] && g->initializer[i]->name)
            map_put(&l.names, g->initializer[i]->name, mark);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (g->sparse_initializer[i] && g->sparse_initializer[i]->values && g->sparse_initializer[i]->values->name)
            map_put(&l.names, g->sparse_initializer[i]->values->name, mark);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; g->node[i] && j < g->node[i]->n_output; j++)
            if (g->node[i]->output[j] && *g->node[i]->output[j])
                map_put(&l.names, g->node[i]->output[j], mark);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!np)
            continue;
        for (size_t j = 0; j < np->n_input; j++)
            add_read(np->input[j], &l, producers, deps, ndeps, maxdeps);
        for (size_t a = 0; a < np->n_attribute; a++)
            if (np->attribute[a] && np->attribute[a]->g)
                collect_reads(np->attribute[a]->g, producers, &l, deps, ndeps, maxdeps, depth + 1);
    }
    for (size_t j = 0; j < g->n_output; j++)
        if (g->output[j])
            add_read(g->output[j]->name, &l, producers, deps, ndeps, maxdeps);
    map_free(&l.names);
}

static void heap_push(int *h, size_t *n, int v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int heap_pop(int *h, size_t *n)
{
    int top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* Kahn's algorithm over this graph's nodes; order[] receives node indices. */
static lt_status order_nodes(imp *im, const Onnx__GraphProto *g, int *order)
{
    size_t n = g->n_node;
    lt_status st = LT_OK;
    namemap producers = {0};
    int *indeg = calloc(n + 1, sizeof *indeg), *queue = calloc(n + 1, sizeof *queue);
    int **succ = calloc(n + 1, sizeof *succ), *nsucc = calloc(n + 1, sizeof *nsucc),
        *capsucc = calloc(n + 1, sizeof *capsucc);
    int maxdeps = 1 << 16, *deps = malloc(sizeof *deps * maxdeps);
    if (!indeg || !queue || !succ || !nsucc || !capsucc || !deps) {
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && st == LT_OK; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!np) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s' has an empty node", im->path, str_or(g->name, "main"));
            break;
        }
        for (size_t j = 0; j < np->n_output; j++) {
            if (!np->output[j] || !*np->output[j])
                continue;
            if (map_get(&producers, np->output[j])) {
                st = node_err(im, np, LT_ERR_INVALID, "output '%s' is defined twice in its graph", np->output[j]);
                break;
            }
            if (!map_put(&producers, np->output[j], (lt_ival *)(intptr_t)(i + 1)))
                st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < n && st == LT_OK; i++) {
        const Onnx__NodeProto *np = g->node[i];
        int nd = 0;
        for (size_t j = 0; j < np->n_input; j++) {
            if (!np->input[j] || !*np->input[j])
                continue;
            lt_ival *p = map_get(&producers, np->input[j]);
            if (p && nd < maxdeps)
                deps[nd++] = (int)(intptr_t)p - 1;
        }
        for (size_t a = 0; a < np->n_attribute; a++)
            if (np->attribute[a] && np->attribute[a]->g)
                collect_reads(np->attribute[a]->g, &producers, NULL, deps, &nd, maxdeps, 0);
        for (int k = 0; k < nd; k++) {
            int p = deps[k];
            if (nsucc[p] == capsucc[p]) {
                int nc = capsucc[p] ? capsucc[p] * 2 : 4;
                int *q = realloc(succ[p], sizeof *q * nc);
                if (!q) {
                    st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
                    break;
                }
                succ[p] = q;
                capsucc[p] = nc;
            }
            succ[p][nsucc[p]++] = (int)i;
            indeg[i]++;
        }
    }
    if (st != LT_OK)
        goto done;
    /* a min-heap on the original index keeps an already sorted graph in its
     * own order */
    size_t hn = 0, done_n = 0;
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(queue, &hn, (int)i);
    while (hn) {
        int i = heap_pop(queue, &hn);
        order[done_n++] = i;
        for (int k = 0; k < nsucc[i]; k++)
            if (--indeg[succ[i][k]] == 0)
                heap_push(queue, &hn, succ[i][k]);
    }
    if (done_n != n) {
        char list[400] = "";
        int shown = 0;
        for (size_t i = 0; i < n && shown < 4; i++)
            if (indeg[i] > 0) {
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s' (%s)", shown ? ", " : "",
                         str_or(g->node[i]->name, "<unnamed>"), str_or(g->node[i]->op_type, "?"));
                shown++;
            }
        st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': nodes %s form a cycle or read values never defined before them",
                     im->path, str_or(g->name, "main"), list);
    }
done:
    if (succ)
        for (size_t i = 0; i < n; i++)
            free(succ[i]);
    free(succ);
    free(nsucc);
    free(capsucc);
    free(indeg);
    free(queue);
    free(deps);
    map_free(&producers);
    return st;
}

static lt_status add_initializer(imp *im, scope *s, lt_block *b, const char *name, lt_tensor *t)
{
    lt_module *m = im->m;
    int p = lt_module_add_param(m, name);
    lt_ival *v = p >= 0 ? lt_ival_new(m, b, name) : NULL;
    if (!v) {
        free(t->data);
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    m->params[p].data = *t;
    m->params[p].value = v;
    v->param = p;
    lt_type_tensor(&v->type, t->dtype, t->rank, t->dims);
    return define_value(im, s, b, name, v, NULL);
}

static lt_status import_graph(imp *im, scope *outer, const Onnx__GraphProto *g, lt_block *b, bool is_main,
                              const opsets *ops)
{
    lt_module *m = im->m;
    scope s = {outer, {0}};
    lt_status st = LT_OK;
    int *order = NULL;
    char what[300];
    if (g->n_node > (1u << 24) || g->n_initializer > (1u << 24) || g->n_input > (1u << 20) ||
        g->n_output > (1u << 20))
        return lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s' is implausibly large", im->path,
                       str_or(g->name, "main"));
    b->name = lt_ir_strdup(m, str_or(g->name, b->name));

    /* initializers */
    for (size_t i = 0; i < g->n_initializer && st == LT_OK; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        if (!tp || !tp->name || !*tp->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': initializer %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        lt_tp_ctx c = {im->path, m->base_dir, what};
        lt_tensor t;
        st = lt_tensor_from_proto(&c, tp, &t, im->err);
        if (st == LT_OK)
            st = add_initializer(im, &s, b, tp->name, &t);
    }
    for (size_t i = 0; i < g->n_sparse_initializer && st == LT_OK; i++) {
        const Onnx__SparseTensorProto *sp = g->sparse_initializer[i];
        const char *name = sp && sp->values ? sp->values->name : NULL;
        if (!name || !*name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: sparse initializer %zu has no name", im->path, i);
            break;
        }
        snprintf(what, sizeof what, "sparse initializer '%s'", name);
        lt_tp_ctx c = {im->path, m->base_dir, what};
        lt_tensor t;
        st = lt_tensor_from_sparse(&c, sp, &t, im->err);
        if (st == LT_OK)
            st = add_initializer(im, &s, b, name, &t);
    }
    if (st != LT_OK)
        goto done;

    /* inputs; in the main graph an input may shadow an initializer (its default) */
    st = lt_block_set_params(m, b, (int)g->n_input);
    if (st != LT_OK)
        st = lt_errf(im->err, st, "out of memory");
    if (st == LT_OK && is_main) {
        m->input_default = lt_ir_alloc(m, sizeof(int) * (g->n_input + 1));
        if (!m->input_default)
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->n_input && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi || !vi->name || !*vi->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': input %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        lt_ival *init = map_get(&s.names, vi->name);
        lt_ival *v = lt_ival_new(m, b, vi->name);
        if (!v) {
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(what, sizeof what, "input '%s'", vi->name);
        st = lt_type_from_proto(m, vi->type, &v->type, what, im->err);
        if (st != LT_OK)
            break;
        if (init && init->param >= 0) {
            m->params[init->param].is_input_default = true;
            if (v->type.dtype == LT_UNDEFINED && v->type.rank < 0)
                v->type = init->type;
            map_put(&s.names, vi->name, v); /* the input shadows its initializer */
        } else {
            st = define_value(im, &s, b, vi->name, v, NULL);
        }
        b->params[i] = v;
        if (is_main)
            m->input_default[i] = init && init->param >= 0 ? init->param : -1;
    }
    if (st != LT_OK)
        goto done;

    /* nodes, in dependency order */
    order = malloc(sizeof *order * (g->n_node + 1));
    if (!order) {
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = order_nodes(im, g, order);
    for (size_t i = 0; i < g->n_node && st == LT_OK; i++)
        st = import_node(im, &s, b, g->node[order[i]], ops, NULL);
    if (st != LT_OK)
        goto done;

    /* declared types */
    for (size_t i = 0; i < g->n_value_info && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        if (!vi || !vi->name)
            continue;
        lt_ival *v = map_get(&s.names, vi->name);
        if (!v || v->def == NULL)
            continue;
        snprintf(what, sizeof what, "value_info '%s'", vi->name);
        lt_type t;
        st = lt_type_from_proto(m, vi->type, &t, what, im->err);
        if (st == LT_OK && v->type.rank < 0 && v->type.dtype == LT_UNDEFINED)
            v->type = t;
    }

    /* outputs */
    if (st == LT_OK && lt_block_set_results(m, b, (int)g->n_output) != LT_OK)
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < g->n_output && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        if (!vi || !vi->name || !*vi->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': output %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        lt_ival *v = scope_lookup(&s, vi->name);
        if (!v) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': output '%s' is never defined", im->path,
                         str_or(g->name, "main"), vi->name);
            break;
        }
        snprintf(what, sizeof what, "output '%s'", vi->name);
        lt_type t;
        st = lt_type_from_proto(m, vi->type, &t, what, im->err);
        if (st == LT_OK && v->def && v->type.rank < 0 && v->type.dtype == LT_UNDEFINED)
            v->type = t;
        b->results[i] = v;
        v->uses++;
    }
done:
    free(order);
    map_free(&s.names);
    return st;
}

static lt_status import_model(lt_module *m, const Onnx__ModelProto *mp, lt_err *err)
{
    imp im = {m, err, mp, m->path, {-1, -1, -1, -1}, 0, 0, NULL, 0};
    /* IR 11-14 add element types (refused per tensor until lantern holds
     * them), multi-device configurations (hints for a sharded run; a
     * one-device run may ignore them) and opaque types in every build
     * (refused where a value has one). */
    if (!mp->has_ir_version || mp->ir_version < 3 || mp->ir_version > 14)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: IR version %lld is outside the 3..14 lantern reads", m->path,
                       (long long)mp->ir_version);
    if (!mp->graph)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no graph", m->path);
    m->ir_version = mp->ir_version;
    m->producer_name = lt_ir_strdup(m, mp->producer_name);
    m->producer_version = lt_ir_strdup(m, mp->producer_version);
    m->graph_name = lt_ir_strdup(m, mp->graph->name);
    if (mp->n_opset_import > 1024)
        return lt_errf(err, LT_ERR_INVALID, "%s: implausibly many opset imports", m->path);
    m->nopsets = (int)mp->n_opset_import;
    m->opsets = lt_ir_alloc(m, sizeof *m->opsets * (mp->n_opset_import + 1));
    if (!m->opsets)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        const char *d = o && o->domain ? o->domain : "";
        int64_t v = o && o->has_version ? o->version : 0;
        if (v < 1 || v > 1000)
            return lt_errf(err, LT_ERR_INVALID, "%s: opset import for domain '%s' has version %lld", m->path,
                           *d ? d : "ai.onnx", (long long)v);
        m->opsets[i].domain = lt_ir_strdup(m, d);
        m->opsets[i].version = v;
        if (!*d || strcmp(d, "ai.onnx") == 0)
            im.model_ops.onnx = v;
        else if (strcmp(d, "ai.onnx.preview.training") == 0)
            im.model_ops.training = v;
        else if (strcmp(d, "ai.onnx.preview") == 0)
            im.model_ops.preview = v;
        else if (strcmp(d, "ai.onnx.ml") == 0)
            im.model_ops.ml = v;
    }
    if (mp->ir_version == 3 && im.model_ops.onnx < 0 && mp->n_opset_import == 0)
        im.model_ops.onnx = 1;
    m->main = lt_block_new(m, NULL, "main");
    if (!m->main)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    im.fn_size = calloc(mp->n_functions + 1, sizeof *im.fn_size);
    if (!im.fn_size)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = import_graph(&im, NULL, mp->graph, m->main, true, &im.model_ops);
    free(im.fn_size);
    if (st == LT_OK)
        st = lt_ir_untie_identity_params(m, err);
    if (st != LT_OK)
        return st;
    if (m->nunsupported)
        return LT_OK; /* types of unknown ops cannot be inferred; report first */
    st = lt_infer_module(m, err);
    if (st == LT_OK)
        st = lt_ir_verify(m, err);
    return st;
}

static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int sh = 0; sh < 64 && *p < end; sh += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* How deep messages nest in [p, end), read as message type d; stops early
 * past LT_MAX_PROTO_DEPTH. Malformed bytes end the walk: protobuf-c rejects
 * them afterwards. Each byte is read once, by the innermost message holding it. */
static int wire_depth(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth)
{
    int max = depth;
    while (p < end && max <= LT_MAX_PROTO_DEPTH) {
        uint64_t key, x;
        if (!wire_varint(&p, end, &key) || (key >> 3) > 0x1fffffff)
            break;
        unsigned wt = key & 7;
        if (wt == 0 && wire_varint(&p, end, &x))
            continue;
        if ((wt == 1 && end - p >= 8) || (wt == 5 && end - p >= 4)) {
            p += wt == 1 ? 8 : 4;
            continue;
        }
        if (wt != 2 || !wire_varint(&p, end, &x) || x > (uint64_t)(end - p))
            break;
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            int sub = wire_depth(f->descriptor, p, p + x, depth + 1);
            max = sub > max ? sub : max;
        }
        p += x;
    }
    return max;
}

/* Messages are printed as one line that starts with the file's name; names
 * taken from the file may hold line breaks or other control characters. */
static void tidy_message(lt_err *err, const char *path)
{
    size_t pl = strlen(path), ml = strnlen(err->msg, sizeof err->msg - 1);
    err->msg[ml] = 0;
    if (strncmp(err->msg, path, pl) != 0 && pl + 2 + ml < sizeof err->msg) {
        memmove(err->msg + pl + 2, err->msg, ml + 1);
        memcpy(err->msg, path, pl);
        memcpy(err->msg + pl, ": ", 2);
    }
    for (char *c = err->msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static lt_status load_buffer(const void *data, size_t len, const char *name, const char *base_dir,
                             lt_model **out, lt_err *err)
{
    *out = NULL;
    lt_module *m = lt_module_new();
    if (!m)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    m->path = lt_ir_strdup(m, name ? name : "<buffer>");
    m->base_dir = base_dir ? lt_ir_strdup(m, base_dir) : NULL;
    if (len == 0) {
        lt_module_free(m);
        return lt_errf(err, LT_ERR_INVALID, "%s: the file is empty, not an ONNX model", name ? name : "<buffer>");
    }
    if (wire_depth(&onnx__model_proto__descriptor, data, (const uint8_t *)data + len, 0) > LT_MAX_PROTO_DEPTH) {
        lt_errf(err, LT_ERR_INVALID, "%s: protobuf messages are nested more than %d deep (subgraphs or types)",
                m->path, LT_MAX_PROTO_DEPTH);
        lt_module_free(m);
        return LT_ERR_INVALID;
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) {
        lt_errf(err, LT_ERR_INVALID, "%s: not an ONNX model (the protobuf does not parse: truncated or corrupt)",
                m->path);
        lt_module_free(m);
        return LT_ERR_INVALID;
    }
    lt_status st = import_model(m, mp, err);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (st != LT_OK) {
        lt_module_free(m);
        return st;
    }
    *out = m;
    return LT_OK;
}

lt_status lt_model_load_buffer(const void *data, size_t len, const char *name, const char *base_dir,
                               lt_model **out, lt_err *err)
{
    lt_status st = load_buffer(data, len, name, base_dir, out, err);
    if (st != LT_OK)
        tidy_message(err, name ? name : "<buffer>");
    return st;
}

lt_status lt_model_load(const char *path, lt_model **out, lt_err *err)
{
    *out = NULL;
    uint8_t *data;
    size_t len;
    lt_status st = lt_read_file(path, LT_MAX_MODEL_BYTES, &data, &len, err);
    if (st != LT_OK)
        return st;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    st = lt_model_load_buffer(data, len, path, dirname(dir), out, err);
    free(data);
    return st;
}

int lt_model_num_inputs(const lt_model *m) { return m->main->nparams; }
const char *lt_model_input_name(const lt_model *m, int i) { return m->main->params[i]->name; }
int lt_model_num_outputs(const lt_model *m) { return m->main->nresults; }
const char *lt_model_output_name(const lt_model *m, int i) { return m->main->results[i]->name; }
