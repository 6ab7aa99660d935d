/* Tensor files: NumPy .npy (read and write) and ONNX .pb files holding a
 * TensorProto, SequenceProto or OptionalProto (the ONNX test-data layout).
 * SequenceProto and OptionalProto live in onnx-data.proto, which Debian does
 * not ship, so their few fields are decoded here from the wire format. */
#include "../importer/importer.h"
#include "../importer/atomic_file.h"
#include "runtime.h"
#include <stdlib.h>
#include <string.h>

/* ---- .npy ---- */
static const struct {
    const char *descr;
    lt_dtype t;
} npy_types[] = {
    {"<f4", LT_F32}, {"<f8", LT_F64}, {"<f2", LT_F16}, {"|i1", LT_I8},  {"|u1", LT_U8},  {"<i2", LT_I16},
    {"<u2", LT_U16}, {"<i4", LT_I32}, {"<u4", LT_U32}, {"<i8", LT_I64}, {"<u8", LT_U64}, {"|b1", LT_BOOL},
    {"<c8", LT_C64}, {"<c16", LT_C128},
};

/* The header is the one parser the npz reader uses (runtime/dataset_npy.c):
 * a dict literal, not a string searched for substrings. */
static lt_status npy_parse(const char *path, const uint8_t *d, size_t n, lt_value **out, lt_err *err)
{
    lt_tensor hdr;
    size_t off;
    lt_status st = lt_npy_header(path, d, n, &hdr, &off, err);
    if (st != LT_OK)
        return st;
    lt_dtype dt = hdr.dtype;
    int rank = hdr.rank;
    const int64_t *dims = hdr.dims;
    size_t bytes = n - off;
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_tensor_alloc(&v->t, dt, rank, dims, err);
    if (s != LT_OK) {
        free(v);
        return s;
    }
    if (bytes)
        memcpy(v->t.data, d + off, bytes);
    *out = v;
    return LT_OK;
}

static lt_status save_npy(const lt_tensor *t, const char *path, lt_err *err);

/* NumPy has no 4- or 2-bit integers and no bfloat16, float8 or float4:
 * int4 and int2 are written as int8, uint4 and uint2 as uint8 (their bytes
 * in memory already are), bfloat16 and the narrow floats as float32 values
 * (each one exact). */
lt_status lt_value_save_npy(const lt_value *v, const char *path, lt_err *err)
{
    if (!v || !path)
        return lt_errf(err, LT_ERR_INVALID, "lt_value_save_npy: %s is NULL", !v ? "the value" : "path");
    const lt_tensor *t = lt_value_tensor(v);
    if (!t)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: only tensors can be written as .npy", path);
    if (lt_dtype_is_narrow_int(t->dtype)) {
        lt_tensor w = *t;
        w.dtype = t->dtype == LT_I4 || t->dtype == LT_I2 ? LT_I8 : LT_U8;
        return save_npy(&w, path, err);
    }
    if (!lt_dtype_is_narrow_float(t->dtype) && t->dtype != LT_BF16)
        return save_npy(t, path, err);
    lt_tensor w = *t;
    w.dtype = LT_F32;
    w.data = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (!w.data)
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    for (int64_t i = 0; i < t->numel; i++)
        ((float *)w.data)[i] = (float)lt_tensor_get_f64(t, i);
    lt_status s = save_npy(&w, path, err);
    free(w.data);
    return s;
}

static lt_status save_npy(const lt_tensor *t, const char *path, lt_err *err)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].t == t->dtype)
            descr = npy_types[i].descr;
    if (!descr)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: element type %s has no .npy form", path,
                       lt_dtype_name(t->dtype));
    char hdr[512], shape[256] = "";
    for (int i = 0; i < t->rank; i++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s", (long long)t->dims[i],
                 i + 1 < t->rank ? " " : "");
    if (t->rank > 1)
        shape[strlen(shape) - 1] = 0; /* numpy writes (2, 3) but (4,) */
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    /* a fresh temp file renamed over path: a planted link at either name is
     * never written through */
    lt_atomic_file a;
    lt_status s = lt_atomic_open(&a, path, err);
    if (s != LT_OK)
        return s;
    FILE *f = a.f;
    uint16_t hl = (uint16_t)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    size_t bytes = lt_tensor_nbytes(t);
    if (bytes && fwrite(t->data, 1, bytes, f) != bytes) {
        lt_atomic_abort(&a);
        return lt_errf(err, LT_ERR_IO, "%s: write failed", path);
    }
    return lt_atomic_commit(&a, "the array", err);
}

/* ---- .pb ---- */
static lt_status tensor_value(const char *path, const uint8_t *d, size_t n, lt_value **out, lt_err *err)
{
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, n, d);
    if (!tp)
        return lt_errf(err, LT_ERR_INVALID, "%s: not an ONNX TensorProto", path);
    lt_tp_ctx c = {path, NULL, "tensor"};
    lt_tensor t;
    lt_status s = lt_tensor_from_proto(&c, tp, &t, err);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (s != LT_OK)
        return s;
    s = lt_value_from_tensor(&t, out, err);
    free(t.data);
    return s;
}

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

