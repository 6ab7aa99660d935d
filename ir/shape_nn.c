/* Shape inference rules: nn family (convolutions, pools, RoI ops, Col2Im).
 * Window sizes come from the geometry in shape_nn_geom.c. */
#include "infer.h"
#include "shape_nn.h"
#include <stdio.h>
#include <string.h>

static int64_t dim_of(const lt_type *t, int i)
{
    return t->rank > i && t->dims[i].sym < 0 ? t->dims[i].v : -1;
}

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

static lt_type *out_type(lt_node *n, int i)
{
    return i < n->nout && n->out[i] ? &n->out[i]->type : NULL;
}

/* Reads a constant 1-D int32/int64 tensor of at most max values; false
 * when t is not one. */
static bool const_ints(const lt_tensor *t, int64_t *out, int max, int *n)
{
    if (!t || t->rank != 1 || t->numel > max || (t->dtype != LT_I64 && t->dtype != LT_I32))
        return false;
    *n = (int)t->numel;
    for (int i = 0; i < *n; i++)
        out[i] = t->dtype == LT_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    return true;
}

/* Conv, ConvInteger, QLinearConv */
static lt_status infer_conv(lt_infer_ctx *c, lt_node *n)
{
    int wi = n->op == LT_OP_Q_LINEAR_CONV ? 3 : 1;
    const lt_type *x = in_type(n, 0), *w = in_type(n, wi);
    lt_type *y = out_type(n, 0);
    if (!x || !w || !y)
        return LT_OK;
    lt_dtype dt = x->dtype;
    if (n->op == LT_OP_CONV_INTEGER)
        dt = LT_I32;
    else if (n->op == LT_OP_Q_LINEAR_CONV)
        dt = in_type(n, 7) && in_type(n, 7)->dtype != LT_UNDEFINED ? in_type(n, 7)->dtype : x->dtype;
    int r = x->rank >= 0 ? x->rank : w->rank;
    lt_type_unknown(y, dt, r);
    if (r < 0)
        return LT_OK;
    if (r < 3 || r > LT_MAX_RANK)
        return lt_infer_fail(c, n, "input of rank %d (needs N, C and at least one spatial axis)", r);
    if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank)
        return lt_infer_fail(c, n, "input of rank %d with weights of rank %d", x->rank, w->rank);
    int64_t group = lt_attr_int(n, "group", 1);
    if (group < 1)
        return lt_infer_fail(c, n, "group %lld", (long long)group);
    int64_t cx = dim_of(x, 1), cw = dim_of(w, 1), m = dim_of(w, 0);
    if (cx >= 0 && cw >= 0 && (cx % group != 0 || cx / group != cw))
        return lt_infer_fail(c, n, "input has %lld channels, weights expect %lld x group %lld", (long long)cx,
                             (long long)cw, (long long)group);
    if (m >= 0 && m % group)
        return lt_infer_fail(c, n, "%lld output channels do not split into %lld groups", (long long)m,
                             (long long)group);
    if (x->rank >= 0)
        y->dims[0] = x->dims[0];
    if (w->rank >= 0)
        y->dims[1] = w->dims[0];
    int nsp = r - 2, nk;
    int64_t kernel[LT_MAX_RANK], img[LT_MAX_RANK];
    const int64_t *ks = lt_attr_ints(n, "kernel_shape", &nk);
    if (ks && nk > 0 && nk != nsp)
        return lt_infer_fail(c, n, "kernel_shape has %d values for %d spatial axes", nk, nsp);
    for (int i = 0; i < nsp; i++) {
        kernel[i] = ks && nk > 0 ? ks[i] : dim_of(w, i + 2);
        if (ks && nk > 0 && dim_of(w, i + 2) >= 0 && dim_of(w, i + 2) != ks[i])
            return lt_infer_fail(c, n, "kernel_shape disagrees with the weights along spatial axis %d", i);
        if (kernel[i] < 0)
            return LT_OK;
        img[i] = dim_of(x, i + 2);
    }
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window(n, nsp, img, kernel, false, &g, why, sizeof why))
        return lt_infer_fail(c, n, "%s", why);
    for (int i = 0; i < nsp; i++)
        y->dims[i + 2].v = g.grid[i];
    return LT_OK;
}

