/* CPU kernel: DeformConv (opset 19), 2-D. Each kernel tap of output (i, j)
 * samples its input channel bilinearly at the tap's regular place moved by
 * its offset (zeros outside the image), times the optional mask, times the
 * weight. Offsets and masks come per offset group of input channels.
 * Computed in double for every float type. */
#include "norm_util.h"
#include <math.h>
#include <string.h>

/* bilinear sample of the h x w plane x at (y, z), zeros outside */
static double sample(const double *x, int64_t h, int64_t w, double y, double z)
{
    double fy = floor(y), fz = floor(z), ay = y - fy, az = z - fz, s = 0;
    int64_t y0 = (int64_t)fy, z0 = (int64_t)fz;
    for (int dy = 0; dy < 2; dy++)
        for (int dz = 0; dz < 2; dz++) {
            int64_t yy = y0 + dy, zz = z0 + dz;
            if (yy < 0 || yy >= h || zz < 0 || zz >= w)
                continue;
            double wt = (dy ? ay : 1 - ay) * (dz ? az : 1 - az);
            if (wt != 0)
                s += wt * x[yy * w + zz];
        }
    return s;
}

/* attribute list `name` of two values, else dflt */
static void pair_attr(const lt_node *n, const char *name, int64_t dflt, int64_t *v, int want)
{
    int len = 0;
    const int64_t *a = lt_attr_ints(n, name, &len);
    for (int i = 0; i < want; i++)
        v[i] = a && len == want ? a[i] : dflt;
}

static lt_status deform_conv(lt_kctx *k)
{
    const lt_tensor *xt = lt_k_in(k, 0), *wt = lt_k_in(k, 1), *ot = lt_k_in(k, 2), *bt = lt_k_in(k, 3);
    const lt_tensor *mt = lt_k_in(k, 4);
    if (!xt || !wt || !ot)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X, W and offset");
    if (xt->rank != 4 || wt->rank != 4 || ot->rank != 4 || !lt_dtype_is_float(xt->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "only 2-D DeformConv is implemented (X, W, offset of rank 4)");
    int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], Wd = xt->dims[3];
    int64_t OC = wt->dims[0], CG = wt->dims[1], KH = wt->dims[2], KW = wt->dims[3];
    int64_t group = lt_attr_int(k->node, "group", 1), og = lt_attr_int(k->node, "offset_group", 1);
    int64_t ks[2], st[2], dl[2], pads[4];
    pair_attr(k->node, "kernel_shape", 0, ks, 2);
    pair_attr(k->node, "strides", 1, st, 2);
    pair_attr(k->node, "dilations", 1, dl, 2);
    pair_attr(k->node, "pads", 0, pads, 4);
    if ((ks[0] && ks[0] != KH) || (ks[1] && ks[1] != KW))
        return lt_k_fail(k, LT_ERR_RUNTIME, "kernel_shape does not match W's %lldx%lld", (long long)KH, (long long)KW);
    if (group <= 0 || og <= 0 || C != CG * group || OC % group || C % og)
        return lt_k_fail(k, LT_ERR_RUNTIME, "channels %lld, W (%lld, %lld), group %lld, offset_group %lld do not fit",
                         (long long)C, (long long)OC, (long long)CG, (long long)group, (long long)og);
    int64_t OH = ot->dims[2], OW = ot->dims[3], taps = KH * KW;
    int64_t eh = (H + pads[0] + pads[2] - ((KH - 1) * dl[0] + 1)) / st[0] + 1;
    int64_t ew = (Wd + pads[1] + pads[3] - ((KW - 1) * dl[1] + 1)) / st[1] + 1;
    if (ot->dims[0] != N || ot->dims[1] != og * taps * 2 || OH != eh || OW != ew)
        return lt_k_fail(k, LT_ERR_RUNTIME, "offset must be (%lld, %lld, %lld, %lld)", (long long)N,
                         (long long)(og * taps * 2), (long long)eh, (long long)ew);
    if (bt && bt->numel != OC)
        return lt_k_fail(k, LT_ERR_RUNTIME, "B must have %lld elements", (long long)OC);
    if (mt && (mt->rank != 4 || mt->dims[0] != N || mt->dims[1] != og * taps || mt->dims[2] != OH || mt->dims[3] != OW))
        return lt_k_fail(k, LT_ERR_RUNTIME, "mask must be (%lld, %lld, %lld, %lld)", (long long)N,
                         (long long)(og * taps), (long long)OH, (long long)OW);
    const double *x = lt_nu_as_f64(k, xt), *w = x ? lt_nu_as_f64(k, wt) : NULL;
    const double *off = w ? lt_nu_as_f64(k, ot) : NULL;
    const double *b = off && bt ? lt_nu_as_f64(k, bt) : NULL, *m = off && mt ? lt_nu_as_f64(k, mt) : NULL;
    int64_t ocg = OC / group, cpo = C / og;
    double *y = off && (!bt || b) && (!mt || m) ? lt_nu_scratch(k, N * OC * OH * OW, sizeof *y) : NULL;
    /* the sampled columns of one image: [C, taps, OH * OW] */
    double *col = y ? lt_nu_scratch(k, C * taps * OH * OW, sizeof *col) : NULL;
    if (!col)
        return LT_ERR_RUNTIME;
    int64_t P = OH * OW;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            int64_t g = c / cpo;
            const double *xc = x + (n * C + c) * H * Wd;
            for (int64_t t = 0; t < taps; t++) {
                int64_t kh = t / KW, kw = t % KW;
                const double *oy = off + ((n * og + g) * taps * 2 + 2 * t) * P, *ox = oy + P;
                const double *mk = m ? m + ((n * og + g) * taps + t) * P : NULL;
                for (int64_t i = 0; i < OH; i++)
                    for (int64_t j = 0; j < OW; j++) {
                        int64_t p = i * OW + j;
                        double yy = (double)(i * st[0] - pads[0] + kh * dl[0]) + oy[p];
                        double zz = (double)(j * st[1] - pads[1] + kw * dl[1]) + ox[p];
                        double v = sample(xc, H, Wd, yy, zz);
                        col[(c * taps + t) * P + p] = mk ? v * mk[p] : v;
                    }
            }
        }
        for (int64_t o = 0; o < OC; o++) {
            double *yo = y + (n * OC + o) * P;
            int64_t g = o / ocg;
            for (int64_t p = 0; p < P; p++)
                yo[p] = b ? b[o] : 0;
            for (int64_t ci = 0; ci < CG; ci++)
                for (int64_t t = 0; t < taps; t++) {
                    double wv = w[(o * CG + ci) * taps + t];
                    const double *cc = col + ((g * CG + ci) * taps + t) * P;
                    for (int64_t p = 0; p < P; p++)
                        yo[p] += wv * cc[p];
                }
        }
    }
    int64_t yd[4] = {N, OC, OH, OW};
    lt_tensor *yt;
    lt_status s = lt_k_out(k, 0, xt->dtype, 4, yd, &yt);
    if (s == LT_OK)
        lt_nu_store_f64(yt, y);
    return s;
}

void lt_cpu_register_deform_conv(lt_kernel_fn *tab) { tab[LT_OP_DEFORM_CONV] = deform_conv; }
