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

bool lt_torch_name_taken(const lt_module *m, const char *name)
{
    if (lt_torch_is_param(m, name))
        return true;
    const lt_block *b = m->main;
    for (int i = 0; i < b->nparams; i++)
        if (b->params[i]->name && !strcmp(b->params[i]->name, name))
            return true;
    for (int i = 0; i < b->nnodes; i++)
        for (int k = 0; k < b->nodes[i]->nout; k++)
            if (b->nodes[i]->out[k] && b->nodes[i]->out[k]->name && !strcmp(b->nodes[i]->out[k]->name, name))
                return true;
    return false;
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

int lt_torch_fx_tensors(const lt_module *m, const char *call, const char **out, int cap)
{
    int n = 0;
    for (const char *p = call ? strchr(call, '%') : NULL; p; p = strchr(p + 1, '%')) {
        const char *s = p + 1, *e = s;
        while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_')
            e++;
        size_t len = (size_t)(e - s);
        const char *found = NULL;
        for (int i = 0; i < m->ntorch && !found; i++) {
            const char *ph = m->torch_placeholder[i];
            if (ph && !strncmp(ph, s, len) && !ph[len])
                found = m->torch_name[i];
        }
        for (int j = 0; found && j < n && j < cap; j++)
            if (out[j] == found)
                found = NULL;
        if (found && n < cap)
            out[n++] = found;
    }
    return n;
}

const char *lt_torch_fx_leaf(const lt_module *m, const char *call, const char *leaf)
{
    const char *fx[16], *found = NULL;
    int nf = lt_torch_fx_tensors(m, call, fx, 16);
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
