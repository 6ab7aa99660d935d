/* A parameter torch's dynamo optimizer computed into an initializer
 * through elementwise operations it can invert: CLIP's logit_scale.exp()
 * folded into `exp`, Mamba's -torch.exp(A_log) into `neg`. PyTorch trains
 * the parameter through the operations; trained in its place, the
 * initializer would follow another parameterisation (its steps scaled by
 * exp's slope). Where the optimizer's record (folded_from) names one
 * parameter the file lacks and at most one such operation (its names come
 * sorted, so the order of two could not be told) besides the
 * initializer's own (the last applied, whose name it bears), that
 * parameter comes back under its name, holding the inverse of the
 * initializer's values, and the initializer's readers read the
 * operations applied to it: it trains as PyTorch trains it. The
 * initializer is no longer trained; lt_ir_refresh_tied writes it from the
 * parameter again (computed_from, compute_ops). Other computed folds keep
 * fold_param and fold_op, which training refuses (ir/gathered_table.c). */
#include "torch_names.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    lt_op op;
} inv_op;

static const inv_op inverted[] = {{"exp", LT_OP_EXP},         {"neg", LT_OP_NEG},   {"sigmoid", LT_OP_SIGMOID},
                                  {"reciprocal", LT_OP_RECIPROCAL}, {"sqrt", LT_OP_SQRT}, {"tanh", LT_OP_TANH},
                                  {"softplus", LT_OP_SOFTPLUS}};
enum { NINV = sizeof inverted / sizeof *inverted, MAX_CHAIN = 2 };

/* The operation an fx node's name stands for (exp_1 is the second exp);
 * NULL when it is none of the invertible ones */
static const inv_op *op_named(const char *name, size_t len)
{
    size_t base = len;
    while (base > 0 && name[base - 1] >= '0' && name[base - 1] <= '9')
        base--;
    if (base > 1 && base < len && name[base - 1] == '_')
        len = base - 1;
    for (int i = 0; i < NINV; i++)
        if (strlen(inverted[i].name) == len && !memcmp(inverted[i].name, name, len))
            return &inverted[i];
    return NULL;
}

static double forward(lt_op op, double v)
{
    switch (op) {
    case LT_OP_EXP: return exp(v);
    case LT_OP_NEG: return -v;
    case LT_OP_SIGMOID: return 1 / (1 + exp(-v));
    case LT_OP_RECIPROCAL: return 1 / v;
    case LT_OP_SQRT: return sqrt(v);
    case LT_OP_TANH: return tanh(v);
    default: return v > 20 ? v : log1p(exp(v)); /* softplus, as PyTorch's threshold */
    }
}

/* the inverse; NAN where v is outside the operation's range */
static double inverse(lt_op op, double v)
{
    switch (op) {
    case LT_OP_EXP: return v > 0 ? log(v) : NAN;
    case LT_OP_NEG: return -v;
    case LT_OP_SIGMOID: return v > 0 && v < 1 ? log(v / (1 - v)) : NAN;
    case LT_OP_RECIPROCAL: return v != 0 ? 1 / v : NAN;
    case LT_OP_SQRT: return v >= 0 ? v * v : NAN;
    case LT_OP_TANH: return v > -1 && v < 1 ? atanh(v) : NAN;
    default: return v > 20 ? v : v > 0 ? log(expm1(v)) : NAN;
    }
}

/* p's chain of operations (in the order applied) and the one parameter it
 * was computed from, where the record shows nothing else */
static bool read_chain(const lt_module *m, const lt_param *p, lt_op *chain, int *n, const char **param)
{
    const char *at = p->folded_from, *el;
    size_t len;
    *n = 0;
    *param = NULL;
    while ((el = lt_torch_list_next(&at, &len))) {
        const char *tn = NULL;
        for (int t = 0; t < m->ntorch && !tn; t++)
            if (strlen(m->torch_name[t]) == len && !memcmp(m->torch_name[t], el, len))
                tn = m->torch_name[t];
        if (tn) {
            for (int t = 0; t < m->ntorch; t++)
                if (m->torch_name[t] == tn && m->torch_buffer[t])
                    return false;
            if (*param || lt_torch_is_param(m, tn))
                return false; /* two sources, or one the file holds */
            *param = tn;
            continue;
        }
        /* the record lists its names sorted, not in the order applied:
         * one operation besides p's own is all an order can be read for */
        const inv_op *o = op_named(el, len);
        if (!o || *n == 1)
            return false;
        chain[(*n)++] = o->op;
    }
    const inv_op *own = op_named(p->name, strlen(p->name));
    if (own)
        chain[(*n)++] = own->op;
    else if (lt_torch_fold_kind(m, p->name, strlen(p->name)) != LT_FOLD_LEAF)
        return false;
    return *param && *n > 0;
}

