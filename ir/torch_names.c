/* The source module's tensor names that torch's exporter records in the
 * graph signature (lt_model.torch_name, read by importer/torch_meta.c),
 * as split_merged.c and restore_bias.c look them up. */
#include "torch_names.h"
#include <string.h>

bool lt_torch_named(const lt_module *m, const char *name)
{
    for (int i = 0; i < m->ntorch; i++)
        if (!strcmp(m->torch_name[i], name))
            return true;
    return false;
}

const char *lt_torch_join(lt_module *m, const char *scope, const char *leaf)
{
    size_t ls = strlen(scope), ll = strlen(leaf);
    char *name = lt_ir_alloc(m, ls + ll + 2);
    if (!name)
        return NULL;
    if (ls) {
        memcpy(name, scope, ls);
        name[ls++] = '.';
    }
    memcpy(name + ls, leaf, ll + 1);
    return name;
}

bool lt_torch_is_param(const lt_module *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].name && !strcmp(m->params[p].name, name))
            return true;
    return false;
}

const char *lt_torch_missing_below(const lt_module *m, const char *scope, const char *leaf)
{
    size_t ls = strlen(scope), ll = strlen(leaf);
    const char *found = NULL;
    for (int i = 0; i < m->ntorch; i++) {
        const char *t = m->torch_name[i];
        size_t lt = strlen(t);
        if (lt <= ls + ll + 1 || (ls && (strncmp(t, scope, ls) != 0 || t[ls] != '.')) ||
            strcmp(t + lt - ll, leaf) != 0 || t[lt - ll - 1] != '.' || lt_torch_is_param(m, t))
            continue;
        if (found)
            return NULL;
        found = t;
    }
    return found;
}

static bool block_has(const lt_block *b, const char *name, int depth)
{
    for (int i = 0; i < b->nparams; i++)
        if (b->params[i] && b->params[i]->name && !strcmp(b->params[i]->name, name))
            return true;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] && n->out[k]->name && !strcmp(n->out[k]->name, name))
                return true;
        for (int r = 0; r < n->nregions && depth < 64; r++)
            if (n->regions[r] && block_has(n->regions[r], name, depth + 1))
                return true;
    }
    return false;
}

bool lt_torch_name_taken(const lt_module *m, const char *name)
{
    return lt_torch_is_param(m, name) || block_has(m->main, name, 0);
}

bool lt_torch_same_but_numbers(const char *a, const char *b)
{
    while (*a && *b) {
        bool da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
        if (da != db)
            return false;
        if (da) {
            while (*a >= '0' && *a <= '9')
                a++;
            while (*b >= '0' && *b <= '9')
                b++;
        } else if (*a++ != *b++) {
            return false;
        }
    }
    return !*a && !*b;
}

const char *lt_torch_slot_leaf(lt_op op, int slot)
{
    static const char *const bn[] = {NULL, "weight", "bias", "running_mean", "running_var"};
    switch (op) {
    case LT_OP_BATCH_NORMALIZATION:
        return slot < 5 ? bn[slot] : NULL;
    case LT_OP_CONV:
    case LT_OP_CONV_TRANSPOSE:
    case LT_OP_GEMM:
    case LT_OP_LAYER_NORMALIZATION:
    case LT_OP_GROUP_NORMALIZATION:
    case LT_OP_INSTANCE_NORMALIZATION:
    case LT_OP_RMS_NORMALIZATION:
        return slot == 1 ? "weight" : slot == 2 ? "bias" : NULL;
    default:
        return NULL;
    }
}

/* The number of leading arguments of a higher-order op's call that are
 * not its operands (a cond's predicate and branches, a while_loop's two
 * graphs, a scan's or map's body): the operands after them, flattened,
 * are the body graph's placeholders arg0_1, arg1_1, ... in order. -1 for
 * a call of anything else. */
static int hop_skip(const char *call)
{
    static const struct {
        const char *op;
        int skip;
    } hops[] = {{"cond", 3}, {"while_loop", 2}, {"scan", 1}, {"map_impl", 1}};
    static const char target[] = "target=torch.ops.higher_order.";
    const char *t = call ? strstr(call, target) : NULL;
    if (!t)
        return -1;
    t += sizeof target - 1;
    size_t len = strcspn(t, "]( ,");
    for (size_t i = 0; i < sizeof hops / sizeof *hops; i++)
        if (strlen(hops[i].op) == len && !strncmp(t, hops[i].op, len))
            return hops[i].skip;
    return -1;
}

