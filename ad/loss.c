/* The loss the transform seeds: a named output, or one appended from a
 * loss spec (softmax cross-entropy, NLL, MSE, ...) over an output and the
 * targets, reduced to a scalar. */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

/* A node appended to the source program's main block; its one output is
 * returned (NULL when out of memory). */
static lt_ival *loss_node(lt_module *m, lt_op op, const char *name, int nin, lt_ival *a, lt_ival *b)
{
    if (!a || (nin == 2 && !b))
        return NULL; /* an earlier node could not be made */
    lt_node *n = lt_node_new(m, m->main, op, nin, 1);
    if (!n)
        return NULL;
    n->opset = LT_AD_OPSET;
    n->name = name;
    n->in[0] = a;
    if (nin == 2)
        n->in[1] = b;
    if (op == LT_OP_REDUCE_SUM || op == LT_OP_REDUCE_MEAN) {
        lt_node_set_attrs(m, n, 1);
        n->attrs[0] = (lt_attr){.name = "keepdims", .kind = LT_ATTR_INT, .i = 0};
    }
    n->out[0] = lt_ival_new(m, m->main, name);
    if (!n->out[0])
        return NULL;
    n->out[0]->def = n;
    return n->out[0];
}

/* A Constant int64 vector of n values named name (a shape for Reshape). */
static lt_ival *shape_const(lt_module *m, const char *name, int64_t n, const int64_t *vals)
{
    lt_node *c = lt_node_new(m, m->main, LT_OP_CONSTANT, 0, 1);
    lt_tensor *t = c ? lt_ir_alloc(m, sizeof *t) : NULL;
    int64_t *v = t ? lt_ir_alloc(m, sizeof *v * (size_t)(n ? n : 1)) : NULL;
    if (!v)
        return NULL;
    memset(t, 0, sizeof *t);
    if (n)
        memcpy(v, vals, sizeof *v * (size_t)n);
    t->dtype = LT_I64;
    t->rank = 1;
    t->dims[0] = n;
    t->numel = n;
    t->data = v;
    c->opset = LT_AD_OPSET;
    lt_node_set_attrs(m, c, 1);
    c->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    c->out[0] = lt_ival_new(m, m->main, name);
    if (!c->out[0])
        return NULL;
    c->out[0]->def = c;
    return c->out[0];
}

/* y reshaped to a scalar: the run fails with a clear message unless y has
 * exactly one element. */
static lt_ival *as_scalar(lt_module *m, lt_ival *y)
{
    return loss_node(m, LT_OP_RESHAPE, "loss_scalar", 2, y, shape_const(m, "loss_shape", 0, NULL));
}

/* A new program input typed like y (targets) or int64 class indices of y
 * without its class dim (labels: the last, or axis 1 where class_axis is 1). */
static lt_ival *loss_input(lt_module *m, const char *name, const lt_ival *y, bool classes, int class_axis)
{
    lt_ival *v = lt_ival_new(m, m->main, name);
    if (!v)
        return NULL;
    if (!classes) {
        v->type = y->type;
        return v;
    }
    int r = y->type.rank, skip = class_axis == 1 && r >= 2 ? 1 : r - 1;
    lt_type_unknown(&v->type, LT_I64, r >= 1 ? r - 1 : -1);
    for (int d = 0, k = 0; d < r; d++)
        if (d != skip)
            v->type.dims[k++] = y->type.dims[d];
    return v;
}

static bool dim_fits(const lt_dim *d, int64_t v) { return v < 0 || d->sym >= 0 || d->v < 0 || d->v == v; }

int lt_ad_class_axes_fit(const lt_type *t, int rank, const int64_t *dims)
{
    int r = t->rank;
    if (r < 2 || rank != r - 1)
        return 0;
    int fit = 0;
    for (int skip = r - 1, bit = 1; bit <= 2; skip = 1, bit <<= 1) {
        bool ok = true;
        for (int d = 0, k = 0; d < r && ok; d++)
            if (d != skip)
                ok = dim_fits(&t->dims[d], dims[k++]);
        fit |= ok ? bit : 0;
    }
    return fit;
}

/* A Constant int64 [-1]: the shape that flattens a tensor. */
static lt_ival *flat_shape(lt_module *m) { return shape_const(m, "loss_flat_shape", 1, (const int64_t[]){-1}); }

/* Whether every dim of y past the batch axis is a known number. */
static bool known_per_sample(const lt_ival *y)
{
    if (y->type.rank < 1)
        return false;
    for (int d = 1; d < y->type.rank; d++)
        if (y->type.dims[d].sym >= 0 || y->type.dims[d].v < 0)
            return false;
    return true;
}

