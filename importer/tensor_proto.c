/* TensorProto, SparseTensorProto and TypeProto decoding. Nothing from the
 * file is trusted: dims, element counts and byte lengths are checked with
 * overflow-safe arithmetic before any copy; external data must stay inside
 * the model's folder and inside its file. */
#include "importer.h"
#include "open_read.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

lt_status lt_read_file(const char *path, size_t max, uint8_t **data, size_t *len, lt_err *err)
{
    struct stat st;
    FILE *f = lt_fopen_read(path, &st, err);
    if (!f)
        return LT_ERR_IO;
    if ((uint64_t)st.st_size > max) {
        fclose(f);
        return lt_errf(err, LT_ERR_INVALID, "%s: file is %lld bytes, more than the %zu lantern accepts", path,
                       (long long)st.st_size, max);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
    }
    if (n && fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        return lt_errf(err, LT_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    *data = buf;
    *len = n;
    return LT_OK;
}

/* ONNX element types by their TensorProto.DataType names (IR versions 9-14
 * added those from 17 on), so a refusal of one lantern cannot hold yet
 * (float6e2m3, float6e3m2) says which it is. */
static const char *onnx_elem_name(int64_t t, char *buf, size_t len)
{
    static const char *const later[] = {
        "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", /* 17-20, IR 9 */
        "uint4", "int4",                                                  /* 21-22, IR 10 */
        "float4e2m1",                                                     /* 23, IR 11 */
        "float8e8m0",                                                     /* 24, IR 12 */
        "uint2", "int2",                                                  /* 25-26, IR 13 */
        "float6e2m3", "float6e3m2",                                       /* 27-28, IR 14 */
    };
    if (t > 0 && t < LT_DTYPE_COUNT)
        return lt_dtype_name((lt_dtype)t);
    if (t >= 17 && t < 17 + (int64_t)(sizeof later / sizeof *later))
        return later[t - 17];
    snprintf(buf, len, "%lld", (long long)t);
    return buf;
}

/* lantern densifies sparse tensors. Above this size the dense form may be at
 * most 1024 times the stored values and indices: a few bytes of file must
 * not stand for gigabytes. */
#define LT_SPARSE_FREE_BYTES ((size_t)64 << 20)

static lt_status shape_from_dims(const lt_tp_ctx *c, size_t n_dims, const int64_t *dims, lt_tensor *t,
                                 size_t *bytes, lt_err *err)
{
    if (n_dims > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has rank %zu, more than lantern's %d", c->path, c->what,
                       n_dims, LT_MAX_RANK);
    size_t es = lt_dtype_size(t->dtype);
    char nb[24];
    if (es == 0)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has element type %s, which lantern does not support",
                       c->path, c->what, onnx_elem_name(t->dtype, nb, sizeof nb));
    t->rank = (int)n_dims;
    int64_t numel = 1;
    for (size_t i = 0; i < n_dims; i++) {
        if (dims[i] < 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: %s has negative dim %lld", c->path, c->what,
                           (long long)dims[i]);
        if (__builtin_mul_overflow(numel, dims[i], &numel))
            return lt_errf(err, LT_ERR_INVALID, "%s: %s: element count overflows", c->path, c->what);
        t->dims[i] = dims[i];
    }
    if (__builtin_mul_overflow((size_t)numel, es, bytes) || *bytes > LT_MAX_TENSOR_BYTES)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: %lld elements are too many bytes", c->path, c->what,
                       (long long)numel);
    t->numel = numel;
    return LT_OK;
}

/* An absolute location, or one with a path component that is "..", leaves
 * the folder whatever the folder holds; ".." inside a name ("a..b.bin")
 * does not. Links are caught after realpath(). */
static bool leaves_folder(const char *loc)
{
    if (loc[0] == '/')
        return true;
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        p += *p == '/';
    }
    return false;
}

