/* External data on the way out (export_external.c). lt_model_export writes
 * the initializers of a model as ONNX external data when the model it read
 * had external data, or when the protobuf would not fit in 2 GiB: one data
 * file beside the output, named OUT + ".data" (out.onnx -> out.onnx.data,
 * the name torch.onnx.export gives it through onnxscript), its
 * "location" the bare file name (relative to the output's folder), each
 * tensor at an offset that is a multiple of 4096 (onnx.proto: offsets
 * SHOULD be multiples of the page size, for mmap) with "offset" and
 * "length" set. Initializers of 1024 bytes or more go there, smaller ones
 * stay inline (onnx's size_threshold default); any other tensor that was
 * external data (a sparse initializer's values and indices) is read and
 * written inline (onnx.load reads external data for initializers and
 * attribute tensors only), so the written model never refers to the
 * input's files. Both files are written atomically. The
 * command line uses the data-file name and the list of the files a model
 * reads to refuse outputs that would replace them. */
#ifndef LT_EXPORT_EXTERNAL_H
#define LT_EXPORT_EXTERNAL_H

#include "../include/lantern.h"
#include <stdbool.h>
#include <stddef.h>

#define LT_EXPORT_DATA_SUFFIX ".data"
#define LT_EXPORT_DATA_ALIGN 4096
#define LT_EXPORT_SIZE_THRESHOLD 1024
/* the largest protobuf written inline: protobuf's (and onnx's) 2 GiB - 1 */
#define LT_EXPORT_INLINE_MAX ((size_t)0x7fffffff)

/* out + LT_EXPORT_DATA_SUFFIX into buf; false when it does not fit. */
bool lt_export_data_path(const char *out, char *buf, size_t len);

/* The files the external data of the model at path lives in (its folder
 * joined with each distinct "location"), read from the protobuf's wire
 * format without unpacking it. *files (free with lt_export_free_files)
 * gets *n paths. A file that cannot be read lists none (loading it will
 * say why); false only when out of memory. */
bool lt_model_external_files(const char *path, char ***files, int *n);
void lt_export_free_files(char **files, int n);

/* The size past which a model without external data is written with it
 * (LT_EXPORT_INLINE_MAX); tests set a smaller one to reach that path
 * without gigabytes. 0 restores the default. */
void lt_export_set_inline_max(size_t bytes);
size_t lt_export_inline_max(void);

struct Onnx__ModelProto;
struct Onnx__TensorProto;
/* Whether any tensor of the model (initializers, sparse ones, attribute
 * tensors, functions', subgraphs' at any depth) is external data. */
bool lt_export_has_external(const struct Onnx__ModelProto *mp);
/* Moves the model's tensors to OUT's data file as the head comment says and
 * writes both files (the data file renamed into place first, both fsynced
 * before either rename). original: the model file read (its folder is where
 * remaining external data is read from). borrowed(ud, tp): whether tp's
 * raw_data belongs to someone else (it is detached, never freed). */
/* Tensor proto fields, shared by the exporter and the writer. */
/* Frees the typed value fields (float_data, int32_data, int64_data,
 * double_data, uint64_data). */
void lt_export_tp_clear_typed(struct Onnx__TensorProto *tp);
/* Frees the external_data entries; an EXTERNAL data_location is unset. */
void lt_export_tp_clear_external(struct Onnx__TensorProto *tp);
/* raw_data unset, its bytes left to the caller. */
void lt_export_tp_detach_raw(struct Onnx__TensorProto *tp);
/* raw (len bytes, now the message's) becomes tp's only data: the typed
 * fields and external data reference are cleared. The old raw_data is the
 * caller's to free (or keep) first. */
void lt_export_tp_set_raw(struct Onnx__TensorProto *tp, void *raw, size_t len);

lt_status lt_export_write_external(struct Onnx__ModelProto *mp, const char *original, const char *out_path,
                                   bool (*borrowed)(void *ud, const struct Onnx__TensorProto *tp), void *ud,
                                   lt_err *err);

#endif
