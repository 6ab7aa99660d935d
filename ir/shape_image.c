/* Shape inference rules: image family (Resize, Upsample, GridSample).
 * Output sizes follow the kernels: floor(scale * in) from scales, the sizes
 * themselves (or one common scale under keep_aspect_ratio_policy) from
 * sizes, when those inputs are constants. */
#include "infer.h"
#include "shape_image.h"
#include <math.h>
#include <string.h>

static bool known(lt_dim d)
{
    return d.sym < 0 && d.v >= 0;
}

/* A constant input with elements, else NULL. */
static const lt_tensor *const_in(lt_infer_ctx *c, const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i])
        return NULL;
    const lt_tensor *t = lt_infer_const(c, n->in[i]);
    return t && t->numel > 0 ? t : NULL;
}

static bool has_elements_maybe(const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i])
        return false;
    const lt_type *t = &n->in[i]->type;
    return !(t->rank == 1 && known(t->dims[0]) && t->dims[0].v == 0);
}

/* Each element of t (float or integer) as double. */
static double elem(const lt_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case LT_F32: return ((const float *)t->data)[i];
    case LT_F64: return ((const double *)t->data)[i];
    case LT_I64: return (double)((const int64_t *)t->data)[i];
    case LT_I32: return ((const int32_t *)t->data)[i];
    default: return NAN;
    }
}

int64_t lt_resize_len(int64_t in, double scale)
{
    if (in <= ((int64_t)1 << 24)) {
        volatile float p = (float)in * (float)scale; /* rounded to float32, whatever the evaluation method */
        return (int64_t)floorf(p);
    }
    return (int64_t)floor((double)in * scale);
}

/* Output dims of x scaled by sc[d] (sc NULL: unknown). */
static void scaled(const lt_type *x, const double *sc, lt_type *o)
{
    for (int d = 0; d < x->rank; d++) {
        if (sc[d] == 1)
            o->dims[d] = x->dims[d];
        else if (known(x->dims[d]) && sc[d] > 0 && sc[d] * (double)x->dims[d].v < 9e15)
            o->dims[d] = (lt_dim){lt_resize_len(x->dims[d].v, sc[d]), -1};
    }
}

static lt_status infer_resize(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    if (!x || n->nout < 1 || !n->out[0])
        return LT_OK;
    lt_type *o = &n->out[0]->type;
    lt_type_unknown(o, x->dtype, x->rank);
    if (x->rank < 0)
        return LT_OK;
    bool legacy = n->opset < 11;
    int axes[LT_MAX_RANK], naxes = x->rank;
    for (int d = 0; d < x->rank; d++)
        axes[d] = d;
    int na;
    const int64_t *av = lt_attr_ints(n, "axes", &na);
    if (av && n->opset >= 18) {
        if (na > x->rank)
            return lt_infer_fail(c, n, "%d axes for a rank-%d input", na, x->rank);
        for (int i = 0; i < na; i++) {
            int64_t a = av[i] < 0 ? av[i] + x->rank : av[i];
            if (a < 0 || a >= x->rank)
                return lt_infer_fail(c, n, "axis %lld is out of range", (long long)av[i]);
            axes[i] = (int)a;
        }
        naxes = na;
    }
    const lt_tensor *sizes = legacy ? NULL : const_in(c, n, 3);
    const lt_tensor *scales = const_in(c, n, legacy ? 1 : 2);
    if (sizes) {
        if (sizes->numel != naxes)
            return lt_infer_fail(c, n, "sizes has %lld elements, expected %d", (long long)sizes->numel, naxes);
        const char *pol = lt_attr_str(n, "keep_aspect_ratio_policy", "stretch");
        bool stretch = n->opset < 18 || strcmp(pol, "stretch") == 0;
        for (int d = 0; d < x->rank; d++)
            o->dims[d] = x->dims[d];
        if (stretch) {
            for (int i = 0; i < naxes; i++) {
                double v = elem(sizes, i);
                o->dims[axes[i]] = v >= 0 && v < 9e15 ? (lt_dim){(int64_t)v, -1} : (lt_dim){-1, -1};
            }
            return LT_OK;
        }
        /* one common scale: needs every resized input dim */
        double common = strcmp(pol, "not_larger") == 0 ? INFINITY : 0;
        for (int i = 0; i < naxes; i++) {
            lt_dim in = x->dims[axes[i]];
            if (!known(in) || in.v == 0) {
                for (int j = 0; j < naxes; j++)
                    o->dims[axes[j]] = (lt_dim){-1, -1};
                return LT_OK;
            }
            double s = elem(sizes, i) / (double)in.v;
            common = strcmp(pol, "not_larger") == 0 ? fmin(common, s) : fmax(common, s);
        }
        for (int i = 0; i < naxes; i++) {
            double v = common * (double)x->dims[axes[i]].v + 0.5;
            o->dims[axes[i]] = v >= 0 && v < 9e15 ? (lt_dim){(int64_t)v, -1} : (lt_dim){-1, -1};
        }
        return LT_OK;
    }
    if (scales && !(has_elements_maybe(n, 3) && !legacy && !lt_infer_const(c, n->in[3]))) {
        if (scales->numel != naxes)
            return lt_infer_fail(c, n, "scales has %lld elements, expected %d", (long long)scales->numel, naxes);
        double sc[LT_MAX_RANK];
        for (int d = 0; d < x->rank; d++)
            sc[d] = 1;
        for (int i = 0; i < naxes; i++)
            sc[axes[i]] = elem(scales, i);
        scaled(x, sc, o);
    }
    return LT_OK;
}