/* Allocates t->data only once the file is known to hold the bytes. */
static lt_status read_external(const lt_tp_ctx *c, const Onnx__TensorProto *tp, lt_tensor *t, size_t bytes,
                               lt_err *err)
{
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value)
            continue;
        char *end;
        if (strcmp(e->key, "location") == 0) {
            loc = e->value;
        } else if (strcmp(e->key, "offset") == 0) {
            errno = 0;
            offset = strtoll(e->value, &end, 10);
            if (errno || *end || offset < 0)
                return lt_errf(err, LT_ERR_INVALID, "%s: %s: bad external data offset '%s'", c->path, c->what,
                               e->value);
        } else if (strcmp(e->key, "length") == 0) {
            errno = 0;
            length = strtoll(e->value, &end, 10);
            if (errno || *end || length < 0)
                return lt_errf(err, LT_ERR_INVALID, "%s: %s: bad external data length '%s'", c->path, c->what,
                               e->value);
        }
    }
    if (!loc || !*loc)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data without a location", c->path, c->what);
    if (!c->base_dir)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data is not allowed here", c->path, c->what);
    if (leaves_folder(loc))
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data location '%s' leaves the model's folder",
                       c->path, c->what, loc);
    if (length >= 0 && (size_t)length != bytes)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data length %lld, but the tensor needs %zu bytes",
                       c->path, c->what, (long long)length, bytes);
    char full[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(full, sizeof full, "%s/%s", c->base_dir, loc) >= (int)sizeof full)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data path too long", c->path, c->what);
    if (!realpath(c->base_dir, real_dir) || !realpath(full, real_file))
        return lt_errf(err, LT_ERR_IO, "%s: %s: cannot open external data '%s'", c->path, c->what, loc);
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) != 0 || (real_file[dl] != '/' && real_dir[dl - 1] != '/'))
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: external data '%s' resolves outside the model's folder",
                       c->path, c->what, loc);
    struct stat st;
    lt_err oe;
    FILE *f = lt_fopen_read(real_file, &st, &oe);
    if (!f)
        return lt_errf(err, LT_ERR_IO, "%s: %s: external data: %s", c->path, c->what, oe.msg);
    lt_status s = LT_OK;
    if ((uint64_t)offset > (uint64_t)st.st_size || (uint64_t)st.st_size - (uint64_t)offset < bytes)
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s: external data '%s' ends before offset %lld + %zu bytes", c->path,
                    c->what, loc, (long long)offset, bytes);
    else if (!(t->data = malloc(bytes ? bytes : 1)))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: %s: out of memory for %zu bytes", c->path, c->what, bytes);
    else if (fseeko(f, offset, SEEK_SET) != 0 || (bytes && fread(t->data, 1, bytes, f) != bytes))
        s = lt_errf(err, LT_ERR_IO, "%s: %s: short read from external data '%s'", c->path, c->what, loc);
    fclose(f);
    return s;
}

/* Typed fields: which repeated field holds which element type. */
static size_t typed_count(const Onnx__TensorProto *tp, lt_dtype dt)
{
    switch (dt) {
    case LT_F32: return tp->n_float_data;
    case LT_C64: return tp->n_float_data / 2;
    case LT_F64: return tp->n_double_data;
    case LT_C128: return tp->n_double_data / 2;
    case LT_I64: return tp->n_int64_data;
    case LT_U32: case LT_U64: return tp->n_uint64_data;
    case LT_STRING: return tp->n_string_data;
    default: return tp->n_int32_data;
    }
}

/* how many typed values n elements take: one int32 holds two 4-bit or four
 * 2-bit elements */
static size_t typed_need(lt_dtype dt, int64_t n)
{
    return lt_dtype_bits(dt) < 8 ? lt_dtype_packed_bytes(dt, n) : (size_t)n;
}

