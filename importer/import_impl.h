/* Private interface of the ONNX importer (onnx_import.c, import_attr.c,
 * import_function.c, name_map.c, node_order.c, wire_depth.c): the state one
 * import carries, name tables and scopes, and the steps the files call in
 * one another. */
#ifndef LT_IMPORT_IMPL_H
#define LT_IMPORT_IMPL_H

#include "importer.h"
#include <stdbool.h>
#include <stdint.h>

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

typedef struct scope {
    struct scope *parent;
    namemap names;
} scope;

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

static inline const char *str_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* name tables (name_map.c): put returns false when out of memory */
bool lt_imp_map_put(namemap *mp, const char *k, lt_ival *v);
/* attributes (import_attr.c): the kind of an attribute (its type, or the
 * field set where old exporters omit the type); one converted into a, its
 * graph (if any) imported as region *region of n */
lt_attr_kind lt_imp_attr_kind(const Onnx__AttributeProto *ap);
lt_status lt_imp_convert_attr(imp *im, const Onnx__NodeProto *np, lt_node *n, const Onnx__AttributeProto *ap,
                              lt_attr *a, lt_block *b, scope *s, const opsets *ops, int *region);
/* a value defined under name in scope s (twice is an error naming np) */
lt_status lt_imp_define_value(imp *im, scope *s, lt_block *b, const char *name, lt_ival *v,
                              const Onnx__NodeProto *np);
/* model-local functions (import_function.c): the one np calls in domain,
 * and inlining a call to f in place of np */
/* importer/unknown_fields.c: a length-delimited unknown field's bytes
 * (false for another wire type or a bad length); the string field `tag` of
 * msg the schema does not name ("" when absent); a StringStringEntryProto's
 * key (1) and value (2) from its bytes (false when they do not parse) */
typedef struct lt_imp_span {
    const uint8_t *p;
    size_t len;
} lt_imp_span;
bool lt_imp_unknown_payload(const ProtobufCMessageUnknownField *u, const uint8_t **p, size_t *len);
void lt_imp_unknown_string(const ProtobufCMessage *msg, uint32_t tag, const uint8_t **p, size_t *len);
bool lt_imp_string_entry(const uint8_t *p, size_t len, lt_imp_span *key, lt_imp_span *value);
/* importer/torch_meta.c: the module path and rewrite rule of a node, and
 * the graph signature's parameter and buffer names, from torch's exporter's
 * metadata_props (nothing where the file has none) */
lt_status lt_imp_node_torch_meta(imp *im, const Onnx__NodeProto *np, lt_node *n);
lt_status lt_imp_torch_signature(imp *im, const Onnx__GraphProto *g);
const Onnx__FunctionProto *lt_imp_find_function(imp *im, const char *domain, const Onnx__NodeProto *np);
/* a graph imported into block b, its outer names resolved through outer */
lt_status lt_imp_graph(imp *im, scope *outer, const Onnx__GraphProto *g, lt_block *b, bool is_main,
                       const opsets *ops);
/* one node into b (inlined when it calls a model-local function) */
lt_status lt_imp_node(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const opsets *ops,
                      const fnctx *fc);
lt_status lt_imp_inline_function(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np,
                                 const Onnx__FunctionProto *f, const opsets *caller_ops);
/* the experimental ops before opset 10 (ImageScaler, Scale, Affine,
 * ScaledTanh, ParametricSoftplus, Crop) imported as the standard ops they
 * are made of (legacy_ops.c); *done false for any other op */
lt_status lt_imp_experimental(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const fnctx *fc,
                              bool *done);
void lt_imp_map_free(namemap *mp);
lt_ival *lt_imp_map_get(const namemap *mp, const char *k);
/* an error naming the file, the node and its op; fmt has one %s for detail */
/* Checks one opset import (who: "the model", "function 'f'") and records its
 * version in ops; a standard domain's opset newer than lantern knows is
 * refused. */
lt_status lt_imp_opset_import(imp *im, opsets *ops, const Onnx__OperatorSetIdProto *o, const char *who);
lt_status lt_imp_node_err(imp *im, const Onnx__NodeProto *np, lt_status st, const char *fmt, const char *detail);
/* the graph's node indices in dependency order (node_order.c) */
lt_status lt_imp_order_nodes(imp *im, const Onnx__GraphProto *g, int *order);
lt_ival *lt_imp_scope_lookup(const scope *s, const char *name);
/* how deep messages of type d nest in [p, end) (wire_depth.c) */
int lt_imp_wire_depth(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth);

#endif
