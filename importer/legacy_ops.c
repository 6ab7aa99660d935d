/* The experimental ops of ONNX before opset 10 that model-zoo files still
 * carry (ImageScaler at the head of Tiny YOLOv2, Crop, Scale, ScaledTanh,
 * Affine, ParametricSoftplus), imported as the standard ops they are made
 * of, so that they run, differentiate and train like any other:
 *   ImageScaler  y = scale * x + bias[c]       Mul, Add of bias as [C, 1, 1]
 *   Scale        y = scale * x                 Mul
 *   Affine       y = alpha * x + beta          Mul, Add
 *   ScaledTanh   y = alpha * tanh(beta * x)    Mul, Tanh, Mul
 *   ParametricSoftplus
 *                y = alpha * ln(exp(beta * x) + 1)   Mul, Softplus, Mul
 *   Crop         x[:, :, top : H - bottom, left : W - right] (border =
 *                [left, top, right, bottom]), or with scale = [h, w]
 *                x[:, :, top : top + h, left : left + w]: a Slice
 * as onnxruntime's contrib kernels define them (defaults: scale 1, Affine's
 * alpha 1 and beta 0; ScaledTanh's and ParametricSoftplus's alpha and beta
 * have none and must be given). Each constant is a float Constant taken to
 * x's type by CastLike (x's type is not known yet while nodes import). The
 * file is not touched: export writes back initializers only. */
#include "import_impl.h"
#include <stdio.h>
#include <string.h>

typedef struct lower {
    imp *im;
    lt_block *b;
    const Onnx__NodeProto *np;
    const fnctx *fc;
    const char *out; /* the output's name, with a function body's prefix */
    int nmade;
} lower;

static const Onnx__AttributeProto *find(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; np && i < np->n_attribute; i++)
        if (np->attribute[i] && np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0)
            return np->attribute[i];
    return NULL;
}

/* the node's attribute of that name; in a function body, one that refers
 * to the caller's attribute is the caller's (absent where it sets none) */
static const Onnx__AttributeProto *attr_of(const lower *L, const char *name)
{
    const Onnx__AttributeProto *a = find(L->np, name);
    if (a && a->ref_attr_name && *a->ref_attr_name)
        a = L->fc ? find(L->fc->caller, a->ref_attr_name) : NULL;
    return a;
}

/* a FLOAT attribute's value into *v (dflt when absent; required: absent is
 * an error); LT_OK or the error */
static lt_status attr_float(lower *L, const char *name, bool required, float dflt, float *v)
{
    const Onnx__AttributeProto *a = attr_of(L, name);
    *v = dflt;
    if (!a)
        return required ? lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "needs the float attribute '%s'", name)
                        : LT_OK;
    if (lt_imp_attr_kind(a) != LT_ATTR_FLOAT)
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "attribute '%s' has the wrong kind", name);
    *v = a->f;
    return LT_OK;
}

/* a node of op reading a (and b2 when given) at the end of the block, its
 * one output named after the node's output and what it is */
static lt_ival *emit(lower *L, lt_op op, int opset, lt_ival *a, lt_ival *b2, const char *what)
{
    lt_module *m = L->im->m;
    lt_node *n = lt_node_new(m, L->b, op, a ? (b2 ? 2 : 1) : 0, 1);
    if (!n)
        return NULL;
    n->opset = opset;
    n->name = lt_ir_strdup(m, str_or(L->np->name, ""));
    n->domain_name = "";
    if (a) {
        n->in[0] = a;
        a->uses++;
    }
    if (b2) {
        n->in[1] = b2;
        b2->uses++;
    }
    char nm[512];
    if (what)
        snprintf(nm, sizeof nm, "%s/%s.%d", L->out, what, L->nmade++);
    else
        snprintf(nm, sizeof nm, "%s", L->out);
    lt_ival *v = lt_ival_new(m, L->b, nm);
    if (!v)
        return NULL;
    v->def = n;
    n->out[0] = v;
    return v;
}