/* Copies the typed field into t->data; typed_count() was checked. */
static lt_status from_typed(const lt_tp_ctx *c, const Onnx__TensorProto *tp, lt_tensor *t, lt_err *err)
{
    int64_t n = t->numel;
    for (int64_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case LT_F32: ((float *)t->data)[i] = tp->float_data[i]; break;
        case LT_C64: ((float *)t->data)[2 * i] = tp->float_data[2 * i];
                     ((float *)t->data)[2 * i + 1] = tp->float_data[2 * i + 1]; break;
        case LT_F64: ((double *)t->data)[i] = tp->double_data[i]; break;
        case LT_C128: ((double *)t->data)[2 * i] = tp->double_data[2 * i];
                      ((double *)t->data)[2 * i + 1] = tp->double_data[2 * i + 1]; break;
        case LT_I64: ((int64_t *)t->data)[i] = tp->int64_data[i]; break;
        case LT_U32: ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i]; break;
        case LT_U64: ((uint64_t *)t->data)[i] = tp->uint64_data[i]; break;
        case LT_F16: case LT_BF16: case LT_U16: ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i]; break;
        case LT_I16: ((int16_t *)t->data)[i] = (int16_t)tp->int32_data[i]; break;
        case LT_I8: ((int8_t *)t->data)[i] = (int8_t)tp->int32_data[i]; break;
        case LT_U8: ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i]; break;
        case LT_BOOL: ((uint8_t *)t->data)[i] = tp->int32_data[i] != 0; break;
        case LT_I32: ((int32_t *)t->data)[i] = tp->int32_data[i]; break;
        case LT_F8E4M3FN: case LT_F8E4M3FNUZ: case LT_F8E5M2: case LT_F8E5M2FNUZ: case LT_F8E8M0:
            ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i]; /* the 8-bit code */
            break;
        case LT_STRING:
            /* lantern's strings end at their first NUL */
            if (tp->string_data[i].len && memchr(tp->string_data[i].data, 0, tp->string_data[i].len))
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: string %lld holds a NUL byte", c->path, c->what,
                               (long long)i);
            if (!(((const char **)t->data)[i] = lt_str_intern(
                      tp->string_data[i].len ? (const char *)tp->string_data[i].data : "", tp->string_data[i].len)))
                return lt_errf(err, LT_ERR_NOMEM, "out of memory");
            break;
        default: return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: element type %s", c->path, c->what,
                                lt_dtype_name(t->dtype));
        }
    }
    return LT_OK;
}

/* 4- and 2-bit elements from their packed bytes (int32_data holds one
 * packed byte in each value's low bits) to one per byte */
static lt_status unpack_narrow(const lt_tp_ctx *c, const Onnx__TensorProto *tp, lt_tensor *t, const uint8_t *packed,
                               lt_err *err)
{
    size_t np = lt_dtype_packed_bytes(t->dtype, t->numel);
    uint8_t *from_typed = NULL, *out = malloc(t->numel ? (size_t)t->numel : 1);
    if (!packed) {
        if ((from_typed = malloc(np ? np : 1)))
            for (size_t i = 0; i < np; i++)
                from_typed[i] = (uint8_t)tp->int32_data[i];
        packed = from_typed;
    }
    if (!out || !packed) {
        free(out);
        free(from_typed);
        return lt_errf(err, LT_ERR_NOMEM, "%s: %s: out of memory for %lld elements", c->path, c->what,
                       (long long)t->numel);
    }
    lt_narrow_unpack(t->dtype, packed, t->numel, out);
    free(from_typed);
    free(t->data);
    t->data = out;
    return LT_OK;
}

