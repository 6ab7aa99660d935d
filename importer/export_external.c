/* External data on the way out: which files a model's external data lives
 * in (for the command line's checks), and the writer that puts an exported
 * model's tensors in one data file beside it (export_external.h says how). */
#include "export_external.h"
#include "importer.h"
#include "atomic_file.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool lt_export_data_path(const char *out, char *buf, size_t len)
{
    return snprintf(buf, len, "%s%s", out, LT_EXPORT_DATA_SUFFIX) < (int)len;
}

static size_t inline_max;

void lt_export_set_inline_max(size_t bytes) { inline_max = bytes; }
size_t lt_export_inline_max(void) { return inline_max ? inline_max : LT_EXPORT_INLINE_MAX; }

/* ---- the files a model reads its external data from ---- */

typedef struct loc_list {
    char **v;
    int n, cap;
    const char *dir;
    bool oom;
} loc_list;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
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

static void add_location(loc_list *l, const uint8_t *s, size_t len)
{
    if (!len || l->oom)
        return;
    size_t dl = s[0] == '/' ? 0 : strlen(l->dir) + 1;
    char *path = malloc(dl + len + 1);
    if (!path) {
        l->oom = true;
        return;
    }
    if (dl)
        snprintf(path, dl + 1, "%s/", l->dir);
    memcpy(path + dl, s, len);
    path[dl + len] = 0;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], path)) {
            free(path);
            return;
        }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **grown = realloc(l->v, sizeof *grown * (size_t)cap);
        if (!grown) {
            free(path);
            l->oom = true;
            return;
        }
        l->v = grown;
        l->cap = cap;
    }
    l->v[l->n++] = path;
}

/* Walks one length-delimited field's bytes: false at a malformed key. */
static bool next_field(const uint8_t **p, const uint8_t *end, unsigned *num, const uint8_t **body, size_t *blen)
{
    uint64_t key, x;
    if (!varint(p, end, &key) || (key >> 3) > 0x1fffffff)
        return false;
    unsigned wt = key & 7;
    *num = (unsigned)(key >> 3);
    *body = NULL;
    if (wt == 0)
        return varint(p, end, &x);
    if (wt == 1 || wt == 5) {
        size_t k = wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) < k)
            return false;
        *p += k;
        return true;
    }
    if (wt != 2 || !varint(p, end, &x) || x > (uint64_t)(end - *p))
        return false;
    *body = *p;
    *blen = (size_t)x;
    *p += x;
    return true;
}

/* A StringStringEntryProto: key 1, value 2; "location" entries are kept. */
static void external_entry(loc_list *l, const uint8_t *p, const uint8_t *end)
{
    const uint8_t *key = NULL, *value = NULL, *body;
    size_t klen = 0, vlen = 0, blen;
    unsigned num;
    while (p < end && next_field(&p, end, &num, &body, &blen)) {
        if (body && num == 1) {
            key = body;
            klen = blen;
        } else if (body && num == 2) {
            value = body;
            vlen = blen;
        }
    }
    if (key && value && klen == 8 && !memcmp(key, "location", 8))
        add_location(l, value, vlen);
}

/* Every message field of d in [p, end), raw bytes skipped unread; a
 * TensorProto's external_data entries (field 13) give the locations. */
static void walk(loc_list *l, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth)
{
    const uint8_t *body;
    size_t blen;
    unsigned num;
    while (depth < 512 && p < end && next_field(&p, end, &num, &body, &blen)) {
        if (!body)
            continue;
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, num);
        if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (d == &onnx__tensor_proto__descriptor && num == 13)
            external_entry(l, body, body + blen);
        else
            walk(l, f->descriptor, body, body + blen, depth + 1);
    }
}

bool lt_model_external_files(const char *path, char ***files, int *n)
{
    *files = NULL;
    *n = 0;
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return true;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return true;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size > LT_MAX_MODEL_BYTES) {
        close(fd);
        return true;
    }
    /* mapped, not read: the walk skips raw_data, so its pages are never touched */
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return true;
    loc_list l = {NULL, 0, 0, dirname(dir), false};
    walk(&l, &onnx__model_proto__descriptor, map, (const uint8_t *)map + st.st_size, 0);
    munmap(map, (size_t)st.st_size);
    if (l.oom) {
        lt_export_free_files(l.v, l.n);
        return false;
    }
    *files = l.v;
    *n = l.n;
    return true;
}

