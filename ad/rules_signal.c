/* Gradient rules: DFT and STFT, linear maps whose adjoint is a DFT the
 * other way round. */
#include "rules_util.h"
#include <string.h>

/* ---- DFT and STFT ---- */

/* The DFT of g along axis (the attribute, or the opset-20 input axis_in)
 * over len points, the other way round from inverse, onesided as asked: g
 * is zero-padded to len, as a onesided output's missing bins are zero. */
static lt_ival *adjoint_dft(lt_ad *c, const lt_node *n, lt_ival *g, lt_ival *len, bool inverse, bool onesided,
                            int64_t axis, lt_ival *axis_in)
{
    bool v20 = n->opset >= 20;
    lt_ival *ins[3] = {g, len, axis_in};
    lt_node *k = lt_ad_emit(c, LT_OP_DFT, v20 && axis_in ? 3 : 2, ins, 2, 1);
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
    lt_node *cat = lt_ad_emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return NULL;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *zero = lt_ad_scalar(c, lt_ad_float_dtype(v), 0);
    lt_ival *pins[4] = {v, cat->out[0], zero, axv};
    lt_node *p = lt_ad_emit(c, LT_OP_PAD, 4, pins, 4, 1);
    if (!p)
        return NULL;
    lt_ad_infer(c, p);
    return p->out[0];
}

/* r (len bins along axv) cut or zero-padded to nin bins */
static lt_ival *to_length(lt_ad *c, lt_ival *r, lt_ival *len, lt_ival *nin, lt_ival *axv)
{
    lt_ival *grow = OP2(MAX, OP2(SUB, nin, len), lt_ad_scalar(c, LT_I64, 0));
    return lt_ad_slice(c, pad_axis(c, r, INTS(0), grow, axv), INTS(0), nin, axv);
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
    lt_ival *npts = len ? OP2(RESHAPE, lt_ad_as_i64(c, len), one) : OP2(MUL, OP2(SUB, nin, one), two);
    lt_ival *h = OP2(ADD, OP2(DIV, npts, two), one), *last = OP2(SUB, h, one);
    lt_ival *a = adjoint_dft(c, n, g, npts, true, true, axis, axis_in);
    if (!a)
        return NULL;
    lt_ival *scale = lt_ad_cast(c, npts, lt_ad_float_dtype(x));
    lt_ival *even = lt_ad_cast(c, OP2(SUB, one, OP2(MOD, npts, two)), lt_ad_float_dtype(x));
    lt_ival *dc = OP2(DIV, lt_ad_slice(c, a, INTS(0), one, axv), scale);
    lt_ival *nyq = OP2(MUL, OP2(DIV, lt_ad_slice(c, a, last, h, axv), scale), even);
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
    lt_ival *x = in[0], *len = lt_ad_arg(n, in, 1), *axis_in = n->opset >= 20 ? lt_ad_arg(n, in, 2) : NULL;
    bool inverse = lt_attr_int(n, "inverse", 0) != 0, onesided = lt_attr_int(n, "onesided", 0) != 0;
    int64_t axis = n->opset >= 20 ? -2 : lt_attr_int(n, "axis", 1);
    lt_ival *axv = axis_in ? OP2(RESHAPE, lt_ad_as_i64(c, axis_in), INTS(1)) : lt_ad_ints(c, 1, &axis);
    lt_ival *sx = OP1(SHAPE, x), *nin = OP2(GATHER, sx, axv), *r;
    if (inverse && onesided) {
        r = irfft_adjoint(c, n, in, G, len, axis, axis_in, axv, nin);
    } else {
        lt_ival *npts = len ? OP2(RESHAPE, lt_ad_as_i64(c, len), INTS(1)) : nin;
        lt_ival *t = adjoint_dft(c, n, G, npts, inverse, false, axis, axis_in);
        lt_ival *scale = lt_ad_cast(c, npts, lt_ad_float_dtype(x));
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
        r = lt_ad_slice(c, r, INTS(0), real ? INTS(1) : OP2(GATHER, sx, INTS(-1)), INTS(-1));
    }
    return ACC(0, r);
}

/* Each frame is windowed, then transformed as DFT does (onesided by
 * default): dy goes back through the adjoint transform of every frame (n
 * times the inverse DFT over the frame length), and STFTGrad undoes the
 * windowing and the framing. */
RULE(r_stft)
{
    lt_ival *win = lt_ad_arg(n, in, 2), *fl = lt_ad_arg(n, in, 3);
    bool wx = lt_ad_wants(c, n, 0), ww = win && lt_ad_wants(c, n, 2);
    if (!wx && !ww)
        return LT_OK;
    if (!fl && !win)
        return lt_ad_fail(c, n, "needs frame_length or a window to be differentiated");
    lt_ival *npts = fl ? OP2(RESHAPE, lt_ad_as_i64(c, fl), INTS(1)) : OP2(GATHER, OP1(SHAPE, win), INTS(0));
    lt_ival *ins[2] = {G, npts};
    lt_node *d = lt_ad_emit(c, LT_OP_DFT, 2, ins, 2, 1);
    if (!d)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, d, "axis", 2);
    lt_ad_attr_int(c, d, "inverse", 1);
    lt_ad_attr_int(c, d, "onesided", 0);
    lt_ad_infer(c, d);
    lt_ival *frames = OP2(MUL, d->out[0], lt_ad_cast(c, npts, lt_ad_float_dtype(in[0])));
    lt_ival *gins[4] = {frames, in[0], in[1], win};
    lt_node *k = lt_ad_emit_grad(c, n, LT_OP_STFT_GRAD, win ? 4 : 3, gins, 3, 2);
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

void lt_ad_register_signal(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_DFT] = r_dft;
    t[LT_OP_STFT] = r_stft;
    nd[LT_OP_DFT] = (1u << 1) | (1u << 2);
    nd[LT_OP_STFT] = (1u << 1) | (1u << 3);
}
