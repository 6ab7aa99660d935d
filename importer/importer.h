/* Importer internals: ONNX protobuf structs to IR. */
#ifndef LT_IMPORTER_H
#define LT_IMPORTER_H

#include "../ir/ir.h"
#include "onnx.pb-c.h"

/* Where a tensor's bytes may come from, for external data. */
typedef struct lt_tp_ctx {
    const char *path;     /* model file, for messages */
    const char *base_dir; /* folder external data is relative to; NULL forbids external data */
    const char *what;     /* "initializer 'w'" etc., for messages */
} lt_tp_ctx;

/* Decodes a TensorProto into t (data malloc'ed, owned by the caller; free
 * with free(t->data)). Validates element counts against dims, overflow. */
lt_status lt_tensor_from_proto(const lt_tp_ctx *c, const Onnx__TensorProto *tp, lt_tensor *t, lt_err *err);
lt_status lt_tensor_from_sparse(const lt_tp_ctx *c, const Onnx__SparseTensorProto *sp, lt_tensor *t, lt_err *err);
/* TypeProto to IR type; interns symbolic dims in m. */
lt_status lt_type_from_proto(lt_module *m, const Onnx__TypeProto *tp, lt_type *t, const char *what, lt_err *err);
/* Reads a whole file (at most max bytes). */
lt_status lt_read_file(const char *path, size_t max, uint8_t **data, size_t *len, lt_err *err);

#define LT_MAX_MODEL_BYTES ((size_t)2 << 30)
#define LT_MAX_TENSOR_BYTES ((size_t)16 << 30)

/* The .npy header (importer/npy_header.c) */
/* Parses the .npy header at b[0..n) (what names it in messages): *t gets
 * dtype and shape (data left NULL), *off where the data starts; the data
 * size is checked against the shape. */
lt_status lt_npy_header(const char *what, const uint8_t *b, size_t n, lt_tensor *t, size_t *off, lt_err *err);

#endif