/* The float targets of MSE and BCE as the loss compares them with y. Where
 * y's dims are all known the feed gives them in y's shape (train_feed.c
 * refuses data of another size). Otherwise (a Loop's output, a shape
 * computed from data) the input takes any shape and is reshaped to y's as
 * computed: a run whose targets hold another number of elements fails in
 * node LT_AD_TARGETS_NODE (which the trainer names the data for), where a
 * broadcast in the loss would have compared [N, 1] targets with every
 * column of an [N, C] output without a word. */
static lt_ival *float_targets(lt_module *m, lt_ival *y, lt_ival **in)
{
    *in = loss_input(m, "targets", y, false, 0);
    if (!*in || known_per_sample(y))
        return *in;
    lt_type_unknown(&(*in)->type, y->type.dtype, -1);
    lt_ival *t = loss_node(m, LT_OP_RESHAPE, LT_AD_TARGETS_NODE, 2, *in,
                           loss_node(m, LT_OP_SHAPE, "loss_output_shape", 1, y, NULL));
    if (t)
        t->type = y->type;
    return t;
}

/* Class scores [d0, ..., C] (classes last, as per-token outputs have them)
 * as rows [d0 * ..., C], and their labels [d0, ...] as one axis: the loss
 * ops' mean over the labels not ignored is the same, and each row's
 * classes stay contiguous (a transpose to [d0, C, d1, ...] cost two copies
 * of the scores and a strided softmax); rank 2 stays as it is. */
static lt_ival *classes_as_rows(lt_module *m, lt_ival *y, lt_ival **labels)
{
    int r = y->type.rank;
    if (r <= 2)
        return y;
    lt_ival *f = loss_node(m, LT_OP_FLATTEN, "loss_class_rows", 1, y, NULL);
    if (!f || lt_node_set_attrs(m, f->def, 1) != LT_OK)
        return NULL;
    f->def->attrs[0] = (lt_attr){.name = "axis", .kind = LT_ATTR_INT, .i = r - 1};
    *labels = loss_node(m, LT_OP_RESHAPE, "loss_label_rows", 2, *labels, flat_shape(m));
    return *labels ? f : NULL;
}

/* The sum of output * seed over the seeded outputs. */
static lt_status seeded_loss(lt_module *m, const lt_ad_spec *spec, lt_ival **loss, int *nextra, lt_ival **extra,
                             lt_err *err)
{
    lt_block *b = m->main;
    lt_ival *acc = NULL;
    for (int s = 0; s < spec->nseeds; s++) {
        lt_ival *out = NULL;
        for (int r = 0; r < b->nresults; r++)
            if (strcmp(b->results[r]->name, spec->seed_outputs[s]) == 0)
                out = b->results[r];
        if (!out)
            return lt_errf(err, LT_ERR_INVALID, "%s: --seed names '%s', which is not an output", m->path,
                           spec->seed_outputs[s]);
        char nm[300];
        snprintf(nm, sizeof nm, "%s_seed", out->name);
        lt_ival *seed = loss_input(m, nm, out, false, 0);
        /* named for what it multiplies, so a seed of another shape is named
         * where the run refuses it */
        char prod[620];
        snprintf(prod, sizeof prod, "%s * %s", nm, out->name);
        const char *prod_name = lt_ir_strdup(m, prod);
        if (!seed || !prod_name)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        lt_ival *sum = loss_node(m, LT_OP_REDUCE_SUM, "seeded_sum", 1, loss_node(m, LT_OP_MUL, prod_name, 2, out, seed), NULL);
        if (acc)
            sum = loss_node(m, LT_OP_ADD, "seeded_total", 2, acc, sum);
        if (!sum)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        extra[(*nextra)++] = seed;
        acc = sum;
    }
    if (!acc)
        return lt_errf(err, LT_ERR_INVALID, "%s: no --seed given", m->path);
    *loss = acc;
    return LT_OK;
}

/* Appends the loss to the source program: the transform then differentiates
 * it like any other node. */