static lt_status infer_conv_transpose(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 1);
    lt_type *y = out_type(n, 0);
    if (!x || !w || !y)
        return LT_OK;
    int r = x->rank >= 0 ? x->rank : w->rank;
    lt_type_unknown(y, x->dtype, r);
    if (r < 0)
        return LT_OK;
    if (r < 3 || r > LT_MAX_RANK)
        return lt_infer_fail(c, n, "input of rank %d (needs N, C and at least one spatial axis)", r);
    if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank)
        return lt_infer_fail(c, n, "input of rank %d with weights of rank %d", x->rank, w->rank);
    int64_t group = lt_attr_int(n, "group", 1);
    if (group < 1)
        return lt_infer_fail(c, n, "group %lld", (long long)group);
    int64_t cx = dim_of(x, 1), cw = dim_of(w, 0), mg = dim_of(w, 1);
    if (cx >= 0 && cw >= 0 && cx != cw)
        return lt_infer_fail(c, n, "input has %lld channels, weights %lld", (long long)cx, (long long)cw);
    if (cx >= 0 && cx % group)
        return lt_infer_fail(c, n, "%lld channels do not split into %lld groups", (long long)cx, (long long)group);
    if (x->rank >= 0)
        y->dims[0] = x->dims[0];
    if (mg >= 0)
        y->dims[1].v = mg * group;
    int nsp = r - 2, nk;
    int64_t kernel[LT_MAX_RANK], grid[LT_MAX_RANK];
    const int64_t *ks = lt_attr_ints(n, "kernel_shape", &nk);
    if (ks && nk > 0 && nk != nsp)
        return lt_infer_fail(c, n, "kernel_shape has %d values for %d spatial axes", nk, nsp);
    for (int i = 0; i < nsp; i++) {
        kernel[i] = ks && nk > 0 ? ks[i] : dim_of(w, i + 2);
        if (kernel[i] < 0)
            return LT_OK;
        grid[i] = dim_of(x, i + 2);
    }
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window_transpose(n, nsp, grid, kernel, &g, why, sizeof why))
        return lt_infer_fail(c, n, "%s", why);
    for (int i = 0; i < nsp; i++)
        y->dims[i + 2].v = g.img[i];
    return LT_OK;
}

/* MaxPool, AveragePool, LpPool */
static lt_status infer_pool(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *y = out_type(n, 0), *ind = out_type(n, 1);
    if (!x)
        return LT_OK;
    int nk;
    const int64_t *ks = lt_attr_ints(n, "kernel_shape", &nk);
    if (!ks || nk < 1)
        return lt_infer_fail(c, n, "the kernel_shape attribute is required");
    int r = x->rank >= 0 ? x->rank : nk + 2;
    if (y)
        lt_type_unknown(y, x->dtype, r);
    if (ind)
        lt_type_unknown(ind, LT_I64, r);
    if (x->rank >= 0 && x->rank != nk + 2)
        return lt_infer_fail(c, n, "input of rank %d with a %d-D kernel", x->rank, nk);
    int64_t img[LT_MAX_RANK];
    for (int i = 0; i < nk && i < LT_MAX_RANK; i++)
        img[i] = dim_of(x, i + 2);
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window(n, nk, img, ks, lt_attr_int(n, "ceil_mode", 0) != 0, &g, why, sizeof why))
        return lt_infer_fail(c, n, "%s", why);
    for (lt_type *t = y; t; t = t == y ? ind : NULL) {
        if (x->rank >= 0) {
            t->dims[0] = x->dims[0];
            t->dims[1] = x->dims[1];
        }
        for (int i = 0; i < nk; i++)
            t->dims[i + 2].v = g.grid[i];
    }
    return LT_OK;
}

static lt_status infer_global_pool(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *y = out_type(n, 0);
    if (!x || !y)
        return LT_OK;
    lt_type_unknown(y, x->dtype, x->rank);
    if (x->rank < 0)
        return LT_OK;
    if (x->rank < 2)
        return lt_infer_fail(c, n, "input of rank %d (needs N and C)", x->rank);
    y->dims[0] = x->dims[0];
    y->dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        y->dims[i].v = 1;
    return LT_OK;
}

static lt_status infer_max_unpool(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *y = out_type(n, 0);
    if (!x || !y)
        return LT_OK;
    lt_type_unknown(y, x->dtype, x->rank);
    const lt_tensor *os = n->nin > 2 ? lt_infer_const(c, n->in[2]) : NULL;
    if (os) {
        int64_t v[LT_MAX_RANK];
        int nv;
        if (!const_ints(os, v, LT_MAX_RANK, &nv) || nv < 3 || (x->rank >= 0 && nv != x->rank))
            return lt_infer_fail(c, n, "output_shape must be a 1-D integer tensor with one value per input axis");
        y->rank = nv;
        for (int i = 0; i < nv; i++)
            y->dims[i].v = v[i];
        return LT_OK;
    }
    if (x->rank < 0 || (n->nin > 2 && n->in[2]))
        return LT_OK;
    int nk;
    const int64_t *ks = lt_attr_ints(n, "kernel_shape", &nk);
    if (!ks || nk < 1)
        return lt_infer_fail(c, n, "the kernel_shape attribute is required");
    if (x->rank != nk + 2)
        return lt_infer_fail(c, n, "input of rank %d with a %d-D kernel", x->rank, nk);
    y->dims[0] = x->dims[0];
    y->dims[1] = x->dims[1];
    int64_t grid[LT_MAX_RANK];
    for (int i = 0; i < nk; i++)
        grid[i] = dim_of(x, i + 2);
    lt_nn_geom g;
    char why[256];
    /* the unpooled size is the pooled window's image, without output_padding */
    if (!lt_nn_window_transpose(n, nk, grid, ks, &g, why, sizeof why))
        return lt_infer_fail(c, n, "%s", why);
    for (int i = 0; i < nk; i++)
        y->dims[i + 2].v = g.img[i];
    return LT_OK;
}