lt_status lt_tensor_from_proto(const lt_tp_ctx *c, const Onnx__TensorProto *tp, lt_tensor *t, lt_err *err)
{
    memset(t, 0, sizeof *t);
    char nb[24];
    if (!tp->has_data_type || tp->data_type <= 0 || tp->data_type >= LT_DTYPE_COUNT)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has element type %s, which lantern does not support",
                       c->path, c->what, onnx_elem_name(tp->has_data_type ? tp->data_type : 0, nb, sizeof nb));
    if (tp->segment)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s is segmented", c->path, c->what);
    t->dtype = (lt_dtype)tp->data_type;
    size_t bytes;
    lt_status s = shape_from_dims(c, tp->n_dims, tp->dims, t, &bytes, err);
    if (s != LT_OK)
        return s;
    bool packed = lt_dtype_bits(t->dtype) < 8;
    size_t fbytes = packed ? lt_dtype_packed_bytes(t->dtype, t->numel) : bytes; /* as stored in the file */
    /* the data must be there before anything is allocated: a few bytes of
     * file can declare a tensor of gigabytes */
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (t->dtype == LT_STRING && (external || (tp->has_raw_data && tp->raw_data.len)))
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s: string tensors keep their data in string_data", c->path, c->what);
    else if (external) {
        s = read_external(c, tp, t, fbytes, err);
        if (s == LT_OK && packed)
            s = unpack_narrow(c, tp, t, t->data, err);
    } else if (tp->has_raw_data && tp->raw_data.len != fbytes)
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s: raw_data has %zu bytes, its dims need %zu", c->path, c->what,
                    tp->raw_data.len, fbytes);
    else if (!tp->has_raw_data && typed_count(tp, t->dtype) != typed_need(t->dtype, t->numel))
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s holds %zu values but its dims need %zu", c->path, c->what,
                    typed_count(tp, t->dtype), typed_need(t->dtype, t->numel));
    else if (packed)
        s = unpack_narrow(c, tp, t, tp->has_raw_data ? tp->raw_data.data : NULL, err);
    else if (!(t->data = malloc(bytes ? bytes : 1)))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: %s: out of memory for %zu bytes", c->path, c->what, bytes);
    else if (tp->has_raw_data) {
        if (bytes)
            memcpy(t->data, tp->raw_data.data, bytes); /* little-endian host */
        if (t->dtype == LT_BOOL)
            for (int64_t i = 0; i < t->numel; i++)
                ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    } else {
        s = from_typed(c, tp, t, err);
    }
    if (s != LT_OK) {
        free(t->data);
        t->data = NULL;
    }
    return s;
}

lt_status lt_tensor_from_sparse(const lt_tp_ctx *c, const Onnx__SparseTensorProto *sp, lt_tensor *t, lt_err *err)
{
    memset(t, 0, sizeof *t);
    if (!sp->values || !sp->indices)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: sparse tensor without values or indices", c->path, c->what);
    lt_tensor vals, idx;
    lt_status s = lt_tensor_from_proto(c, sp->values, &vals, err);
    if (s != LT_OK)
        return s;
    s = lt_tensor_from_proto(c, sp->indices, &idx, err);
    if (s != LT_OK) {
        free(vals.data);
        return s;
    }
    t->dtype = vals.dtype;
    size_t bytes;
    if (t->dtype == LT_F8E8M0) { /* it has no zero for the implicit values */
        free(vals.data);
        free(idx.data);
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: a sparse float8e8m0 tensor (the type has no zero)", c->path,
                       c->what);
    }
    if (t->dtype == LT_STRING) { /* the implicit zeros would be NULL strings */
        free(vals.data);
        free(idx.data);
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: sparse string tensors are not supported", c->path, c->what);
    }
    s = shape_from_dims(c, sp->n_dims, sp->dims, t, &bytes, err);
    int64_t nnz = vals.rank == 1 ? vals.dims[0] : -1;
    if (s == LT_OK && (nnz < 0 || idx.dtype != LT_I64))
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s: sparse values must be 1-D and indices int64", c->path, c->what);
    bool coo = idx.rank == 2;
    if (s == LT_OK && !((idx.rank == 1 && idx.dims[0] == nnz) || (coo && idx.dims[0] == nnz && idx.dims[1] == t->rank)))
        s = lt_errf(err, LT_ERR_INVALID, "%s: %s: sparse indices have the wrong shape", c->path, c->what);
    size_t stored = (size_t)vals.numel * lt_dtype_size(vals.dtype) + (size_t)idx.numel * sizeof(int64_t);
    if (s == LT_OK && bytes > LT_SPARSE_FREE_BYTES && bytes / 1024 > stored)
        s = lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: %zu dense bytes from %zu stored is more expansion than lantern allows",
                    c->path, c->what, bytes, stored);
    if (s == LT_OK && !(t->data = calloc(1, bytes ? bytes : 1)))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: %s: out of memory", c->path, c->what);
    size_t es = lt_dtype_size(t->dtype);
    for (int64_t k = 0; s == LT_OK && k < nnz; k++) {
        int64_t lin = 0;
        const int64_t *ix = idx.data;
        if (coo) {
            for (int d = 0; d < t->rank; d++) {
                int64_t v = ix[k * t->rank + d];
                if (v < 0 || v >= t->dims[d]) {
                    lin = -1;
                    break;
                }
                lin = lin * t->dims[d] + v;
            }
        } else {
            lin = ix[k];
        }
        if (lin < 0 || lin >= t->numel) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: %s: sparse index %lld out of range", c->path, c->what,
                        (long long)k);
            break;
        }
        memcpy((char *)t->data + (size_t)lin * es, (char *)vals.data + (size_t)k * es, es);
    }
    free(vals.data);
    free(idx.data);
    if (s != LT_OK) {
        free(t->data);
        t->data = NULL;
    }
    return s;
}

