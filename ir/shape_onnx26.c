/* Shape inference rules: BitCast (opset 26), AffineGrid (opset 20) with
 * its gradient op, the string ops of opset 20 (StringConcat, StringSplit,
 * RegexFullMatch), DeformConv (opset 19), ImageDecoder (opset 20) and
 * ai.onnx.ml's Binarizer,
 * ArrayFeatureExtractor, LabelEncoder and TreeEnsemble. */
#include "infer.h"
#include <string.h>

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

/* X's shape in the type named by `to` */
static lt_status infer_bitcast(lt_infer_ctx *c, lt_node *n)
{
    int64_t to = lt_attr_int(n, "to", -1);
    if (!lt_attr_find(n, "to"))
        return lt_infer_fail(c, n, "needs the attribute 'to'");
    lt_infer_same(n, 0, 0);
    if (n->nout > 0 && n->out[0])
        n->out[0]->type.dtype = to > 0 && to < LT_DTYPE_COUNT ? (lt_dtype)to : LT_UNDEFINED;
    return LT_OK;
}

/* grid (N, H, W, 2) or (N, D, H, W, 3), from size when it is a constant */
static lt_status infer_affine_grid(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *th = in_type(n, 0), *sz = in_type(n, 1);
    if (!th || !sz)
        return lt_infer_fail(c, n, "needs theta and size");
    if (n->nout < 1 || !n->out[0])
        return LT_OK;
    int k = sz->rank == 1 && sz->dims[0].sym < 0 && (sz->dims[0].v == 4 || sz->dims[0].v == 5)
                ? (int)sz->dims[0].v - 2
                : th->rank == 3 && th->dims[1].sym < 0 && (th->dims[1].v == 2 || th->dims[1].v == 3)
                    ? (int)th->dims[1].v
                    : 0;
    if (!k) {
        lt_type_unknown(&n->out[0]->type, th->dtype, -1);
        return LT_OK;
    }
    lt_type_unknown(&n->out[0]->type, th->dtype, k + 2);
    lt_type *t = &n->out[0]->type;
    if (th->rank == 3)
        t->dims[0] = th->dims[0];
    t->dims[k + 1] = (lt_dim){.v = k, .sym = -1};
    const lt_tensor *s = lt_infer_const(c, n->in[1]);
    if (s && s->numel == k + 2 && s->dtype == LT_I64)
        for (int d = 0; d < k; d++)
            t->dims[1 + d] = (lt_dim){.v = ((const int64_t *)s->data)[2 + d], .sym = -1};
    return LT_OK;
}

/* (dgrid, theta, size) -> dtheta like theta */
static lt_status infer_affine_grid_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *th = in_type(n, 1);
    if (n->nout > 0 && n->out[0]) {
        if (th)
            n->out[0]->type = *th;
        else
            lt_type_unknown(&n->out[0]->type, LT_UNDEFINED, -1);
    }
    return LT_OK;
}

/* StringConcat: the broadcast of X and Y, strings */
static lt_status infer_string_concat(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *a = in_type(n, 0), *b = in_type(n, 1);
    if (!a || !b)
        return lt_infer_fail(c, n, "needs X and Y");
    if (n->nout < 1 || !n->out[0])
        return LT_OK;
    lt_type t;
    if (a->rank >= 0 && b->rank >= 0) {
        if (!lt_infer_broadcast(a, b, &t))
            return lt_infer_fail(c, n, "X and Y do not broadcast");
    } else {
        lt_type_unknown(&t, LT_STRING, -1);
    }
    t.dtype = LT_STRING;
    n->out[0]->type = t;
    return LT_OK;
}

/* StringSplit: Y is X's shape and one more axis (the most pieces), Z X's
 * shape in int64 */
static lt_status infer_string_split(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return lt_infer_fail(c, n, "needs X");
    if (x->rank >= LT_MAX_RANK)
        return lt_infer_fail(c, n, "X of rank %d leaves no room for the split axis", x->rank);
    if (n->nout > 0 && n->out[0]) {
        lt_type_unknown(&n->out[0]->type, LT_STRING, x->rank >= 0 ? x->rank + 1 : -1);
        for (int d = 0; d < x->rank; d++)
            n->out[0]->type.dims[d] = x->dims[d];
    }
    if (n->nout > 1 && n->out[1]) {
        n->out[1]->type = *x;
        n->out[1]->type.dtype = LT_I64;
    }
    return LT_OK;
}

/* RegexFullMatch: X's shape in bool */
static lt_status infer_regex(lt_infer_ctx *c, lt_node *n)
{
    if (!in_type(n, 0))
        return lt_infer_fail(c, n, "needs X");
    lt_infer_same(n, 0, 0);
    if (n->nout > 0 && n->out[0])
        n->out[0]->type.dtype = LT_BOOL;
    return LT_OK;
}

/* DeformConv: (N, W's output channels, offset's spatial dims) */
static lt_status infer_deform_conv(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 1), *o = in_type(n, 2);
    if (!x || !w || !o)
        return lt_infer_fail(c, n, "needs X, W and offset");
    if (n->nout < 1 || !n->out[0])
        return LT_OK;
    int r = x->rank >= 0 ? x->rank : o->rank;
    lt_type_unknown(&n->out[0]->type, x->dtype, r);
    if (r < 3)
        return r >= 0 ? lt_infer_fail(c, n, "X must have spatial dims, got rank %d", r) : LT_OK;
    lt_type *t = &n->out[0]->type;
    if (x->rank == r)
        t->dims[0] = x->dims[0];
    if (w->rank == r)
        t->dims[1] = w->dims[0];
    if (o->rank == r)
        for (int d = 2; d < r; d++)
            t->dims[d] = o->dims[d];
    return LT_OK;
}