static lt_status infer_max_roi_pool(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *rois = in_type(n, 1);
    lt_type *y = out_type(n, 0);
    if (!x || !rois || !y)
        return LT_OK;
    int np;
    const int64_t *ps = lt_attr_ints(n, "pooled_shape", &np);
    if (!ps || np != 2 || ps[0] < 1 || ps[1] < 1)
        return lt_infer_fail(c, n, "pooled_shape must hold two positive sizes");
    if (x->rank >= 0 && x->rank != 4)
        return lt_infer_fail(c, n, "input of rank %d (expected 4)", x->rank);
    lt_type_unknown(y, x->dtype, 4);
    if (rois->rank >= 0)
        y->dims[0] = rois->dims[0];
    if (x->rank >= 0)
        y->dims[1] = x->dims[1];
    y->dims[2].v = ps[0];
    y->dims[3].v = ps[1];
    return LT_OK;
}

static lt_status infer_roi_align(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *rois = in_type(n, 1), *bi = in_type(n, 2);
    lt_type *y = out_type(n, 0);
    if (!x || !y)
        return LT_OK;
    if (x->rank >= 0 && x->rank != 4)
        return lt_infer_fail(c, n, "input of rank %d (expected 4)", x->rank);
    int64_t oh = lt_attr_int(n, "output_height", 1), ow = lt_attr_int(n, "output_width", 1);
    if (oh < 1 || ow < 1)
        return lt_infer_fail(c, n, "output size %lldx%lld", (long long)oh, (long long)ow);
    lt_type_unknown(y, x->dtype, 4);
    if (bi && bi->rank >= 1)
        y->dims[0] = bi->dims[0];
    else if (rois && rois->rank >= 1)
        y->dims[0] = rois->dims[0];
    if (x->rank >= 0)
        y->dims[1] = x->dims[1];
    y->dims[2].v = oh;
    y->dims[3].v = ow;
    return LT_OK;
}

static lt_status infer_col2im(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *is = in_type(n, 1);
    lt_type *y = out_type(n, 0);
    if (!x || !y)
        return LT_OK;
    int64_t img[LT_MAX_RANK], blk[LT_MAX_RANK];
    int ni = -1, nb = -1;
    if (!const_ints(n->nin > 1 ? lt_infer_const(c, n->in[1]) : NULL, img, LT_MAX_RANK - 2, &ni))
        ni = -1;
    if (!const_ints(n->nin > 2 ? lt_infer_const(c, n->in[2]) : NULL, blk, LT_MAX_RANK - 2, &nb))
        nb = -1;
    int nsp = ni >= 0 ? ni : is && is->rank == 1 ? (int)dim_of(is, 0) : -1;
    if (x->rank >= 0 && x->rank != 3)
        return lt_infer_fail(c, n, "input of rank %d (expected 3: N, C x block, L)", x->rank);
    if (nsp > LT_MAX_RANK - 2)
        return lt_infer_fail(c, n, "%d spatial axes", nsp);
    lt_type_unknown(y, x->dtype, nsp >= 0 ? nsp + 2 : -1);
    if (nsp < 0)
        return LT_OK;
    if (x->rank >= 0)
        y->dims[0] = x->dims[0];
    for (int i = 0; i < ni; i++)
        y->dims[i + 2].v = img[i];
    if (nb == nsp) {
        int64_t kk = lt_nn_prod(nsp, blk), ck = dim_of(x, 1);
        if (kk > 0 && ck >= 0) {
            if (ck % kk)
                return lt_infer_fail(c, n, "%lld channels do not split into blocks of %lld", (long long)ck,
                                     (long long)kk);
            y->dims[1].v = ck / kk;
        }
    }
    return LT_OK;
}

void lt_infer_register_nn(lt_infer_fn *tab)
{
    tab[LT_OP_CONV] = infer_conv;
    tab[LT_OP_CONV_INTEGER] = infer_conv;
    tab[LT_OP_Q_LINEAR_CONV] = infer_conv;
    tab[LT_OP_CONV_TRANSPOSE] = infer_conv_transpose;
    tab[LT_OP_MAX_POOL] = infer_pool;
    tab[LT_OP_AVERAGE_POOL] = infer_pool;
    tab[LT_OP_LP_POOL] = infer_pool;
    tab[LT_OP_GLOBAL_AVERAGE_POOL] = infer_global_pool;
    tab[LT_OP_GLOBAL_MAX_POOL] = infer_global_pool;
    tab[LT_OP_GLOBAL_LP_POOL] = infer_global_pool;
    tab[LT_OP_MAX_UNPOOL] = infer_max_unpool;
    tab[LT_OP_MAX_ROI_POOL] = infer_max_roi_pool;
    tab[LT_OP_ROI_ALIGN] = infer_roi_align;
    tab[LT_OP_COL2_IM] = infer_col2im;
}