static lt_status infer_upsample(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    if (!x || n->nout < 1 || !n->out[0])
        return LT_OK;
    lt_type *o = &n->out[0]->type;
    lt_type_unknown(o, x->dtype, x->rank);
    if (x->rank < 0)
        return LT_OK;
    double sc[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        sc[d] = 1;
    if (n->opset >= 9) {
        const lt_tensor *s = const_in(c, n, 1);
        if (!s)
            return LT_OK;
        if (s->numel != x->rank)
            return lt_infer_fail(c, n, "scales has %lld elements, expected %d", (long long)s->numel, x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = elem(s, d);
    } else if (n->opset >= 7) {
        int ns;
        const float *s = lt_attr_floats(n, "scales", &ns);
        if (!s || ns != x->rank)
            return lt_infer_fail(c, n, "scales must have one element per dim of X (%d)", x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = s[d];
    } else if (x->rank == 4) {
        sc[2] = lt_attr_float(n, "height_scale", 1.0f);
        sc[3] = lt_attr_float(n, "width_scale", 1.0f);
    }
    scaled(x, sc, o);
    return LT_OK;
}

/* Y: (N, C, grid's spatial dims). */
static lt_status infer_grid_sample(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    const lt_type *g = n->nin > 1 && n->in[1] ? &n->in[1]->type : NULL;
    if (!x || n->nout < 1 || !n->out[0])
        return LT_OK;
    int rank = x->rank >= 0 ? x->rank : (g ? g->rank : -1);
    if (x->rank >= 0 && g && g->rank >= 0 && g->rank != x->rank)
        return lt_infer_fail(c, n, "grid has rank %d, X has rank %d", g->rank, x->rank);
    if (rank >= 0 && rank < 3)
        return lt_infer_fail(c, n, "X must have rank >= 3 (N, C, spatial...), got rank %d", rank);
    lt_type *o = &n->out[0]->type;
    lt_type_unknown(o, x->dtype, rank);
    if (rank < 0)
        return LT_OK;
    if (x->rank >= 0) {
        o->dims[0] = x->dims[0];
        o->dims[1] = x->dims[1];
    }
    if (g && g->rank >= 0) {
        if (!known(o->dims[0]) && o->dims[0].sym < 0)
            o->dims[0] = g->dims[0];
        for (int d = 2; d < rank; d++)
            o->dims[d] = g->dims[d - 1];
    }
    return LT_OK;
}

void lt_infer_register_image(lt_infer_fn *tab)
{
    tab[LT_OP_RESIZE] = infer_resize;
    tab[LT_OP_UPSAMPLE] = infer_upsample;
    tab[LT_OP_GRID_SAMPLE] = infer_grid_sample;
}