/* the float values vals of shape dims as x's type: CastLike(Constant, x) */
static lt_ival *konst(lower *L, lt_ival *x, int rank, const int64_t *dims, const float *vals)
{
    lt_module *m = L->im->m;
    lt_ival *c = emit(L, LT_OP_CONSTANT, 13, NULL, NULL, "value");
    if (!c)
        return NULL;
    lt_node *n = c->def;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel *= dims[i];
    lt_tensor *t = lt_ir_alloc(m, sizeof *t);
    float *d = t ? lt_ir_alloc(m, sizeof *d * (size_t)(numel ? numel : 1)) : NULL;
    if (!d || lt_node_set_attrs(m, n, 1) != LT_OK)
        return NULL;
    memcpy(d, vals, sizeof *d * (size_t)numel);
    *t = (lt_tensor){.dtype = LT_F32, .rank = rank, .numel = numel, .data = d};
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    n->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    return emit(L, LT_OP_CAST_LIKE, 15, c, x, "as_x");
}

static lt_ival *scalar(lower *L, lt_ival *x, float v) { return konst(L, x, 0, NULL, &v); }

/* op(a, scalar v) */
static lt_ival *with(lower *L, lt_op op, lt_ival *a, lt_ival *x, float v, const char *what)
{
    lt_ival *k = scalar(L, x, v);
    return k ? emit(L, op, 13, a, k, what) : NULL;
}

static lt_status crop(lower *L, lt_ival *x)
{
    const Onnx__AttributeProto *border = attr_of(L, "border"), *scale = attr_of(L, "scale");
    if (!border || lt_imp_attr_kind(border) != LT_ATTR_INTS || border->n_ints != 4)
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID,
                               "needs border = [left, top, right, bottom], four ints%s", NULL);
    if (scale && (lt_imp_attr_kind(scale) != LT_ATTR_INTS || scale->n_ints != 2))
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "scale must be [height, width], two ints%s", NULL);
    const int64_t *bd = border->ints;
    for (int i = 0; i < 4; i++)
        if (bd[i] < 0 || bd[i] > (int64_t)1 << 40)
            return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "border holds a negative or implausible value%s",
                                   NULL);
    if (scale && (scale->ints[0] < 0 || scale->ints[1] < 0 || scale->ints[0] > (int64_t)1 << 40 ||
                  scale->ints[1] > (int64_t)1 << 40))
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "scale holds a negative or implausible value%s", NULL);
    lt_module *m = L->im->m;
    int64_t *starts = lt_ir_alloc(m, 2 * sizeof *starts), *ends = lt_ir_alloc(m, 2 * sizeof *ends),
            *axes = lt_ir_alloc(m, 2 * sizeof *axes);
    if (!starts || !ends || !axes)
        return lt_errf(L->im->err, LT_ERR_NOMEM, "out of memory");
    starts[0] = bd[1];
    starts[1] = bd[0];
    if (scale) {
        ends[0] = bd[1] + scale->ints[0];
        ends[1] = bd[0] + scale->ints[1];
    } else { /* H - bottom, W - right: counted from the end */
        ends[0] = bd[3] ? -bd[3] : INT64_MAX;
        ends[1] = bd[2] ? -bd[2] : INT64_MAX;
    }
    axes[0] = 2;
    axes[1] = 3;
    lt_ival *y = emit(L, LT_OP_SLICE, 1, x, NULL, NULL);
    if (!y || lt_node_set_attrs(m, y->def, 3) != LT_OK)
        return lt_errf(L->im->err, LT_ERR_NOMEM, "out of memory");
    y->def->attrs[0] = (lt_attr){.name = "starts", .kind = LT_ATTR_INTS, .n = 2, .ints = starts};
    y->def->attrs[1] = (lt_attr){.name = "ends", .kind = LT_ATTR_INTS, .n = 2, .ints = ends};
    y->def->attrs[2] = (lt_attr){.name = "axes", .kind = LT_ATTR_INTS, .n = 2, .ints = axes};
    return LT_OK;
}