/* Walks the top-level fields; calls back for length-delimited field 3
 * (tensor values) and reports field 2 (elem_type). Other nested kinds
 * (sequences of sequences, maps) are refused. */
static lt_status container_value(const char *path, const uint8_t *d, size_t n, bool is_seq, lt_value **out,
                                 lt_err *err)
{
    const uint8_t *p = d, *end = d + n;
    lt_value *v = is_seq ? lt_value_new_seq(LT_UNDEFINED) : lt_value_new_none();
    if (!v)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status s = LT_OK;
    while (p < end && s == LT_OK) {
        uint64_t key, len;
        if (!varint(&p, end, &key)) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: corrupt protobuf", path);
            break;
        }
        unsigned field = (unsigned)(key >> 3), wt = key & 7;
        if (wt == 0) {
            uint64_t x;
            if (!varint(&p, end, &x))
                s = lt_errf(err, LT_ERR_INVALID, "%s: corrupt protobuf", path);
            else if (field == 2 && x != 0 && x != 1 && !(x == 3 && !is_seq))
                s = lt_errf(err, LT_ERR_UNSUPPORTED, "%s: only sequences/optionals of tensors are supported", path);
        } else if (wt == 2) {
            if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) {
                s = lt_errf(err, LT_ERR_INVALID, "%s: corrupt protobuf", path);
                break;
            }
            if (field == 3) {
                lt_value *t;
                s = tensor_value(path, p, (size_t)len, &t, err);
                if (s == LT_OK) {
                    if (is_seq) {
                        s = lt_seq_append(v, &t->t, err);
                        lt_value_free(t);
                    } else {
                        lt_value_free(v);
                        v = t;
                    }
                }
            } else if (field == 5 && !is_seq) {
                lt_value *sq;
                s = container_value(path, p, (size_t)len, true, &sq, err);
                if (s == LT_OK) {
                    lt_value_free(v);
                    v = sq;
                }
            } else if (field >= 4) {
                s = lt_errf(err, LT_ERR_UNSUPPORTED, "%s: only sequences/optionals of tensors are supported", path);
            }
            p += len;
        } else if ((wt == 5 && end - p >= 4) || (wt == 1 && end - p >= 8)) {
            p += wt == 5 ? 4 : 8;
        } else {
            s = lt_errf(err, LT_ERR_INVALID, "%s: corrupt protobuf", path);
        }
    }
    if (s != LT_OK) {
        lt_value_free(v);
        return s;
    }
    *out = v;
    return LT_OK;
}

lt_status lt_value_load_as(const char *path, lt_value_kind kind, lt_value **out, lt_err *err)
{
    uint8_t *d;
    size_t n;
    if (!path || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_value_load: %s is NULL", !path ? "path" : "out");
    *out = NULL;
    lt_status s = lt_read_file(path, LT_MAX_MODEL_BYTES, &d, &n, err);
    if (s != LT_OK)
        return s;
    size_t pl = strlen(path);
    if (pl >= 4 && strcmp(path + pl - 4, ".npy") == 0)
        s = npy_parse(path, d, n, out, err);
    else if (kind == LT_VALUE_TENSOR)
        s = tensor_value(path, d, n, out, err);
    else
        s = container_value(path, d, n, kind == LT_VALUE_SEQUENCE, out, err);
    free(d);
    return s;
}

lt_status lt_value_load(const char *path, lt_value **out, lt_err *err)
{
    return lt_value_load_as(path, LT_VALUE_TENSOR, out, err);
}

static lt_value_kind kind_of(const lt_type *t)
{
    return t->kind == LT_KIND_SEQUENCE ? LT_VALUE_SEQUENCE
           : t->kind == LT_KIND_OPTIONAL ? LT_VALUE_OPTIONAL
                                         : LT_VALUE_TENSOR;
}

/* an index out of range gives -1 (no kind), as lt_model_param gives NULL */
lt_value_kind lt_model_input_kind(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_inputs(m) ? kind_of(&m->main->params[i]->type) : (lt_value_kind)-1;
}
lt_value_kind lt_model_output_kind(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_outputs(m) ? kind_of(&m->main->results[i]->type) : (lt_value_kind)-1;
}

void lt_model_input_shape(const lt_model *m, int i, int *rank, int64_t *dims)
{
    if (i < 0 || i >= lt_model_num_inputs(m)) {
        if (rank)
            *rank = -1;
        return;
    }
    const lt_type *t = &m->main->params[i]->type;
    *rank = t->kind == LT_KIND_TENSOR ? t->rank : -1;
    for (int d = 0; d < *rank; d++)
        dims[d] = t->dims[d].sym < 0 ? t->dims[d].v : -1;
}
