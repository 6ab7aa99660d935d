/* Export: writes the original ONNX file again with the trained weights. The
 * ModelProto is unpacked, every initializer (main graph and the graphs of
 * If/Loop/Scan attributes, at any depth) takes the bytes of the parameter of
 * the same name and scope, and the message is packed and written atomically.
 * metadata_props entries the model set (the normalisation of a training run)
 * are written or added. Nothing else in the file changes. A model that had
 * external data, or one whose protobuf would pass 2 GiB, is written with
 * its tensors in a data file beside it (export_external.c). */
#include "importer.h"
#include "atomic_file.h"
#include "export_external.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The unpacked message and every buffer put into it come from malloc, so
 * fields can be swapped and the whole tree freed by protobuf-c. */
static void *pb_alloc(void *ud, size_t n)
{
    (void)ud;
    return malloc(n ? n : 1);
}
static void pb_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}
static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

/* Where a graph sits: the attribute graph's name (or the attribute's name,
 * as the importer names blocks) and its node, up to the main graph. */
typedef struct scope_link {
    const char *block;
    const char *node;
    const struct scope_link *up;
} scope_link;

typedef struct exporter {
    const lt_module *m;
    const char *path;
    bool *used; /* per module parameter: already written */
    lt_err *err;
    const char *base_dir; /* the original's folder, for external data read again */
    /* initializers whose raw_data is a parameter's own memory (not copied,
     * never freed here): detached before the message is freed */
    Onnx__TensorProto **borrowed;
    size_t nborrowed, cap_borrowed;
} exporter;

static const char *str_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* Whether the parameter's block has the same chain of (block, owner node)
 * names as the graph the initializer lives in. */
static bool same_scope(const lt_block *b, const scope_link *l)
{
    for (; b && b->parent; b = b->parent, l = l->up) {
        if (!l || !b->owner || strcmp(str_or(b->name, ""), str_or(l->block, "")) != 0 ||
            strcmp(str_or(b->owner->name, ""), str_or(l->node, "")) != 0)
            return false;
    }
    return l == NULL;
}

/* The parameter an initializer becomes: same name and scope; when the scope
 * cannot be matched (graphs renamed by function inlining), the first unused
 * parameter of that name. -1 when there is none. */
static int find_param(exporter *x, const char *name, const scope_link *l)
{
    int loose = -1;
    for (int p = 0; p < x->m->nparams; p++) {
        const lt_param *pp = &x->m->params[p];
        if (x->used[p] || !pp->name || strcmp(pp->name, name) != 0)
            continue;
        if (pp->value && same_scope(pp->value->block, l))
            return p;
        if (loose < 0)
            loose = p;
    }
    return loose;
}

static lt_status check_shape(exporter *x, const char *name, int32_t dtype, size_t n_dims, const int64_t *dims,
                             const lt_tensor *t)
{
    bool ok = (int32_t)t->dtype == dtype && (size_t)t->rank == n_dims;
    for (size_t i = 0; ok && i < n_dims; i++)
        ok = dims[i] == t->dims[i];
    if (!ok)
        return lt_errf(x->err, LT_ERR_INVALID,
                       "%s: initializer '%s' does not match the trained parameter (element type or shape differ)",
                       x->path, name);
    return LT_OK;
}

static size_t tensor_bytes(const lt_tensor *t) { return (size_t)t->numel * lt_dtype_size(t->dtype); }

static void *dup_bytes(const void *src, size_t n)
{
    void *d = malloc(n ? n : 1);
    if (d && n)
        memcpy(d, src, n);
    return d;
}

/* Tensor protos in address order, for the borrowed list. */
static int by_address(const void *a, const void *b)
{
    uintptr_t p = (uintptr_t) * (Onnx__TensorProto *const *)a, q = (uintptr_t) * (Onnx__TensorProto *const *)b;
    return p < q ? -1 : p > q;
}
/* Whether tp's raw_data is borrowed (x->borrowed is sorted by then). */
static bool is_borrowed(void *ud, const Onnx__TensorProto *tp)
{
    exporter *x = ud;
    return x->nborrowed && bsearch(&tp, x->borrowed, x->nborrowed, sizeof *x->borrowed, by_address);
}

/* Replaces the tensor's data by `bytes` bytes at src (raw_data), clearing the
 * typed fields and any external data reference. borrow: src (a parameter's
 * data, alive until the export ends) is used in place, not copied. */