void lt_export_free_files(char **files, int n)
{
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
}

/* ---- every tensor of a model ---- */

typedef bool (*tensor_fn)(void *ud, Onnx__TensorProto *tp, bool initializer);

static bool visit_graph(Onnx__GraphProto *g, tensor_fn fn, void *ud, int depth);

static bool visit_sparse(Onnx__SparseTensorProto *sp, tensor_fn fn, void *ud)
{
    return !sp || ((!sp->values || fn(ud, sp->values, false)) && (!sp->indices || fn(ud, sp->indices, false)));
}

static bool visit_nodes(Onnx__NodeProto **nodes, size_t n, tensor_fn fn, void *ud, int depth)
{
    for (size_t i = 0; i < n; i++) {
        Onnx__NodeProto *np = nodes[i];
        for (size_t a = 0; np && a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            if (!ap)
                continue;
            if (ap->t && !fn(ud, ap->t, false))
                return false;
            for (size_t k = 0; k < ap->n_tensors; k++)
                if (ap->tensors[k] && !fn(ud, ap->tensors[k], false))
                    return false;
            if (!visit_sparse(ap->sparse_tensor, fn, ud))
                return false;
            for (size_t k = 0; k < ap->n_sparse_tensors; k++)
                if (!visit_sparse(ap->sparse_tensors[k], fn, ud))
                    return false;
            if (!visit_graph(ap->g, fn, ud, depth + 1))
                return false;
            for (size_t k = 0; k < ap->n_graphs; k++)
                if (!visit_graph(ap->graphs[k], fn, ud, depth + 1))
                    return false;
        }
    }
    return true;
}

/* initializers first (onnx's order), then sparse ones, then the nodes' */
static bool visit_graph(Onnx__GraphProto *g, tensor_fn fn, void *ud, int depth)
{
    if (!g || depth > 256)
        return true;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i] && !fn(ud, g->initializer[i], true))
            return false;
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (!visit_sparse(g->sparse_initializer[i], fn, ud))
            return false;
    return visit_nodes(g->node, g->n_node, fn, ud, depth);
}

static bool visit_model(Onnx__ModelProto *mp, tensor_fn fn, void *ud)
{
    if (!visit_graph(mp->graph, fn, ud, 0))
        return false;
    for (size_t i = 0; i < mp->n_functions; i++)
        if (mp->functions[i] && !visit_nodes(mp->functions[i]->node, mp->functions[i]->n_node, fn, ud, 1))
            return false;
    for (size_t i = 0; i < mp->n_training_info; i++) {
        Onnx__TrainingInfoProto *ti = mp->training_info[i];
        if (ti && (!visit_graph(ti->initialization, fn, ud, 1) || !visit_graph(ti->algorithm, fn, ud, 1)))
            return false;
    }
    return true;
}

