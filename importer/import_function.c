/* Model-local functions: finding the one a node calls (domain, name and
 * IR 10's overload), bounding what inlining would create, and inlining. */
#include "import_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model-local function (domain, name, overload) names. */
const Onnx__FunctionProto *lt_imp_find_function(imp *im, const char *domain, const Onnx__NodeProto *np)
{
    const uint8_t *want, *have;
    size_t nwant, nhave;
    lt_imp_unknown_string(&np->base, 8, &want, &nwant);
    for (size_t i = 0; i < im->mp->n_functions; i++) {
        const Onnx__FunctionProto *f = im->mp->functions[i];
        if (!f->name || strcmp(f->name, np->op_type) != 0 || strcmp(f->domain ? f->domain : "", domain) != 0)
            continue;
        lt_imp_unknown_string(&f->base, 13, &have, &nhave);
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
    return lt_imp_find_function(im, domain, np);
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

/* Inlines a model-local function: its body sees only its own inputs. */
lt_status lt_imp_inline_function(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np,
                                 const Onnx__FunctionProto *f, const opsets *caller_ops)
{
    if (im->depth >= LT_MAX_NESTING)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "functions call each other deeper than %s levels", "64");
    opsets fops = *caller_ops;
    char who[300];
    snprintf(who, sizeof who, "function '%s'", str_or(f->name, "<unnamed>"));
    for (size_t i = 0; i < f->n_opset_import; i++) {
        lt_status os = lt_imp_opset_import(im, &fops, f->opset_import[i], who);
        if (os != LT_OK)
            return os;
    }
    scope fs = {0};
    lt_status st = LT_OK;
    if (np->n_input > f->n_input)
        st = lt_imp_node_err(im, np, LT_ERR_INVALID, "more inputs than function '%s' takes", f->name);
    for (size_t i = 0; i < f->n_input && st == LT_OK; i++) {
        if (!f->input[i] || !*f->input[i])
            continue;
        lt_ival *v = NULL;
        if (i < np->n_input && np->input[i] && *np->input[i]) {
            v = lt_imp_scope_lookup(s, np->input[i]);
            if (!v)
                st = lt_imp_node_err(im, np, LT_ERR_INVALID, "input '%s' is not defined", np->input[i]);
        }
        if (v && !lt_imp_map_put(&fs.names, f->input[i], v))
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/", str_or(np->name, f->name));
    fnctx fc = {np, prefix};
    if (st == LT_OK && !im->in_function) { /* calls inside are counted with this one */
        im->inlined += function_size(im, f, 0);
        if (im->inlined > LT_MAX_INLINED_NODES)
            st = lt_imp_node_err(im, np, LT_ERR_INVALID, "functions expand to more than %s nodes", "1048576");
    }
    im->depth++;
    im->in_function++;
    for (size_t i = 0; i < f->n_node && st == LT_OK; i++) {
        if (!f->node[i])
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: function '%s' has an empty node", im->path, f->name);
        else
            st = lt_imp_node(im, &fs, b, f->node[i], &fops, &fc);
    }
    im->in_function--;
    im->depth--;
    for (size_t i = 0; i < np->n_output && st == LT_OK; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        lt_ival *v = i < f->n_output && f->output[i] ? lt_imp_map_get(&fs.names, f->output[i]) : NULL;
        if (!v) {
            st = lt_imp_node_err(im, np, LT_ERR_INVALID, "function output %s is never defined", f->name);
            break;
        }
        st = lt_imp_define_value(im, s, b, np->output[i], v, np);
    }
    lt_imp_map_free(&fs.names);
    return st;
}