static lt_status set_raw(exporter *x, Onnx__TensorProto *tp, const void *src, size_t bytes, bool borrow)
{
    if (borrow && bytes && x->nborrowed == x->cap_borrowed) {
        size_t cap = x->cap_borrowed ? 2 * x->cap_borrowed : 64;
        Onnx__TensorProto **grown = realloc(x->borrowed, sizeof *grown * cap);
        if (grown) {
            x->borrowed = grown;
            x->cap_borrowed = cap;
        }
    }
    borrow = borrow && bytes && x->nborrowed < x->cap_borrowed;
    void *copy = borrow ? (void *)src : dup_bytes(src, bytes);
    if (!copy)
        return lt_errf(x->err, LT_ERR_NOMEM, "out of memory (%zu bytes for initializer '%s')", bytes,
                       str_or(tp->name, "?"));
    if (borrow)
        x->borrowed[x->nborrowed++] = tp;
    if (tp->has_raw_data || tp->raw_data.data)
        free(tp->raw_data.data);
    lt_export_tp_set_raw(tp, copy, bytes);
    return LT_OK;
}

/* raw_data of t's values: 4- and 2-bit elements packed as ONNX stores them */
static lt_status set_raw_tensor(exporter *x, Onnx__TensorProto *tp, const lt_tensor *t)
{
    if (lt_dtype_bits(t->dtype) >= 8)
        return set_raw(x, tp, t->data, tensor_bytes(t), true);
    size_t n = lt_dtype_packed_bytes(t->dtype, t->numel);
    uint8_t *packed = malloc(n ? n : 1);
    if (!packed)
        return lt_errf(x->err, LT_ERR_NOMEM, "out of memory (%zu bytes for initializer '%s')", n,
                       str_or(tp->name, "?"));
    lt_narrow_pack(t->dtype, t->data, t->numel, packed);
    lt_status s = set_raw(x, tp, packed, n, false);
    free(packed);
    return s;
}

static lt_status write_initializer(exporter *x, Onnx__TensorProto *tp, const scope_link *l)
{
    if (!tp || !tp->name || !*tp->name)
        return lt_errf(x->err, LT_ERR_INVALID, "%s: an initializer has no name", x->path);
    int p = find_param(x, tp->name, l);
    if (p < 0)
        return lt_errf(x->err, LT_ERR_INVALID, "%s: initializer '%s' has no parameter in the trained model",
                       x->path, tp->name);
    x->used[p] = true;
    const lt_tensor *t = &x->m->params[p].data;
    lt_status s = check_shape(x, tp->name, tp->has_data_type ? tp->data_type : 0, tp->n_dims, tp->dims, t);
    if (s != LT_OK)
        return s;
    if (t->dtype == LT_STRING)
        return LT_OK; /* strings are never trained; raw_data cannot hold them */
    return set_raw_tensor(x, tp, t);
}

/* Appends a dense initializer named name holding t's values (raw_data) to g. */
static lt_status append_initializer(exporter *x, Onnx__GraphProto *g, const char *name, const lt_tensor *t)
{
    Onnx__TensorProto *tp = malloc(sizeof *tp);
    Onnx__TensorProto **grown = realloc(g->initializer, sizeof *grown * (g->n_initializer + 1));
    if (grown)
        g->initializer = grown;
    if (!tp || !grown) {
        free(tp);
        return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
    }
    onnx__tensor_proto__init(tp);
    tp->name = dup_bytes(name, strlen(name) + 1);
    tp->dims = dup_bytes(t->dims, sizeof(int64_t) * (size_t)t->rank);
    tp->n_dims = (size_t)t->rank;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    g->initializer[g->n_initializer++] = tp; /* owned by the graph from here on */
    if (!tp->name || !tp->dims)
        return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
    return set_raw_tensor(x, tp, t);
}

/* A sparse initializer stays as it is unless training changed its values;
 * then it becomes a dense initializer of the same name (the sparse form
 * cannot hold the new non-zeros). */
