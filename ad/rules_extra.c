/* Gradient rules: GridSample, RoiAlign, MaxRoiPool and Col2Im through their
 * gradient ops; MaxUnpool as a gather of dy at the indices; DFT and STFT,
 * linear maps whose adjoint is a DFT the other way round; the scale of
 * DequantizeLinear; float Range and OneHot's values. QuantizeLinear and the
 * ops whose float output does not depend smoothly on their inputs carry no
 * gradient (see the registrar). */
#include "rules_more.h"
#include <string.h>

#define G dout[0]
#define ACC(i, v) lt_ad_accum(c, n, (i), (v))
#define OP1(op, a) lt_ad_op1(c, LT_OP_##op, (a))
#define OP2(op, a, b) lt_ad_op2(c, LT_OP_##op, (a), (b))
#define OP3(op, a, b, d) lt_ad_op3(c, LT_OP_##op, (a), (b), (d))
#define K(v) lt_ad_scalar(c, lt_ad_more_fdt(in[0]), (v))
#define INTS(...) lt_ad_ints(c, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})
#define RULE(name)                                                                                                 \
    static lt_status name(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,                    \
                          lt_ival *const *dout)

/* a node of op over ins, of which the first req must exist (the rest may be
 * omitted), with nout outputs; the caller sets attributes and infers */
static lt_node *emit(lt_ad *c, lt_op op, int nin, lt_ival *const *ins, int req, int nout)
{
    for (int i = 0; i < req; i++)
        if (!ins[i])
            return NULL; /* an input failed to be emitted (out of memory) */
    lt_node *k = lt_ad_node(c, op, nin, nout);
    if (!k)
        return NULL;
    for (int i = 0; i < nin; i++)
        k->in[i] = ins[i];
    return k;
}

/* the gradient op of n over ins, carrying n's attributes and opset */
static lt_node *grad_op(lt_ad *c, const lt_node *n, lt_op op, int nin, lt_ival *const *ins, int req, int nout)
{
    lt_node *k = emit(c, op, nin, ins, req, nout);
    if (k) {
        lt_ad_copy_attrs(c, k, n);
        lt_ad_infer(c, k);
    }
    return k;
}

static lt_ival *arg(const lt_node *n, lt_ival *const *in, int i) { return i < n->nin ? in[i] : NULL; }

static lt_ival *slice(lt_ad *c, lt_ival *v, lt_ival *starts, lt_ival *ends, lt_ival *axes)
{
    lt_ival *ins[4] = {v, starts, ends, axes};
    lt_node *k = emit(c, LT_OP_SLICE, 4, ins, 4, 1);
    if (!k)
        return NULL;
    lt_ad_infer(c, k);
    return k->out[0];
}

/* v padded with zeros at the end of the given axes by the amounts in end */
static lt_ival *pad_end(lt_ad *c, lt_ival *v, lt_ival *end, int na, const int64_t *axes, lt_ival *zero)
{
    int64_t none[LT_MAX_RANK] = {0};
    lt_ival *parts[2] = {lt_ad_ints(c, na, none), end};
    lt_node *cat = emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return NULL;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *ins[4] = {v, cat->out[0], zero, lt_ad_ints(c, na, axes)};
    lt_node *k = emit(c, LT_OP_PAD, 4, ins, 4, 1);
    if (!k)
        return NULL;
    lt_ad_infer(c, k);
    return k->out[0];
}

/* an integer value as int64 (shape values and lengths may come as int32) */
static lt_ival *as_i64(lt_ad *c, lt_ival *v)
{
    lt_dtype dt = v->type.dtype;
    return dt == LT_I64 || dt == LT_UNDEFINED ? v : lt_ad_more_cast(c, v, LT_I64);
}