lt_status lt_ad_append_loss(lt_module *m, const lt_ad_spec *spec, lt_ival **loss, int *nextra, lt_ival **extra,
                             lt_err *err)
{
    lt_block *b = m->main;
    *nextra = 0;
    if (b->nresults < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output to differentiate", m->path);
    if (spec->loss == LT_AD_LOSS_SEEDS)
        return seeded_loss(m, spec, loss, nextra, extra, err);
    lt_ival *y = b->results[0];
    if (spec->output) {
        y = NULL;
        for (int r = 0; r < b->nresults && !y; r++)
            if (strcmp(b->results[r]->name, spec->output) == 0)
                y = b->results[r];
        if (!y)
            return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output named '%s'", m->path, spec->output);
    }
    if (y->type.kind != LT_KIND_TENSOR || (y->type.dtype != LT_UNDEFINED && !lt_dtype_is_float(y->type.dtype))) {
        /* name a float output the loss could read instead */
        const char *other = NULL;
        for (int r = 0; r < b->nresults && !other; r++)
            if (b->results[r]->type.kind == LT_KIND_TENSOR && lt_dtype_is_float(b->results[r]->type.dtype))
                other = b->results[r]->name;
        return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' is not a float tensor; a loss needs one%s%s%s", m->path,
                       y->name, other ? " (--output " : "", other ? other : "", other ? " reads a float output)" : "");
    }
    lt_ival *L = NULL, *in = NULL;
    switch (spec->loss) {
    case LT_AD_LOSS_SUM:
    case LT_AD_LOSS_MODEL:
        if (spec->loss == LT_AD_LOSS_MODEL) {
            bool known = y->type.rank >= 0;
            int64_t numel = 1;
            const char *sym = NULL;
            for (int d = 0; d < y->type.rank; d++) {
                known = known && y->type.dims[d].sym < 0 && y->type.dims[d].v >= 0;
                numel *= known ? y->type.dims[d].v : 1;
                if (y->type.dims[d].sym >= 0 && !sym)
                    sym = y->type.dims[d].sym < m->nsyms ? m->syms[y->type.dims[d].sym] : "?";
            }
            if (known && numel != 1)
                return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' has %lld elements; --loss model needs the output "
                               "to be the scalar loss", m->path, y->name, (long long)numel);
            /* an axis named like a batch (one loss a sample, reduction='none') */
            if (sym)
                return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' has an axis of size %s; --loss model needs the "
                               "output to be the scalar loss (reduce it in the model, e.g. reduction='mean')", m->path,
                               y->name, sym);
        }
        L = loss_node(m, LT_OP_REDUCE_SUM, "loss", 1, spec->loss == LT_AD_LOSS_MODEL ? as_scalar(m, y) : y, NULL);
        break;
    case LT_AD_LOSS_MEAN:
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, y, NULL);
        break;
    case LT_AD_LOSS_SCE:
    case LT_AD_LOSS_NLL:
        /* scores with extra axes ([N, T, C]: per token, per node) against
         * labels of those axes ([N, T]); the mean runs over the labels that
         * are not ignore_index, as PyTorch's */
        /* classes on axis 1 ([N, C, d1, ...]) are the loss ops' own layout */
        in = loss_input(m, "labels", y, true, spec->class_axis);
        {
            lt_ival *rows_labels = in, *rows = !in ? NULL : spec->class_axis == 1 ? y : classes_as_rows(m, y, &rows_labels);
            L = loss_node(m, spec->loss == LT_AD_LOSS_SCE ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS
                                                          : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS,
                          "loss", 2, rows, rows_labels);
        }
        if (L && lt_node_set_attrs(m, L->def, 1) == LT_OK)
            L->def->attrs[0] = (lt_attr){.name = "ignore_index", .kind = LT_ATTR_INT, .i = spec->ignore_index};
        else
            L = NULL;
        break;
    case LT_AD_LOSS_MSE: {
        lt_ival *d = loss_node(m, LT_OP_SUB, "mse_diff", 2, y, float_targets(m, y, &in));
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, loss_node(m, LT_OP_MUL, "mse_sq", 2, d, d), NULL);
        break;
    }
    case LT_AD_LOSS_BCE_LOGITS: {
        /* max(z, 0) - z t + log(1 + exp(-|z|)): no overflow for any z */
        lt_ival *tg = float_targets(m, y, &in);
        lt_ival *z_abs = loss_node(m, LT_OP_ABS, "bce_abs", 1, y, NULL);
        lt_ival *sp = loss_node(m, LT_OP_SOFTPLUS, "bce_softplus", 1, loss_node(m, LT_OP_NEG, "bce_neg", 1, z_abs, NULL), NULL);
        lt_ival *lin = loss_node(m, LT_OP_SUB, "bce_lin", 2, loss_node(m, LT_OP_RELU, "bce_relu", 1, y, NULL),
                                 loss_node(m, LT_OP_MUL, "bce_zt", 2, y, tg));
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, loss_node(m, LT_OP_ADD, "bce_terms", 2, lin, sp), NULL);
        break;
    }
    case LT_AD_LOSS_SEEDS:
        break;
    }
    if (!L)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (in)
        extra[(*nextra)++] = in;
    *loss = L;
    return LT_OK;
}