static lt_status write_sparse(exporter *x, Onnx__GraphProto *g, size_t i, const scope_link *l, bool *moved)
{
    Onnx__SparseTensorProto *sp = g->sparse_initializer[i];
    const char *name = sp && sp->values ? sp->values->name : NULL;
    *moved = false;
    if (!name || !*name)
        return lt_errf(x->err, LT_ERR_INVALID, "%s: a sparse initializer has no name", x->path);
    int p = find_param(x, name, l);
    if (p < 0)
        return lt_errf(x->err, LT_ERR_INVALID, "%s: sparse initializer '%s' has no parameter in the trained model",
                       x->path, name);
    x->used[p] = true;
    const lt_tensor *t = &x->m->params[p].data;
    char what[300];
    snprintf(what, sizeof what, "sparse initializer '%s'", name);
    lt_tp_ctx c = {x->path, x->base_dir, what};
    lt_tensor orig;
    lt_status s = lt_tensor_from_sparse(&c, sp, &orig, x->err);
    if (s != LT_OK)
        return s;
    s = check_shape(x, name, (int32_t)orig.dtype, (size_t)orig.rank, orig.dims, t);
    bool same = s == LT_OK && memcmp(orig.data, t->data, tensor_bytes(t)) == 0;
    free(orig.data);
    if (s != LT_OK || same)
        return s;
    s = append_initializer(x, g, name, t);
    if (s != LT_OK)
        return s;
    protobuf_c_message_free_unpacked(&sp->base, &pb_allocator);
    memmove(g->sparse_initializer + i, g->sparse_initializer + i + 1,
            sizeof *g->sparse_initializer * (g->n_sparse_initializer - i - 1));
    g->n_sparse_initializer--;
    *moved = true;
    return LT_OK;
}

/* Parameters the importer untied from an Identity of another initializer
 * (ir/untie.c) become initializers of the main graph again, and the
 * Identity nodes that made them go. */
