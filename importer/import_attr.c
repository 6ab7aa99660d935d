/* ONNX attributes to IR attributes: kinds checked against what each name
 * means across ops, graphs become regions. */
#include "import_impl.h"
#include "../ir/shape_elementwise.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
lt_attr_kind lt_imp_attr_kind(const Onnx__AttributeProto *ap)
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

/* Cast-1 names its target type as a string, the TensorProto.DataType
 * enum's name ("FLOAT", "DOUBLE", "INT64"); it becomes the number every
 * later Cast carries, so the kernels, inference and passes read one form. */
static lt_status cast_to_name(imp *im, const Onnx__NodeProto *np, const Onnx__AttributeProto *ap, lt_attr *a)
{
    char name[32];
    size_t len = ap->s.len < sizeof name - 1 ? ap->s.len : sizeof name - 1;
    if (len)
        memcpy(name, ap->s.data, len);
    name[len] = 0;
    lt_attr s = {.name = "to", .kind = LT_ATTR_STRING, .s = name, .slen = len};
    lt_node probe = {.op = LT_OP_CAST, .nattr = 1, .attrs = &s};
    lt_dtype to = len == ap->s.len && !memchr(name, 0, len) ? lt_cast_to_dtype(&probe) : LT_UNDEFINED;
    if (to == LT_UNDEFINED)
        return lt_imp_node_err(im, np, LT_ERR_INVALID,
                               "attribute 'to' names '%s', not a TensorProto data type (FLOAT, DOUBLE, INT64, ...)",
                               name);
    a->kind = LT_ATTR_INT;
    a->i = to;
    return LT_OK;
}

lt_status lt_imp_convert_attr(imp *im, const Onnx__NodeProto *np, lt_node *n, const Onnx__AttributeProto *ap,
                              lt_attr *a, lt_block *b, scope *s, const opsets *ops, int *region)
{
    lt_module *m = im->m;
    if (!ap->name || !*ap->name)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "an attribute has no name%s", NULL);
    a->name = lt_ir_strdup(m, ap->name);
    a->kind = lt_imp_attr_kind(ap);
    if (a->kind == LT_ATTR_UNDEFINED)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no type and no value", ap->name);
    if (n->op == LT_OP_CAST && a->kind == LT_ATTR_STRING && strcmp(a->name, "to") == 0)
        return cast_to_name(im, np, ap, a);
    for (size_t i = 0; i < sizeof fixed_kinds / sizeof fixed_kinds[0]; i++)
        if (strcmp(fixed_kinds[i].name, a->name) == 0 && fixed_kinds[i].except != n->op &&
            fixed_kinds[i].kind != a->kind)
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "attribute '%s' has the wrong kind", a->name);
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
                return lt_imp_node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no tensor", a->name);
            st = lt_tensor_from_proto(&c, ap->t, &t, im->err);
        } else {
            if (!ap->sparse_tensor)
                return lt_imp_node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no sparse tensor", a->name);
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
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "attribute '%s' has no graph", a->name);
        if (im->depth >= LT_MAX_NESTING)
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "subgraphs are nested deeper than %s levels", "64");
        lt_block *sub = lt_block_new(m, b, a->name);
        if (!sub)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        sub->owner = n;
        a->region = (*region)++;
        n->regions[a->region] = sub;
        im->depth++;
        lt_status st = lt_imp_graph(im, s, ap->g, sub, false, ops);
        im->depth--;
        if (st != LT_OK)
            return st;
        break;
    }
    case LT_ATTR_TYPE_PROTO:
        break; /* only SequenceEmpty-style dtype hints; kernels read "dtype" ints */
    default:
        return lt_imp_node_err(im, np, LT_ERR_UNSUPPORTED, "attribute '%s' has a kind lantern does not support", a->name);
    }
    return LT_OK;
}