static lt_status infer_binarizer(lt_infer_ctx *c, lt_node *n)
{
    if (!in_type(n, 0))
        return lt_infer_fail(c, n, "needs X");
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* X's dims but the last, then the number of indices; (1, n) for a 1-D X */
static lt_status infer_array_feature_extractor(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *ix = in_type(n, 1);
    if (!x || !ix)
        return lt_infer_fail(c, n, "needs X and indices");
    if (n->nout < 1 || !n->out[0])
        return LT_OK;
    int r = x->rank < 0 ? -1 : x->rank == 1 ? 2 : x->rank;
    if (x->rank == 0)
        return lt_infer_fail(c, n, "X must have rank 1 or more");
    lt_type_unknown(&n->out[0]->type, x->dtype, r);
    if (r < 0)
        return LT_OK;
    lt_type *t = &n->out[0]->type;
    if (x->rank == 1)
        t->dims[0] = (lt_dim){.v = 1, .sym = -1};
    else
        for (int d = 0; d + 1 < x->rank; d++)
            t->dims[d] = x->dims[d];
    if (ix->rank >= 0) {
        int64_t cnt = 1;
        for (int d = 0; d < ix->rank && cnt >= 0; d++)
            cnt = ix->dims[d].sym < 0 && ix->dims[d].v >= 0 ? cnt * ix->dims[d].v : -1;
        t->dims[r - 1] = (lt_dim){.v = cnt, .sym = -1};
    }
    return LT_OK;
}

/* X's shape in the values' type */
static lt_status infer_label_encoder(lt_infer_ctx *c, lt_node *n)
{
    if (!in_type(n, 0))
        return lt_infer_fail(c, n, "needs X");
    lt_dtype dt = LT_UNDEFINED;
    const lt_attr *a;
    if (lt_attr_find(n, "values_strings"))
        dt = LT_STRING;
    else if (lt_attr_find(n, "values_int64s"))
        dt = LT_I64;
    else if (lt_attr_find(n, "values_floats"))
        dt = LT_F32;
    else if ((a = lt_attr_find(n, "values_tensor")) && a->kind == LT_ATTR_TENSOR && a->t)
        dt = a->t->dtype;
    else
        return lt_infer_fail(c, n, "needs values_strings, values_int64s, values_floats or values_tensor");
    lt_infer_same(n, 0, 0);
    if (n->nout > 0 && n->out[0])
        n->out[0]->type.dtype = dt;
    return LT_OK;
}

/* TreeEnsemble: (batch, n_targets) in X's type */
static lt_status infer_tree_ensemble(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return lt_infer_fail(c, n, "needs X");
    if (x->rank >= 0 && x->rank != 2)
        return lt_infer_fail(c, n, "X must be (batch, features), got rank %d", x->rank);
    if (n->nout > 0 && n->out[0]) {
        lt_type_unknown(&n->out[0]->type, x->dtype, 2);
        if (x->rank == 2)
            n->out[0]->type.dims[0] = x->dims[0];
        int64_t nt = lt_attr_int(n, "n_targets", -1);
        if (nt > 0)
            n->out[0]->type.dims[1] = (lt_dim){.v = nt, .sym = -1};
    }
    return LT_OK;
}

/* ImageDecoder: (height, width, 3 or 1 for Grayscale) uint8, the size
 * known only from the stream */
static lt_status infer_image_decoder(lt_infer_ctx *c, lt_node *n)
{
    if (!in_type(n, 0))
        return lt_infer_fail(c, n, "needs encoded_stream");
    if (n->nout > 0 && n->out[0]) {
        lt_type_unknown(&n->out[0]->type, LT_U8, 3);
        const char *f = lt_attr_str(n, "pixel_format", "RGB");
        n->out[0]->type.dims[2] = (lt_dim){.v = strcmp(f, "Grayscale") ? 3 : 1, .sym = -1};
    }
    return LT_OK;
}

/* (dY, X, W, offset, B, mask) -> dX, dW, doffset, dB, dmask: each like its input */
static lt_status infer_deform_conv_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    return lt_infer_outputs_like_inputs(n, 5, 1);
}

void lt_infer_register_onnx26(lt_infer_fn *tab)
{
    tab[LT_OP_IMAGE_DECODER] = infer_image_decoder;
    tab[LT_OP_TREE_ENSEMBLE] = infer_tree_ensemble;
    tab[LT_OP_BINARIZER] = infer_binarizer;
    tab[LT_OP_ARRAY_FEATURE_EXTRACTOR] = infer_array_feature_extractor;
    tab[LT_OP_LABEL_ENCODER] = infer_label_encoder;
    tab[LT_OP_DEFORM_CONV] = infer_deform_conv;
    tab[LT_OP_DEFORM_CONV_GRAD] = infer_deform_conv_grad;
    tab[LT_OP_STRING_CONCAT] = infer_string_concat;
    tab[LT_OP_STRING_SPLIT] = infer_string_split;
    tab[LT_OP_REGEX_FULL_MATCH] = infer_regex;
    tab[LT_OP_BIT_CAST] = infer_bitcast;
    tab[LT_OP_AFFINE_GRID] = infer_affine_grid;
    tab[LT_OP_AFFINE_GRID_GRAD] = infer_affine_grid_grad;
}