static lt_status write_untied(exporter *x, Onnx__GraphProto *g)
{
    for (int p = 0; p < x->m->nparams; p++) {
        const lt_param *pp = &x->m->params[p];
        if (x->used[p] || !pp->untied_from)
            continue;
        x->used[p] = true;
        size_t w = 0;
        for (size_t n = 0; n < g->n_node; n++) {
            Onnx__NodeProto *np = g->node[n];
            if (np && np->op_type && !strcmp(np->op_type, "Identity") && np->n_output == 1 && np->n_input == 1 &&
                !strcmp(np->output[0], pp->name) && !strcmp(np->input[0], pp->untied_from) &&
                (!np->domain || !*np->domain || !strcmp(np->domain, "ai.onnx"))) {
                protobuf_c_message_free_unpacked(&np->base, &pb_allocator);
                continue;
            }
            g->node[w++] = np;
        }
        if (w == g->n_node)
            return lt_errf(x->err, LT_ERR_INVALID, "%s: no Identity of '%s' makes parameter '%s'", x->path,
                           pp->untied_from, pp->name);
        g->n_node = w;
        lt_status s = append_initializer(x, g, pp->name, &pp->data);
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

/* *field (a string the message owns) becomes a copy of value; false when
 * out of memory */
static bool replace_string(char **field, const char *value)
{
    char *v = dup_bytes(value, strlen(value) + 1);
    if (!v)
        return false;
    free(*field);
    *field = v;
    return true;
}

static lt_status set_string(exporter *x, char **field, const char *value)
{
    return replace_string(field, value) ? LT_OK : lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
}

/* The path of node np of a graph whose nodes' paths start with prefix:
 * prefix then its name (as lt_torch_node_path writes it: a subgraph's
 * nodes are under "NODE/GRAPH/"). NULL when out of memory. */
static char *node_path(const char *prefix, const char *name, const char *sub)
{
    size_t lp = strlen(prefix), ln = strlen(name), ls = sub ? strlen(sub) + 2 : 0;
    char *path = malloc(lp + ln + ls + 1);
    if (!path)
        return NULL;
    memcpy(path, prefix, lp);
    memcpy(path + lp, name, ln + 1);
    if (sub) {
        path[lp + ln] = '/';
        memcpy(path + lp + ln + 1, sub, ls - 2);
        path[lp + ln + ls - 1] = '/';
        path[lp + ln + ls] = 0;
    }
    return path;
}

/* Points the node inputs (in g and its subgraphs, by node path and slot:
 * lt_param.split_node) that read pp->split_from and now read parameter pp
 * at pp's name; *hits counts the inputs changed. prefix: the path of g's
 * nodes less their names ("" for the main graph). false when out of
 * memory. */
static bool point_inputs(Onnx__GraphProto *g, const char *prefix, const lt_param *pp, int *hits, int depth)
{
    for (size_t n = 0; g && depth <= 64 && n < g->n_node; n++) {
        Onnx__NodeProto *np = g->node[n];
        char *path = np && np->name ? node_path(prefix, np->name, NULL) : NULL;
        if (np && np->name && !path)
            return false;
        for (int r = 0; path && r < pp->nsplit; r++) {
            size_t k = (size_t)pp->split_slot[r];
            if (!pp->split_node[r] || strcmp(path, pp->split_node[r]) != 0)
                continue;
            /* a split one replaces the merged name; a restored bias fills
             * an omitted input or is added */
            bool fits = pp->restored ? k >= np->n_input || !np->input[k] || !*np->input[k]
                                     : k < np->n_input && np->input[k] && !strcmp(np->input[k], pp->split_from);
            if (!fits)
                continue;
            while (k >= np->n_input) {
                char **grown = realloc(np->input, sizeof *grown * (np->n_input + 1));
                if (grown)
                    np->input = grown;
                char *empty = grown ? dup_bytes("", 1) : NULL;
                if (!empty) {
                    free(path);
                    return false;
                }
                np->input[np->n_input++] = empty;
            }
            if (!replace_string(&np->input[k], pp->name)) {
                free(path);
                return false;
            }
            ++*hits;
        }
        free(path);
        for (size_t a = 0; np && a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            if (!ap || !ap->g)
                continue;
            /* as the importer names the block: the graph's name, else the attribute's */
            char *sub = node_path(prefix, np->name ? np->name : "", str_or(ap->g->name, str_or(ap->name, "")));
            bool ok = sub && point_inputs(ap->g, sub, pp, hits, depth + 1);
            free(sub);
            if (!ok)
                return false;
        }
    }
    return true;
}

/* The node of g named name, or NULL; *at gets its index. */
static Onnx__NodeProto *node_named(Onnx__GraphProto *g, const char *name, size_t *at)
{
    for (size_t n = 0; n < g->n_node; n++)
        if (g->node[n] && g->node[n]->name && !strcmp(g->node[n]->name, name)) {
            *at = n;
            return g->node[n];
        }
    return NULL;
}


/* A copy of node proto `from`, unpacked anew (the graph frees it), or NULL. */
static Onnx__NodeProto *copy_node(const Onnx__NodeProto *from)
{
    size_t len = onnx__node_proto__get_packed_size(from);
    uint8_t *buf = malloc(len ? len : 1);
    Onnx__NodeProto *copy = NULL;
    if (buf) {
        onnx__node_proto__pack(from, buf);
        copy = onnx__node_proto__unpack(&pb_allocator, len, buf);
    }
    free(buf);
    return copy;
}

/* Nodes the importer copied per module (ir/unshare.c) are written after
 * the node they copy, and the inputs that read the copies read them. */
static lt_status write_clones(exporter *x, Onnx__GraphProto *g)
{
    for (int c = 0; c < x->m->nclones; c++) {
        const lt_clone *k = &x->m->clones[c];
        size_t at;
        Onnx__NodeProto *from = node_named(g, k->from, &at);
        if (!from || from->n_output != (size_t)k->nout)
            return lt_errf(x->err, LT_ERR_INVALID, "%s: node '%s', copied for module '%s', is not in the file", x->path,
                           k->from, k->scope);
        Onnx__NodeProto *copy = copy_node(from);
        Onnx__NodeProto **grown = copy ? realloc(g->node, sizeof *grown * (g->n_node + 1)) : NULL;
        if (!grown) {
            if (copy)
                protobuf_c_message_free_unpacked(&copy->base, &pb_allocator);
            return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
        }
        g->node = grown;
        memmove(g->node + at + 2, g->node + at + 1, sizeof *g->node * (g->n_node - at - 1));
        g->node[at + 1] = copy; /* the graph's from here on */
        g->n_node++;
        lt_status s = set_string(x, &copy->name, k->name);
        for (int o = 0; o < k->nout && s == LT_OK; o++)
            if (k->out[o])
                s = set_string(x, &copy->output[o], k->out[o]);
        for (int r = 0; r < k->nread && s == LT_OK; r++) {
            size_t ri;
            Onnx__NodeProto *rp = node_named(g, k->read_node[r], &ri);
            size_t slot = (size_t)k->read_slot[r];
            if (!rp || slot >= rp->n_input || !k->out[k->read_out[r]])
                return lt_errf(x->err, LT_ERR_INVALID, "%s: node '%s', which reads the copy of '%s', is not in the file",
                               x->path, k->read_node[r], k->from);
            s = set_string(x, &rp->input[slot], k->out[k->read_out[r]]);
        }
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

/* bn's node proto made from a copy of its product's: op, name, inputs,
 * output and attributes its own (the metadata stays the product's, whose
 * fx call was the BatchNorm's). false when out of memory. */
static bool make_bn_node(Onnx__NodeProto *np, const lt_bn_insert *bn)
{
    for (size_t a = 0; a < np->n_attribute; a++)
        protobuf_c_message_free_unpacked(&np->attribute[a]->base, &pb_allocator);
    np->n_attribute = 0;
    for (size_t k = 0; k < np->n_input; k++)
        free(np->input[k]);
    np->n_input = 0;
    char **in = realloc(np->input, sizeof *in * 5);
    Onnx__AttributeProto **at = realloc(np->attribute, sizeof *at * 2);
    if (in)
        np->input = in;
    if (at)
        np->attribute = at;
    if (!in || !at)
        return false;
    const char *names[5] = {bn->in, bn->param[0], bn->param[1], bn->param[2], bn->param[3]};
    for (int k = 0; k < 5; k++) {
        if (!(np->input[k] = dup_bytes(names[k], strlen(names[k]) + 1)))
            return false;
        np->n_input++;
    }
    static const char *const attr[2] = {"epsilon", "momentum"};
    const float value[2] = {bn->epsilon, bn->momentum};
    for (int a = 0; a < 2; a++) {
        Onnx__AttributeProto *ap = malloc(sizeof *ap);
        if (!ap)
            return false;
        onnx__attribute_proto__init(ap);
        np->attribute[np->n_attribute++] = ap;
        if (!(ap->name = dup_bytes(attr[a], strlen(attr[a]) + 1)))
            return false;
        ap->has_type = 1;
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        ap->has_f = 1;
        ap->f = value[a];
    }
    return replace_string(&np->op_type, "BatchNormalization") && replace_string(&np->name, bn->name) &&
           replace_string(&np->domain, "") && np->n_output == 1 && replace_string(&np->output[0], bn->out);
}

/* BatchNorms the importer gave back (ir/unfold_bn.c) are written after the
 * product they were folded into, with their tensors as initializers, and
 * the product's readers read them. */
static lt_status write_bn_inserts(exporter *x, Onnx__GraphProto *g)
{
    for (int i = 0; i < x->m->nbn_inserts; i++) {
        const lt_bn_insert *bn = &x->m->bn_inserts[i];
        size_t at;
        Onnx__NodeProto *from = node_named(g, bn->after, &at);
        if (!from || from->n_output != 1 || !from->output[0] || strcmp(from->output[0], bn->in) != 0)
            return lt_errf(x->err, LT_ERR_INVALID, "%s: node '%s', whose BatchNorm lantern gave back, is not in the file",
                           x->path, bn->after);
        Onnx__NodeProto *copy = copy_node(from);
        Onnx__NodeProto **grown = copy ? realloc(g->node, sizeof *grown * (g->n_node + 1)) : NULL;
        if (grown)
            g->node = grown;
        if (!grown || !make_bn_node(copy, bn)) {
            if (copy)
                protobuf_c_message_free_unpacked(&copy->base, &pb_allocator);
            return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
        }
        memmove(g->node + at + 2, g->node + at + 1, sizeof *g->node * (g->n_node - at - 1));
        g->node[at + 1] = copy;
        g->n_node++;
        for (int r = 0; r < bn->nread; r++) {
            size_t ri;
            Onnx__NodeProto *rp = node_named(g, bn->read_node[r], &ri);
            size_t slot = (size_t)bn->read_slot[r];
            if (!rp || slot >= rp->n_input)
                return lt_errf(x->err, LT_ERR_INVALID, "%s: node '%s', which reads the BatchNorm '%s', is not in the "
                               "file", x->path, bn->read_node[r], bn->name);
            lt_status s = set_string(x, &rp->input[slot], bn->out);
            if (s != LT_OK)
                return s;
        }
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < x->m->nparams; p++) {
                const lt_param *pp = &x->m->params[p];
                if (x->used[p] || !pp->name || strcmp(pp->name, bn->param[k]) != 0)
                    continue;
                x->used[p] = true;
                lt_status s = append_initializer(x, g, pp->name, &pp->data);
                if (s != LT_OK)
                    return s;
                break;
            }
    }
    return LT_OK;
}

/* Parameters split from an initializer an exporter merged (ir/split_merged.c)
 * or biases it dropped (ir/restore_bias.c) become initializers of the main
 * graph, and their readers read them (a node in a subgraph from the outer
 * scope). */
static lt_status write_split(exporter *x, Onnx__GraphProto *g)
{
    for (int p = 0; p < x->m->nparams; p++) {
        const lt_param *pp = &x->m->params[p];
        if (x->used[p] || !(pp->split_from || pp->restored))
            continue;
        x->used[p] = true;
        int hits = 0;
        if (!point_inputs(g, "", pp, &hits, 0))
            return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
        if (hits != pp->nsplit)
            return lt_errf(x->err, LT_ERR_INVALID, "%s: %d of the %d node inputs that read '%s' as '%s' are not in the "
                           "file", x->path, pp->nsplit - hits, pp->nsplit,
                           pp->split_from ? pp->split_from : "(a dropped bias)", pp->name);
        lt_status s = append_initializer(x, g, pp->name, &pp->data);
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

/* The trained model's metadata_props entries whose value differs from the
 * file's (or that the file lacks, appended); every other entry stays. */
static lt_status write_metadata(exporter *x, Onnx__ModelProto *mp)
{
    for (int i = 0; i < x->m->nmeta; i++) {
        const char *key = x->m->meta_key[i], *value = x->m->meta_value[i];
        Onnx__StringStringEntryProto *e = NULL;
        for (size_t j = 0; j < mp->n_metadata_props && !e; j++)
            if (mp->metadata_props[j] && mp->metadata_props[j]->key && !strcmp(mp->metadata_props[j]->key, key))
                e = mp->metadata_props[j];
        if (e && e->value && !strcmp(e->value, value))
            continue;
        char *v = dup_bytes(value, strlen(value) + 1);
        if (!v)
            return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
        if (e) {
            free(e->value);
            e->value = v;
            continue;
        }
        Onnx__StringStringEntryProto **grown =
            realloc(mp->metadata_props, sizeof *grown * (mp->n_metadata_props + 1));
        e = malloc(sizeof *e);
        if (grown)
            mp->metadata_props = grown;
        char *k = dup_bytes(key, strlen(key) + 1);
        if (!grown || !e || !k) {
            free(v);
            free(e);
            free(k);
            return lt_errf(x->err, LT_ERR_NOMEM, "out of memory");
        }
        onnx__string_string_entry_proto__init(e);
        e->key = k;
        e->value = v;
        mp->metadata_props[mp->n_metadata_props++] = e; /* the message's from here on */
    }
    return LT_OK;
}

static lt_status export_graph(exporter *x, Onnx__GraphProto *g, const scope_link *l, int depth)
{
    if (!g)
        return LT_OK;
    if (depth > 64)
        return lt_errf(x->err, LT_ERR_INVALID, "%s: subgraphs are nested more than 64 deep", x->path);
    lt_status s = LT_OK;
    for (size_t i = 0; i < g->n_initializer && s == LT_OK; i++)
        s = write_initializer(x, g->initializer[i], l);
    /* after the dense ones: a sparse initializer that turns dense is appended */
    for (size_t i = 0; i < g->n_sparse_initializer && s == LT_OK;) {
        bool moved;
        s = write_sparse(x, g, i, l, &moved);
        i += !moved;
    }
    for (size_t n = 0; n < g->n_node && s == LT_OK; n++) {
        Onnx__NodeProto *np = g->node[n];
        for (size_t a = 0; np && a < np->n_attribute && s == LT_OK; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            if (!ap || !ap->g)
                continue;
            scope_link sub = {str_or(ap->g->name, ap->name), np->name, l};
            s = export_graph(x, ap->g, &sub, depth + 1);
        }
    }
    return s;
}

lt_status lt_model_export(const lt_model *trained, const char *original_onnx, const char *out_path, lt_err *err)
{
    uint8_t *data = NULL, *packed = NULL;
    size_t len = 0;
    lt_status s = lt_read_file(original_onnx, LT_MAX_MODEL_BYTES, &data, &len, err);
    if (s != LT_OK)
        return s;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pb_allocator, len, data);
    free(data);
    if (!mp || !mp->graph) {
        if (mp)
            onnx__model_proto__free_unpacked(mp, &pb_allocator);
        return lt_errf(err, LT_ERR_INVALID, "%s: not an ONNX model (the protobuf does not parse)", original_onnx);
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", original_onnx);
    exporter x = {trained, original_onnx, calloc(trained->nparams + 1, sizeof(bool)), err, dirname(dir), NULL, 0, 0};
    if (!x.used)
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    /* asked before the initializers lose their external data references */
    bool had_external = lt_export_has_external(mp);
    if (s == LT_OK)
        s = export_graph(&x, mp->graph, NULL, 0);
    if (s == LT_OK)
        s = write_untied(&x, mp->graph);
    if (s == LT_OK)
        s = write_clones(&x, mp->graph);
    if (s == LT_OK)
        s = write_bn_inserts(&x, mp->graph);
    if (s == LT_OK)
        s = write_split(&x, mp->graph);
    if (s == LT_OK)
        s = write_metadata(&x, mp);
    size_t n = s == LT_OK ? onnx__model_proto__get_packed_size(mp) : 0;
    if (s == LT_OK && (had_external || n > lt_export_inline_max())) {
        if (x.nborrowed)
            qsort(x.borrowed, x.nborrowed, sizeof *x.borrowed, by_address);
        s = lt_export_write_external(mp, original_onnx, out_path, is_borrowed, &x, err);
    } else if (s == LT_OK) {
        packed = malloc(n ? n : 1);
        if (!packed)
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes for the packed model)", n);
        else if (onnx__model_proto__pack(mp, packed) != n)
            s = lt_errf(err, LT_ERR_INTERNAL, "%s: packing the model gave an unexpected size", out_path);
        else
            s = lt_write_atomic(out_path, packed, n, "the model", err);
    }
    free(packed);
    free(x.used);
    for (size_t i = 0; i < x.nborrowed; i++) /* the parameters' memory, not the message's */
        lt_export_tp_detach_raw(x.borrowed[i]);
    free(x.borrowed);
    onnx__model_proto__free_unpacked(mp, &pb_allocator);
    return s;
}

int lt_model_num_params(const lt_model *m) { return m ? m->nparams : 0; }

const char *lt_model_param_name(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_params(m) ? m->params[i].name : NULL;
}

const lt_tensor *lt_model_param(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_params(m) ? &m->params[i].data : NULL;
}

lt_status lt_model_set_param(lt_model *m, int i, const lt_tensor *t, lt_err *err)
{
    if (!m)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_set_param: the model is NULL");
    if (i < 0 || i >= m->nparams)
        return lt_errf(err, LT_ERR_INVALID, "%s: no parameter %d", m->path, i);
    if (!t)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_set_param: the new value for parameter '%s' is NULL",
                       m->params[i].name);
    lt_tensor *p = &m->params[i].data;
    bool ok = t->dtype == p->dtype && t->rank == p->rank && p->dtype != LT_STRING;
    for (int d = 0; ok && d < t->rank; d++)
        ok = t->dims[d] == p->dims[d];
    char want[160], got[160];
    size_t a = 0, b = 0;
    want[0] = got[0] = 0;
    for (int d = 0; d < p->rank && a + 24 < sizeof want; d++)
        a += (size_t)snprintf(want + a, sizeof want - a, "%s%lld", d ? "," : "", (long long)p->dims[d]);
    for (int d = 0; d < t->rank && d < LT_MAX_RANK && b + 24 < sizeof got; d++)
        b += (size_t)snprintf(got + b, sizeof got - b, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    if (!ok)
        return lt_errf(err, LT_ERR_INVALID, "%s: parameter '%s' is %s[%s]; the new value is %s[%s]", m->path,
                       m->params[i].name, lt_dtype_name(p->dtype), want, lt_dtype_name(t->dtype), got);
    /* the copy reads the parameter's size from t->data: t must hold that many */
    if (t->numel != p->numel)
        return lt_errf(err, LT_ERR_INVALID, "%s: the new value for parameter '%s' has numel %lld but its dims [%s] "
                       "hold %lld elements", m->path, m->params[i].name, (long long)t->numel, got,
                       (long long)p->numel);
    if (!t->data && p->numel)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_set_param: the new value for parameter '%s' has data NULL",
                       m->params[i].name);
    if (p->numel)
        memcpy(p->data, t->data, tensor_bytes(p));
    return LT_OK;
}