static bool is_external(const Onnx__TensorProto *tp)
{
    return tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

static bool not_external(void *ud, Onnx__TensorProto *tp, bool initializer)
{
    (void)ud;
    (void)initializer;
    return !is_external(tp);
}

bool lt_export_has_external(const Onnx__ModelProto *mp)
{
    /* the walk changes nothing; it stops at the first external tensor */
    return !visit_model((Onnx__ModelProto *)mp, not_external, NULL);
}

/* ---- tensor proto fields ---- */

#define CLEAR_TYPED(tp, f)                                                                                       \
    do {                                                                                                         \
        free((tp)->f##_data);                                                                                    \
        (tp)->f##_data = NULL;                                                                                   \
        (tp)->n_##f##_data = 0;                                                                                  \
    } while (0)

void lt_export_tp_clear_typed(Onnx__TensorProto *tp)
{
    CLEAR_TYPED(tp, float);
    CLEAR_TYPED(tp, int32);
    CLEAR_TYPED(tp, int64);
    CLEAR_TYPED(tp, double);
    CLEAR_TYPED(tp, uint64);
}

void lt_export_tp_clear_external(Onnx__TensorProto *tp)
{
    for (size_t i = 0; i < tp->n_external_data; i++)
        if (tp->external_data[i])
            protobuf_c_message_free_unpacked(&tp->external_data[i]->base, NULL);
    free(tp->external_data);
    tp->external_data = NULL;
    tp->n_external_data = 0;
    if (is_external(tp)) {
        tp->has_data_location = 0;
        tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
    }
}

void lt_export_tp_detach_raw(Onnx__TensorProto *tp)
{
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
}

void lt_export_tp_set_raw(Onnx__TensorProto *tp, void *raw, size_t len)
{
    lt_export_tp_clear_typed(tp);
    lt_export_tp_clear_external(tp);
    tp->raw_data.data = raw;
    tp->raw_data.len = len;
    tp->has_raw_data = 1;
}

/* ---- the writer ---- */

typedef struct ext_out {
    FILE *f;
    uint64_t pos; /* bytes in the data file so far */
    const char *location, *data_path, *original;
    char base_dir[PATH_MAX];
    bool (*borrowed)(void *ud, const struct Onnx__TensorProto *tp);
    void *ud;
    lt_err *err;
    lt_status s;
    int moved;
} ext_out;

static void drop_raw(ext_out *x, Onnx__TensorProto *tp)
{
    if (tp->raw_data.data && !x->borrowed(x->ud, tp))
        free(tp->raw_data.data);
    lt_export_tp_detach_raw(tp);
}

static lt_status nomem(ext_out *x) { return lt_errf(x->err, LT_ERR_NOMEM, "out of memory"); }

/* A tensor the model read from external data, as raw_data again (from the
 * input model's folder, with the importer's checks). */
static lt_status read_back(ext_out *x, Onnx__TensorProto *tp, bool initializer)
{
    char what[300];
    snprintf(what, sizeof what, "%s '%s'", initializer ? "initializer" : "tensor", tp->name ? tp->name : "");
    lt_tp_ctx c = {x->original, x->base_dir, what};
    lt_tensor t;
    lt_status s = lt_tensor_from_proto(&c, tp, &t, x->err);
    if (s != LT_OK)
        return s;
    size_t bytes = (size_t)t.numel * lt_dtype_size(t.dtype);
    uint8_t *raw = t.data;
    if (lt_dtype_bits(t.dtype) < 8) {
        bytes = lt_dtype_packed_bytes(t.dtype, t.numel);
        raw = malloc(bytes ? bytes : 1);
        if (raw)
            lt_narrow_pack(t.dtype, t.data, t.numel, raw);
        free(t.data);
        if (!raw)
            return nomem(x);
    }
    drop_raw(x, tp);
    lt_export_tp_set_raw(tp, raw, bytes);
    return LT_OK;
}

static bool add_entry(Onnx__TensorProto *tp, const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    char *k = strdup(key), *v = strdup(value);
    if (!e || !k || !v) {
        free(e);
        free(k);
        free(v);
        return false;
    }
    onnx__string_string_entry_proto__init(e);
    e->key = k;
    e->value = v;
    tp->external_data[tp->n_external_data++] = e;
    return true;
}

/* tp's raw_data to the data file at the next aligned offset */
static lt_status place(ext_out *x, Onnx__TensorProto *tp)
{
    static const uint8_t zeros[LT_EXPORT_DATA_ALIGN];
    size_t len = tp->raw_data.len;
    if (len < LT_EXPORT_SIZE_THRESHOLD)
        return LT_OK;
    size_t pad = (size_t)((LT_EXPORT_DATA_ALIGN - x->pos % LT_EXPORT_DATA_ALIGN) % LT_EXPORT_DATA_ALIGN);
    errno = 0;
    if ((pad && fwrite(zeros, 1, pad, x->f) != pad) || fwrite(tp->raw_data.data, 1, len, x->f) != len)
        return lt_errf(x->err, LT_ERR_IO, "%s: cannot write the external data: %s", x->data_path,
                       strerror(errno ? errno : EIO));
    uint64_t offset = x->pos + pad;
    x->pos = offset + len;
    lt_export_tp_clear_external(tp);
    tp->external_data = malloc(3 * sizeof *tp->external_data);
    char off[32], length[32];
    snprintf(off, sizeof off, "%llu", (unsigned long long)offset);
    snprintf(length, sizeof length, "%zu", len);
    if (!tp->external_data || !add_entry(tp, "location", x->location) || !add_entry(tp, "offset", off) ||
        !add_entry(tp, "length", length))
        return nomem(x);
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    drop_raw(x, tp);
    x->moved++;
    return LT_OK;
}

/* Initializers with raw_data of LT_EXPORT_SIZE_THRESHOLD bytes or more go
 * to the data file. Any other tensor still external (a sparse
 * initializer's values or indices) is read back inline: onnx.load and its
 * checker read external data for initializers and attribute tensors only. */
static bool move_one(void *ud, Onnx__TensorProto *tp, bool initializer)
{
    ext_out *x = ud;
    if (is_external(tp))
        x->s = read_back(x, tp, initializer);
    if (x->s == LT_OK && initializer && tp->has_raw_data)
        x->s = place(x, tp);
    return x->s == LT_OK;
}

lt_status lt_export_write_external(Onnx__ModelProto *mp, const char *original, const char *out_path,
                                   bool (*borrowed)(void *ud, const struct Onnx__TensorProto *tp), void *ud,
                                   lt_err *err)
{
    char data_path[PATH_MAX], name[PATH_MAX];
    if (!lt_export_data_path(out_path, data_path, sizeof data_path))
        return lt_errf(err, LT_ERR_INVALID, "%s: path too long for its external data file", out_path);
    snprintf(name, sizeof name, "%s", data_path);
    ext_out x = {.location = basename(name), .data_path = data_path, .original = original, .borrowed = borrowed,
                 .ud = ud, .err = err, .s = LT_OK};
    char orig[PATH_MAX];
    snprintf(orig, sizeof orig, "%s", original);
    snprintf(x.base_dir, sizeof x.base_dir, "%s", dirname(orig));
    lt_atomic_file data, model;
    lt_status s = lt_atomic_open(&data, data_path, err);
    if (s != LT_OK)
        return s;
    x.f = data.f;
    if (!visit_model(mp, move_one, &x)) {
        lt_atomic_abort(&data);
        return x.s;
    }
    size_t n = onnx__model_proto__get_packed_size(mp);
    if (n > LT_EXPORT_INLINE_MAX) {
        lt_atomic_abort(&data);
        return lt_errf(err, LT_ERR_INVALID, "%s: the model takes %zu bytes even with its tensors as external data "
                       "(%d of them in %s), more than protobuf's 2 GiB", out_path, n, x.moved, x.location);
    }
    uint8_t *packed = malloc(n ? n : 1);
    if (!packed) {
        lt_atomic_abort(&data);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes for the packed model)", n);
    }
    if (onnx__model_proto__pack(mp, packed) != n) {
        free(packed);
        lt_atomic_abort(&data);
        return lt_errf(err, LT_ERR_INTERNAL, "%s: packing the model gave an unexpected size", out_path);
    }
    s = lt_atomic_open(&model, out_path, err);
    if (s != LT_OK) {
        free(packed);
        lt_atomic_abort(&data);
        return s;
    }
    /* both whole on disk before either is renamed: a crash between the two
     * renames is the only time the pair disagrees */
    errno = 0;
    bool bad = (n && fwrite(packed, 1, n, model.f) != n) || fflush(model.f) != 0 || fsync(fileno(model.f)) != 0;
    free(packed);
    if (bad) {
        int e = errno;
        lt_atomic_abort(&model);
        lt_atomic_abort(&data);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write the model: %s", out_path, strerror(e ? e : EIO));
    }
    s = lt_atomic_commit(&data, "the external data", err);
    if (s != LT_OK) {
        lt_atomic_abort(&model);
        return s;
    }
    return lt_atomic_commit(&model, "the model", err);
}