/* the parameter's values: the chain undone, entry by entry, where each
 * comes back to within float rounding */
static bool invert_values(const lt_tensor *t, const lt_op *chain, int n, lt_tensor *out)
{
    *out = *t;
    out->data = malloc(lt_tensor_nbytes(t) ? lt_tensor_nbytes(t) : 1);
    if (!out->data)
        return false;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = lt_tensor_get_f64(t, i), x = v;
        for (int k = n - 1; k >= 0; k--)
            x = inverse(chain[k], x);
        double back = x;
        for (int k = 0; k < n; k++)
            back = forward(chain[k], back);
        if (!isfinite(x) || !(fabs(back - v) <= 1e-5 * fabs(v) + 1e-30)) {
            free(out->data);
            out->data = NULL;
            return false;
        }
        lt_tensor_set_f64(out, i, x);
    }
    return true;
}

static lt_status unfold(lt_module *m, int p, const lt_op *chain, int n, const char *param, lt_tensor values)
{
    int q = lt_module_new_param(m, param, values, true);
    if (q < 0)
        return LT_ERR_NOMEM;
    lt_param *xp = &m->params[p];
    lt_ival *cur = m->params[q].value;
    char *ops = lt_ir_alloc(m, (size_t)n * 12 + 1);
    if (!ops)
        return LT_ERR_NOMEM;
    ops[0] = 0;
    for (int k = 0; k < n; k++) {
        lt_node *o = lt_node_new(m, m->main, chain[k], 1, 1);
        if (!o || lt_node_set_attrs(m, o, 0) != LT_OK)
            return LT_ERR_NOMEM;
        o->opset = 13;
        o->name = lt_ir_strdup(m, xp->name);
        o->in[0] = cur;
        cur->uses++;
        lt_ival *out = lt_ival_new(m, m->main, xp->name);
        if (!out || !o->name)
            return LT_ERR_NOMEM;
        out->def = o;
        out->param = -1;
        out->type = xp->value->type;
        o->out[0] = out;
        lt_block_place_at(m->main, o, k);
        cur = out;
        strcat(ops, k ? "," : "");
        strcat(ops, lt_op_names[chain[k]]);
    }
    lt_module_replace_reads(m, xp->value, cur);
    xp->trainable = false;
    xp->computed_from = m->params[q].name;
    xp->compute_ops = ops;
    xp->fold_param = xp->fold_op = NULL;
    return LT_OK;
}

lt_status lt_ir_unfold_computed(lt_module *m, int *nfound, lt_err *err)
{
    *nfound = 0;
    int np = m->ntorch ? m->nparams : 0;
    for (int p = 0; p < np; p++) {
        lt_param *xp = &m->params[p];
        lt_op chain[MAX_CHAIN];
        int n;
        const char *param;
        if (!xp->fold_op || !xp->fold_param || !xp->folded_from || !xp->trainable ||
            (xp->data.dtype != LT_F32 && xp->data.dtype != LT_F64) || !read_chain(m, xp, chain, &n, &param))
            continue;
        /* one initializer in its place: two would train apart */
        bool alone = true;
        for (int o = 0; o < m->nparams && alone; o++)
            alone = o == p || !m->params[o].fold_param || strcmp(m->params[o].fold_param, param) != 0;
        lt_tensor values;
        if (!alone || !invert_values(&xp->data, chain, n, &values))
            continue;
        if (unfold(m, p, chain, n, param, values) != LT_OK)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        ++*nfound;
    }
    return LT_OK;
}

void lt_ir_refresh_computed(lt_module *m, lt_param *cp)
{
    if (!cp->computed_from || !cp->compute_ops)
        return;
    const lt_tensor *s = NULL;
    for (int a = 0; a < m->nparams && !s; a++)
        if (!strcmp(m->params[a].name, cp->computed_from))
            s = &m->params[a].data;
    if (!s || s->numel != cp->data.numel)
        return;
    lt_op chain[MAX_CHAIN];
    int n = 0;
    for (const char *at = cp->compute_ops; *at && n < MAX_CHAIN;) {
        size_t len = strcspn(at, ",");
        for (int op = 0; op < LT_OP_COUNT; op++)
            if (strlen(lt_op_names[op]) == len && !memcmp(lt_op_names[op], at, len))
                chain[n++] = (lt_op)op;
        at += len + (at[len] == ',');
    }
    for (int64_t i = 0; i < s->numel; i++) {
        double v = lt_tensor_get_f64(s, i);
        for (int k = 0; k < n; k++)
            v = forward(chain[k], v);
        lt_tensor_set_f64(&cp->data, i, v);
    }
}