static lt_status image_scaler(lower *L, lt_ival *x)
{
    float scale;
    lt_status st = attr_float(L, "scale", false, 1.0f, &scale);
    if (st != LT_OK)
        return st;
    const Onnx__AttributeProto *bias = attr_of(L, "bias");
    if (bias && lt_imp_attr_kind(bias) != LT_ATTR_FLOATS)
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "attribute 'bias' has the wrong kind%s", NULL);
    if (bias && bias->n_floats > 4096)
        return lt_imp_node_err(L->im, L->np, LT_ERR_INVALID, "bias has implausibly many channels%s", NULL);
    bool biased = bias && bias->n_floats > 0;
    lt_ival *y = with(L, LT_OP_MUL, x, x, scale, biased ? "scaled" : NULL);
    if (y && biased) {
        int64_t dims[3] = {(int64_t)bias->n_floats, 1, 1};
        lt_ival *b = konst(L, x, 3, dims, bias->floats);
        y = b ? emit(L, LT_OP_ADD, 13, y, b, NULL) : NULL;
    }
    return y ? LT_OK : lt_errf(L->im->err, LT_ERR_NOMEM, "out of memory");
}

/* alpha * f(beta * x) for f Tanh or Softplus */
static lt_status outer_inner(lower *L, lt_ival *x, lt_op f)
{
    float alpha, beta;
    lt_status st = attr_float(L, "alpha", true, 0, &alpha);
    if (st == LT_OK)
        st = attr_float(L, "beta", true, 0, &beta);
    if (st != LT_OK)
        return st;
    lt_ival *y = with(L, LT_OP_MUL, x, x, beta, "beta_x");
    y = y ? emit(L, f, 13, y, NULL, "f") : NULL;
    y = y ? with(L, LT_OP_MUL, y, x, alpha, NULL) : NULL;
    return y ? LT_OK : lt_errf(L->im->err, LT_ERR_NOMEM, "out of memory");
}

lt_status lt_imp_experimental(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const fnctx *fc,
                              bool *done)
{
    static const char *const ops[] = {"ImageScaler", "Scale", "Affine", "ScaledTanh", "ParametricSoftplus", "Crop"};
    int which = -1;
    for (int i = 0; i < (int)(sizeof ops / sizeof *ops); i++)
        if (strcmp(np->op_type, ops[i]) == 0)
            which = i;
    *done = which >= 0;
    if (which < 0)
        return LT_OK;
    if (np->n_input != 1 || !np->input[0] || !*np->input[0] || np->n_output != 1 || !np->output[0] ||
        !*np->output[0])
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "takes one input and gives one output%s", NULL);
    lt_ival *x = lt_imp_scope_lookup(s, np->input[0]);
    if (!x)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "input '%s' is not defined", np->input[0]);
    char out[512];
    snprintf(out, sizeof out, "%s%s", fc ? fc->prefix : "", np->output[0]);
    lower L = {im, b, np, fc, out, 0};
    int first = b->nnodes;
    lt_status st;
    float v1, v2;
    lt_ival *y;
    switch (which) {
    case 0:
        st = image_scaler(&L, x);
        break;
    case 1:
        st = attr_float(&L, "scale", false, 1.0f, &v1);
        if (st == LT_OK && !with(&L, LT_OP_MUL, x, x, v1, NULL))
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        break;
    case 2:
        st = attr_float(&L, "alpha", false, 1.0f, &v1);
        if (st == LT_OK)
            st = attr_float(&L, "beta", false, 0.0f, &v2);
        if (st != LT_OK)
            break;
        y = with(&L, LT_OP_MUL, x, x, v1, "alpha_x");
        if (!y || !with(&L, LT_OP_ADD, y, x, v2, NULL))
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        break;
    case 3:
        st = outer_inner(&L, x, LT_OP_TANH);
        break;
    case 4:
        st = outer_inner(&L, x, LT_OP_SOFTPLUS);
        break;
    default:
        st = crop(&L, x);
        break;
    }
    if (st != LT_OK)
        return st;
    /* the last node made gives the output */
    lt_ival *v = b->nnodes > first ? b->nodes[b->nnodes - 1]->out[0] : NULL;
    if (!v || strcmp(v->name, out) != 0)
        return lt_errf(im->err, LT_ERR_INTERNAL, "%s: lowering %s lost its output", im->path, np->op_type);
    return lt_imp_define_value(im, s, b, np->output[0], v, np);
}