lt_status lt_type_from_proto(lt_module *m, const Onnx__TypeProto *tp, lt_type *t, const char *what, lt_err *err)
{
    lt_type_unknown(t, LT_UNDEFINED, -1);
    if (!tp)
        return LT_OK;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: {
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        if (tt->has_elem_type) {
            char nb[24];
            if (tt->elem_type < 0 || tt->elem_type >= LT_DTYPE_COUNT)
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has element type %s, which lantern does not support",
                               m->path, what, onnx_elem_name(tt->elem_type, nb, sizeof nb));
            t->dtype = (lt_dtype)tt->elem_type;
        }
        if (!tt->shape)
            return LT_OK;
        if (tt->shape->n_dim > LT_MAX_RANK)
            return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has rank %zu, more than lantern's %d", m->path, what,
                           tt->shape->n_dim, LT_MAX_RANK);
        t->rank = (int)tt->shape->n_dim;
        for (int i = 0; i < t->rank; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                if (d->dim_value < 0)
                    return lt_errf(err, LT_ERR_INVALID, "%s: %s has negative dim %lld", m->path, what,
                                   (long long)d->dim_value);
                t->dims[i].v = d->dim_value;
            } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                       *d->dim_param) {
                t->dims[i].sym = lt_module_sym(m, d->dim_param);
                if (t->dims[i].sym < 0)
                    return lt_errf(err, LT_ERR_NOMEM, "out of memory");
            }
        }
        return LT_OK;
    }
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: {
        lt_type inner;
        lt_status s = lt_type_from_proto(m, tp->sequence_type->elem_type, &inner, what, err);
        if (s != LT_OK)
            return s;
        t->kind = LT_KIND_SEQUENCE;
        t->dtype = inner.dtype;
        return LT_OK;
    }
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
        lt_type inner;
        lt_status s = lt_type_from_proto(m, tp->optional_type->elem_type, &inner, what, err);
        if (s != LT_OK)
            return s;
        *t = inner;
        t->kind = LT_KIND_OPTIONAL;
        t->inner = inner.kind == LT_KIND_SEQUENCE ? LT_KIND_SEQUENCE : LT_KIND_TENSOR;
        return LT_OK;
    }
    case ONNX__TYPE_PROTO__VALUE__NOT_SET:
        /* the schema lantern is built with (IR 8) lacks TypeProto.opaque_type (7) */
        for (unsigned i = 0; i < tp->base.n_unknown_fields; i++)
            if (tp->base.unknown_fields[i].tag == 7)
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s has an opaque type, which lantern does not support",
                               m->path, what);
        return LT_OK;
    default:
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: map and sparse tensor types are not supported", m->path,
                       what);
    }
}