/* Operand k of the higher-order op call (hop_skip): the text of the k-th
 * leaf of its arguments after the skipped ones, lists and tuples
 * flattened ("%p_ln_weight", or a literal), in *s and *len; false when the
 * call has fewer. */
static bool hop_operand(const char *call, long k, const char **s, size_t *len)
{
    int skip = hop_skip(call);
    const char *p = skip >= 0 ? strstr(call, "args = (") : NULL;
    if (!p)
        return false;
    p += strlen("args = (");
    int depth = 0, arg = 0;
    long leaf = 0;
    while (*p && depth >= 0) {
        if (*p == '(' || *p == '[') {
            depth++;
            p++;
        } else if (*p == ')' || *p == ']') {
            depth--;
            p++;
        } else if (*p == ',' || *p == ' ') {
            arg += *p == ',' && depth == 0;
            p++;
        } else {
            const char *e = p + strcspn(p, ",()[]");
            while (e > p && e[-1] == ' ')
                e--;
            if (arg >= skip && leaf++ == k) {
                *s = p;
                *len = (size_t)(e - p);
                return true;
            }
            p = e;
        }
    }
    return false;
}

/* The index K of a higher-order op body's placeholder argK_N, or -1. */
static long body_arg(const char *s, size_t len)
{
    size_t i = 3;
    long k = 0;
    if (len < 6 || strncmp(s, "arg", 3) != 0 || s[i] < '0' || s[i] > '9')
        return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9' && k < 1000000; i++)
        k = k * 10 + (s[i] - '0');
    if (i + 1 >= len || s[i] != '_')
        return -1;
    for (i++; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return -1;
    return k;
}

/* The signature name of the fx value s[0..len) as a node of block b reads
 * it: a placeholder of the exported program's, or (b a control-flow body)
 * a placeholder of the body's graph, which stands for that operand of the
 * higher-order op its If, Loop or Scan was made from, looked up in turn
 * where that node sits. NULL when neither names one. */
static const char *fx_value(const lt_module *m, const lt_block *b, const char *s, size_t len, int depth)
{
    for (int i = 0; i < m->ntorch; i++) {
        const char *ph = m->torch_placeholder[i];
        if (ph && !strncmp(ph, s, len) && !ph[len])
            return m->torch_name[i];
    }
    long k = b && b->owner && depth < 64 ? body_arg(s, len) : -1;
    const char *op;
    size_t ol;
    if (k < 0 || !hop_operand(b->owner->fx_call, k, &op, &ol) || ol < 2 || *op != '%')
        return NULL;
    return fx_value(m, b->owner->block, op + 1, ol - 1, depth + 1);
}

static int fx_tensors(const lt_module *m, const lt_block *b, const char *call, const char **out, int cap)
{
    int n = 0;
    for (const char *p = call ? strchr(call, '%') : NULL; p; p = strchr(p + 1, '%')) {
        const char *s = p + 1, *e = s;
        while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_')
            e++;
        const char *found = fx_value(m, b, s, (size_t)(e - s), 0);
        for (int j = 0; found && j < n && j < cap; j++)
            if (out[j] == found)
                found = NULL;
        if (found && n < cap)
            out[n++] = found;
    }
    return n;
}

static const char *fx_leaf(const lt_module *m, const lt_block *b, const char *call, const char *leaf)
{
    const char *fx[16], *found = NULL;
    int nf = fx_tensors(m, b, call, fx, 16);
    size_t ll = strlen(leaf);
    for (int i = 0; i < nf; i++) {
        size_t lf = strlen(fx[i]);
        if ((lf == ll || (lf > ll && fx[i][lf - ll - 1] == '.')) && !strcmp(fx[i] + lf - ll, leaf)) {
            if (found)
                return NULL; /* two of that leaf */
            found = fx[i];
        }
    }
    return found;
}

int lt_torch_fx_tensors(const lt_module *m, const char *call, const char **out, int cap)
{
    return fx_tensors(m, NULL, call, out, cap);
}

const char *lt_torch_fx_leaf(const lt_module *m, const char *call, const char *leaf)
{
    return fx_leaf(m, NULL, call, leaf);
}

int lt_torch_node_tensors(const lt_module *m, const lt_node *n, const char **out, int cap)
{
    return fx_tensors(m, n->block, n->fx_call, out, cap);
}

const char *lt_torch_node_leaf(const lt_module *m, const lt_node *n, const char *leaf)
{
    return fx_leaf(m, n->block, n->fx_call, leaf);
}

const char *lt_torch_node_path(lt_module *m, const lt_node *n)
{
    if (!n->name || !n->block || !n->block->owner)
        return n->name;
    const char *up = lt_torch_node_path(m, n->block->owner);
    const char *bn = n->block->name ? n->block->name : "";
    if (!up)
        return NULL;
    size_t lu = strlen(up), lb = strlen(bn), ln = strlen(n->name);
    char *path = lt_ir_alloc(m, lu + lb + ln + 3);
    if (path) {
        memcpy(path, up, lu);
        path[lu] = '/';
        memcpy(path + lu + 1, bn, lb);
        path[lu + 1 + lb] = '/';
        memcpy(path + lu + lb + 2, n->name, ln + 1);
    }
    return path;
}

const char *lt_torch_list_next(const char **at, size_t *len)
{
    const char *q = *at;
    while (*q == '[' || *q == ',' || *q == ' ')
        q++;
    if (*q != '\'' && *q != '"')
        return NULL;
    char quote = *q++;
    const char *s = q;
    while (*q && *q != quote && *q != '\\')
        q++;
    if (*q != quote)
        return NULL;
    *len = (size_t)(q - s);
    *at = q + 1;
    return s;
}

static bool in_list(const char *name, size_t len, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == len && !memcmp(*list, name, len))
            return true;
    return false;
}