/* ---- through gradient kernels ---- */
RULE(r_grid_sample)
{
    /* nearest sampling is piecewise constant in the grid */
    bool nearest = !strcmp(lt_attr_str(n, "mode", ""), "nearest");
    bool wx = lt_ad_wants(c, n, 0), wg = lt_ad_wants(c, n, 1) && !nearest;
    if (!wx && !wg)
        return LT_OK;
    lt_ival *ins[3] = {G, in[0], in[1]};
    lt_node *k = grad_op(c, n, LT_OP_GRID_SAMPLE_GRAD, 3, ins, 3, 2);
    if (!k)
        return LT_ERR_NOMEM;
    if (!wx)
        k->out[0] = NULL;
    if (!wg)
        k->out[1] = NULL;
    lt_status s = wx ? ACC(0, k->out[0]) : LT_OK;
    if (s == LT_OK && wg)
        s = ACC(1, k->out[1]);
    return s;
}

RULE(r_roi_align)
{
    lt_ival *ins[4] = {G, in[0], in[1], in[2]};
    lt_node *k = grad_op(c, n, LT_OP_ROI_ALIGN_GRAD, 4, ins, 4, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

RULE(r_max_roi_pool)
{
    lt_ival *ins[3] = {G, in[0], in[1]};
    lt_node *k = grad_op(c, n, LT_OP_MAX_ROI_POOL_GRAD, 3, ins, 3, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

/* Col2Im sums blocks into the image: its adjoint is the im2col of dy */
RULE(r_col2im)
{
    lt_ival *ins[4] = {G, in[0], in[1], in[2]};
    lt_node *k = grad_op(c, n, LT_OP_COL2_IM_GRAD, 4, ins, 4, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

/* ---- MaxUnpool ---- */

/* dy cut or zero-padded at the end of each spatial axis from output_shape's
 * sizes to the default unpooled ones, (in - 1) * stride + kernel - pads,
 * which the indices address (NULL where the attributes disagree) */
static lt_ival *to_default_shape(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *g, lt_ival *os)
{
    int nk, ns = 0, np = 0;
    const int64_t *ker = lt_attr_ints(n, "kernel_shape", &nk), *st = lt_attr_ints(n, "strides", &ns);
    const int64_t *pads = lt_attr_ints(n, "pads", &np);
    if (!ker || nk < 1 || nk > LT_MAX_RANK - 2 || (st && ns != nk) || (pads && np != 2 * nk))
        return NULL;
    int64_t sv[LT_MAX_RANK], rest[LT_MAX_RANK], axes[LT_MAX_RANK], zeros[LT_MAX_RANK] = {0};
    for (int i = 0; i < nk; i++) {
        sv[i] = st ? st[i] : 1;
        rest[i] = ker[i] - (pads ? pads[i] + pads[nk + i] : 0) - sv[i];
        axes[i] = 2 + i;
    }
    lt_ival *spatial = slice(c, OP1(SHAPE, in[0]), INTS(2), INTS(INT64_MAX), INTS(0));
    lt_ival *dflt = OP2(ADD, OP2(MUL, spatial, lt_ad_ints(c, nk, sv)), lt_ad_ints(c, nk, rest));
    lt_ival *given = slice(c, as_i64(c, os), INTS(2), INTS(INT64_MAX), INTS(0));
    lt_ival *grow = OP2(MAX, OP2(SUB, dflt, given), lt_ad_scalar(c, LT_I64, 0));
    lt_ival *padded = pad_end(c, g, grow, nk, axes, K(0));
    return slice(c, padded, lt_ad_ints(c, nk, zeros), dflt, lt_ad_ints(c, nk, axes));
}

/* dx = dy at the indices. Where indices repeat the forward's last write
 * wins, so only that element gets the gradient: the largest element number
 * scattered to each place tells which. */
RULE(r_max_unpool)
{
    lt_ival *x = in[0], *g = G, *os = arg(n, in, 2);
    if (os && !(g = to_default_shape(c, n, in, G, os)))
        return lt_ad_fail(c, n, "kernel_shape, strides and pads must agree to be differentiated");
    lt_ival *idx = OP2(RESHAPE, in[1], INTS(-1)), *gf = OP2(RESHAPE, g, INTS(-1));
    lt_ival *num = OP3(RANGE, lt_ad_scalar(c, LT_I64, 0), OP1(SIZE, x), lt_ad_scalar(c, LT_I64, 1));
    lt_ival *ins[3] = {lt_ad_more_cast(c, lt_ad_zeros_like(c, gf), LT_I64), idx, num};
    lt_node *k = emit(c, LT_OP_SCATTER_ELEMENTS, 3, ins, 3, 1);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "axis", 0);
    lt_ad_more_attr_str(c, k, "reduction", "max");
    lt_ad_infer(c, k);
    lt_ival *last = OP2(EQUAL, OP2(GATHER, k->out[0], idx), num);
    lt_ival *v = OP3(WHERE, last, OP2(GATHER, gf, idx), K(0));
    return ACC(0, OP2(RESHAPE, v, OP1(SHAPE, x)));
}

/* ---- DFT and STFT ---- */

/* The DFT of g along axis (the attribute, or the opset-20 input axis_in)
 * over len points, the other way round from inverse, onesided as asked: g
 * is zero-padded to len, as a onesided output's missing bins are zero. */
static lt_ival *adjoint_dft(lt_ad *c, const lt_node *n, lt_ival *g, lt_ival *len, bool inverse, bool onesided,
                            int64_t axis, lt_ival *axis_in)
{
    bool v20 = n->opset >= 20;
    lt_ival *ins[3] = {g, len, axis_in};
    lt_node *k = emit(c, LT_OP_DFT, v20 && axis_in ? 3 : 2, ins, 2, 1);
    if (!k)
        return NULL;
    if (v20)
        k->opset = n->opset;
    else
        lt_ad_attr_int(c, k, "axis", axis);
    lt_ad_attr_int(c, k, "inverse", !inverse);
    lt_ad_attr_int(c, k, "onesided", onesided);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* v zero-padded along the axis axv by before and after elements (int64
 * vectors of one element) */
static lt_ival *pad_axis(lt_ad *c, lt_ival *v, lt_ival *before, lt_ival *after, lt_ival *axv)
{
    lt_ival *parts[2] = {before, after};
    lt_node *cat = emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return NULL;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *zero = lt_ad_scalar(c, lt_ad_more_fdt(v), 0);
    lt_ival *pins[4] = {v, cat->out[0], zero, axv};
    lt_node *p = emit(c, LT_OP_PAD, 4, pins, 4, 1);
    if (!p)
        return NULL;
    lt_ad_infer(c, p);
    return p->out[0];
}

/* r (len bins along axv) cut or zero-padded to nin bins */
static lt_ival *to_length(lt_ad *c, lt_ival *r, lt_ival *len, lt_ival *nin, lt_ival *axv)
{
    lt_ival *grow = OP2(MAX, OP2(SUB, nin, len), lt_ad_scalar(c, LT_I64, 0));
    return slice(c, pad_axis(c, r, INTS(0), grow, axv), INTS(0), nin, axv);
}

/* The irfft (inverse and onesided): y_j = (1/n) sum_k w_k Re(X_k e^(2 pi i
 * jk / n)) over the h = n/2 + 1 bins read, w_k = 1 for bin 0 and (n even)
 * bin n/2, whose mirror images are themselves, and 2 for the others. The
 * adjoint is dX_k = (w_k / n) sum_j dy_j e^(-2 pi i jk / n): the onesided
 * forward DFT of dy scaled by 2/n, less 1/n of bin 0 and of bin n/2. */
static lt_ival *irfft_adjoint(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *g, lt_ival *len, int64_t axis,
                              lt_ival *axis_in, lt_ival *axv, lt_ival *nin)
{
    lt_ival *x = in[0], *two = INTS(2), *one = INTS(1);
    lt_ival *npts = len ? OP2(RESHAPE, as_i64(c, len), one) : OP2(MUL, OP2(SUB, nin, one), two);
    lt_ival *h = OP2(ADD, OP2(DIV, npts, two), one), *last = OP2(SUB, h, one);
    lt_ival *a = adjoint_dft(c, n, g, npts, true, true, axis, axis_in);
    if (!a)
        return NULL;
    lt_ival *scale = lt_ad_more_cast(c, npts, lt_ad_more_fdt(x));
    lt_ival *even = lt_ad_more_cast(c, OP2(SUB, one, OP2(MOD, npts, two)), lt_ad_more_fdt(x));
    lt_ival *dc = OP2(DIV, slice(c, a, INTS(0), one, axv), scale);
    lt_ival *nyq = OP2(MUL, OP2(DIV, slice(c, a, last, h, axv), scale), even);
    lt_ival *r = OP2(DIV, OP2(MUL, a, K(2)), scale);
    r = OP2(SUB, r, pad_axis(c, dc, INTS(0), last, axv));
    r = OP2(SUB, r, pad_axis(c, nyq, last, INTS(0), axv));
    return to_length(c, r, h, nin, axv);
}

/* Y_k = sum_j x_j F_kj with F_kj = e^(-2 pi i jk / n) (e^(+...) / n when
 * inverse), for k below n (n/2 + 1 when onesided), x cut or zero-padded to
 * n along the axis. As a real-linear map its adjoint is dx_j = sum_k dy_k
 * conj(F_kj): n times the inverse transform of dy, or the forward one over
 * n; then cut or padded back to x's length, and the real part alone for a
 * real x. */
RULE(r_dft)
{
    lt_ival *x = in[0], *len = arg(n, in, 1), *axis_in = n->opset >= 20 ? arg(n, in, 2) : NULL;
    bool inverse = lt_attr_int(n, "inverse", 0) != 0, onesided = lt_attr_int(n, "onesided", 0) != 0;
    int64_t axis = n->opset >= 20 ? -2 : lt_attr_int(n, "axis", 1);
    lt_ival *axv = axis_in ? OP2(RESHAPE, as_i64(c, axis_in), INTS(1)) : lt_ad_ints(c, 1, &axis);
    lt_ival *sx = OP1(SHAPE, x), *nin = OP2(GATHER, sx, axv), *r;
    if (inverse && onesided) {
        r = irfft_adjoint(c, n, in, G, len, axis, axis_in, axv, nin);
    } else {
        lt_ival *npts = len ? OP2(RESHAPE, as_i64(c, len), INTS(1)) : nin;
        lt_ival *t = adjoint_dft(c, n, G, npts, inverse, false, axis, axis_in);
        lt_ival *scale = lt_ad_more_cast(c, npts, lt_ad_more_fdt(x));
        r = inverse ? OP2(DIV, t, scale) : OP2(MUL, t, scale);
        if (len) /* the transform's length back to x's along the axis */
            r = to_length(c, r, npts, nin, axv);
    }
    if (!r)
        return LT_ERR_NOMEM;
    const lt_type *xt = &x->type;
    bool complex = xt->rank > 0 && xt->dims[xt->rank - 1].sym < 0 && xt->dims[xt->rank - 1].v == 2;
    if (!complex) {
        bool real = xt->rank > 0 && xt->dims[xt->rank - 1].sym < 0 && xt->dims[xt->rank - 1].v == 1;
        r = slice(c, r, INTS(0), real ? INTS(1) : OP2(GATHER, sx, INTS(-1)), INTS(-1));
    }
    return ACC(0, r);
}

/* Each frame is windowed, then transformed as DFT does (onesided by
 * default): dy goes back through the adjoint transform of every frame (n
 * times the inverse DFT over the frame length), and STFTGrad undoes the
 * windowing and the framing. */
RULE(r_stft)
{
    lt_ival *win = arg(n, in, 2), *fl = arg(n, in, 3);
    bool wx = lt_ad_wants(c, n, 0), ww = win && lt_ad_wants(c, n, 2);
    if (!wx && !ww)
        return LT_OK;
    if (!fl && !win)
        return lt_ad_fail(c, n, "needs frame_length or a window to be differentiated");
    lt_ival *npts = fl ? OP2(RESHAPE, as_i64(c, fl), INTS(1)) : OP2(GATHER, OP1(SHAPE, win), INTS(0));
    lt_ival *ins[2] = {G, npts};
    lt_node *d = emit(c, LT_OP_DFT, 2, ins, 2, 1);
    if (!d)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, d, "axis", 2);
    lt_ad_attr_int(c, d, "inverse", 1);
    lt_ad_attr_int(c, d, "onesided", 0);
    lt_ad_infer(c, d);
    lt_ival *frames = OP2(MUL, d->out[0], lt_ad_more_cast(c, npts, lt_ad_more_fdt(in[0])));
    lt_ival *gins[4] = {frames, in[0], in[1], win};
    lt_node *k = grad_op(c, n, LT_OP_STFT_GRAD, win ? 4 : 3, gins, 3, 2);
    if (!k)
        return LT_ERR_NOMEM;
    if (!wx)
        k->out[0] = NULL;
    if (!ww)
        k->out[1] = NULL;
    lt_status s = wx ? ACC(0, k->out[0]) : LT_OK;
    if (s == LT_OK && ww)
        s = ACC(2, k->out[1]);
    return s;
}

/* ---- DequantizeLinear ---- */

/* v summed over axes (every axis when all), keepdims 0 */
static lt_ival *sum_over(lt_ad *c, lt_ival *v, bool all, int na, const int64_t *axes)
{
    if (!all && na == 0)
        return v;
    lt_ival *ins[2] = {v, all ? NULL : lt_ad_ints(c, na, axes)};
    lt_node *k = emit(c, LT_OP_REDUCE_SUM, all ? 1 : 2, ins, all ? 1 : 2, 1);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "keepdims", 0);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* y = (x - zero_point) * scale, per tensor or per slice along axis: the
 * scale's gradient is sum(dy x) - zero_point sum(dy) over what it scales
 * (x and the zero point are integers) */
RULE(r_dequantize_linear)
{
    lt_ival *x = in[0], *sc = in[1], *zp = arg(n, in, 2);
    const lt_type *st = &sc->type;
    if (lt_attr_int(n, "block_size", 0) > 0)
        return lt_ad_fail(c, n, "a block-quantized x_scale (block_size) is not differentiated");
    if (st->rank < 0 || st->rank > 1)
        return lt_ad_fail(c, n, "x_scale must be known to be a scalar or 1-D to be differentiated");
    /* a 1-D scale of one element scales the whole tensor, as the kernel reads it */
    bool per_axis = st->rank == 1 && !(st->dims[0].sym < 0 && st->dims[0].v == 1);
    int64_t axes[LT_MAX_RANK];
    int na = 0, r = x->type.rank;
    if (per_axis) {
        int64_t axis = lt_attr_int(n, "axis", 1);
        if (r < 0)
            return lt_ad_fail(c, n, "a per-axis x_scale needs x's rank to be differentiated");
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r)
            return lt_ad_fail(c, n, "axis %lld is out of range for rank %d", (long long)lt_attr_int(n, "axis", 1),
                              r);
        for (int i = 0; i < r; i++)
            if (i != axis)
                axes[na++] = i;
    }
    lt_dtype ft = G->type.dtype != LT_UNDEFINED ? G->type.dtype : lt_ad_more_fdt(sc);
    lt_ival *v = sum_over(c, OP2(MUL, G, lt_ad_more_cast(c, x, ft)), !per_axis, na, axes);
    if (zp)
        v = OP2(SUB, v, OP2(MUL, lt_ad_more_cast(c, zp, ft), sum_over(c, G, !per_axis, na, axes)));
    return ACC(1, per_axis ? lt_ad_unbroadcast(c, v, sc) : OP2(RESHAPE, v, OP1(SHAPE, sc)));
}

/* ---- Range and OneHot ---- */

/* v summed to a scalar, shaped like like (a scalar or a one-element tensor) */
static lt_ival *total_like(lt_ad *c, lt_ival *v, lt_ival *like)
{
    return OP2(RESHAPE, sum_over(c, v, true, 0, NULL), OP1(SHAPE, like));
}

/* y_i = start + i delta: start collects sum(dy), delta sum(i dy); limit
 * only sets the length, which is piecewise constant */
RULE(r_range)
{
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, total_like(c, G, in[0]));
    if (s == LT_OK && lt_ad_wants(c, n, 2)) {
        lt_ival *i = OP3(RANGE, lt_ad_scalar(c, LT_I64, 0), OP1(SIZE, out[0]), lt_ad_scalar(c, LT_I64, 1));
        s = ACC(2, total_like(c, OP2(MUL, G, lt_ad_more_cast(c, i, lt_ad_more_fdt(in[2]))), in[2]));
    }
    return s;
}

/* values = [off, on]: on collects dy where an index hits (the same OneHot
 * with values [0, 1] marks them), off the rest */
RULE(r_one_hot)
{
    lt_ival *vals = in[2];
    lt_dtype dt = lt_ad_more_fdt(vals);
    lt_ival *parts[2] = {OP2(RESHAPE, lt_ad_scalar(c, dt, 0), INTS(1)), OP2(RESHAPE, lt_ad_scalar(c, dt, 1), INTS(1))};
    lt_node *cat = emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *ins[3] = {in[0], in[1], cat->out[0]};
    lt_node *k = emit(c, LT_OP_ONE_HOT, 3, ins, 3, 1);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    lt_ival *on = sum_over(c, OP2(MUL, G, k->out[0]), true, 0, NULL);
    lt_ival *off = OP2(SUB, sum_over(c, G, true, 0, NULL), on);
    lt_ival *both[2] = {OP2(RESHAPE, off, INTS(1)), OP2(RESHAPE, on, INTS(1))};
    lt_node *v = emit(c, LT_OP_CONCAT, 2, both, 2, 1);
    if (!v)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, v, "axis", 0);
    lt_ad_infer(c, v);
    return ACC(2, OP2(RESHAPE, v->out[0], OP1(SHAPE, vals)));
}

void lt_ad_register_extra(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_GRID_SAMPLE] = r_grid_sample;
    t[LT_OP_ROI_ALIGN] = r_roi_align;
    t[LT_OP_MAX_ROI_POOL] = r_max_roi_pool;
    t[LT_OP_MAX_UNPOOL] = r_max_unpool;
    t[LT_OP_COL2_IM] = r_col2im;
    t[LT_OP_DFT] = r_dft;
    t[LT_OP_STFT] = r_stft;
    t[LT_OP_DEQUANTIZE_LINEAR] = r_dequantize_linear;
    t[LT_OP_RANGE] = r_range;
    t[LT_OP_ONE_HOT] = r_one_hot;
    /* The boxes are constants, as detection training treats its proposals
     * (torchvision and Detectron2 give them no gradient); MaxRoiPool rounds
     * them to pixels, so its gradient there is zero anyway. */
    nd[LT_OP_ROI_ALIGN] = (1u << 1) | (1u << 2);
    nd[LT_OP_MAX_ROI_POOL] = 1u << 1;
    nd[LT_OP_MAX_UNPOOL] = (1u << 1) | (1u << 2);
    nd[LT_OP_COL2_IM] = (1u << 1) | (1u << 2);
    nd[LT_OP_DFT] = (1u << 1) | (1u << 2);
    nd[LT_OP_STFT] = (1u << 1) | (1u << 3);
    nd[LT_OP_DEQUANTIZE_LINEAR] = (1u << 0) | (1u << 2);
    nd[LT_OP_RANGE] = 1u << 1;
    nd[LT_OP_ONE_HOT] = (1u << 0) | (1u << 1); /* indices and depth may be float: they only select */
    /* outputs that read only their input's shape and type (EyeLike, the
     * random *Like ops) or that are samples, piecewise constant in the
     * probabilities (Bernoulli) */
    nd[LT_OP_EYE_LIKE] = ~0u;
    nd[LT_OP_RANDOM_NORMAL_LIKE] = ~0u;
    nd[LT_OP_RANDOM_UNIFORM_LIKE] = ~0u;
    nd[LT_OP_BERNOULLI] = ~0u;
    /* QuantizeLinear's output is an integer tensor, which carries no adjoint
     * (only float values are differentiated), and rounding makes it
     * piecewise constant in x and the scale anyway. A straight-through
     * estimator for Quantize-Dequantize pairs would need the integer link
     * between them to carry an adjoint, which the transform does not do. */
    nd[LT_OP_QUANTIZE_LINEAR] = ~0u;
}