lt_fold_kind lt_torch_fold_kind(const lt_module *m, const char *name, size_t len)
{
    /* aten operations that give each entry of their result the value of
     * one entry of a tensor input (or of a constant) */
    static const char *const copies[] = {
        "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze", "clone",
        "contiguous", "alias", "detach", "flatten", "unflatten", "cat", "concat", "stack", "getitem", "split",
        "split_with_sizes", "chunk", "unbind", "narrow", "slice", "select", "flip", "roll", "movedim", "view_as",
        "reshape_as", "diagonal", NULL};
    static const char *const expands[] = {"expand", "expand_as", "broadcast_to", "repeat", "tile",
                                          "repeat_interleave", NULL};
    static const char *const gathers[] = {"index", "_unsafe_index", "index_select", "gather", "embedding", "take",
                                          NULL};
    /* operations that make a constant from nothing the module holds */
    static const char *const makes[] = {
        "arange", "scalar_tensor", "scalar_tensor_default", "full", "full_like", "zeros", "zeros_like", "ones",
        "ones_like", "empty", "empty_like", "new_zeros", "new_ones", "new_full", "eye", "linspace",
        "lift_fresh_copy", NULL};
    for (int i = 0; i < m->ntorch; i++)
        if (strlen(m->torch_name[i]) == len && !memcmp(m->torch_name[i], name, len))
            return LT_FOLD_LEAF;
    static const char *const leaves[] = {"val_", "lifted_tensor_", "_tensor_constant", NULL};
    for (const char *const *l = leaves; *l; l++)
        if (len >= strlen(*l) && !memcmp(name, *l, strlen(*l)))
            return LT_FOLD_LEAF;
    size_t base = len;
    while (base > 0 && name[base - 1] >= '0' && name[base - 1] <= '9')
        base--;
    if (base > 1 && base < len && name[base - 1] == '_')
        base--; /* exp_1 is the second exp */
    else
        base = len;
    if (in_list(name, base, makes))
        return LT_FOLD_LEAF;
    if (in_list(name, base, copies))
        return LT_FOLD_COPY;
    if (in_list(name, base, expands))
        return LT_FOLD_EXPAND;
    if (in_list(name, base, gathers))
        return LT_FOLD_GATHER;
    return LT_FOLD_COMPUTE;
}
