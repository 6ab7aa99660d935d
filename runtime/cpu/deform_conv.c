/* CPU kernels: DeformConv (opset 19), 2-D, and its gradient. Each kernel tap of output (i, j)
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

/* The shapes and attributes of one DeformConv node, checked. */
typedef struct dc_geom {
    int64_t N, C, H, W, OC, CG, KH, KW, OH, OW, taps, group, og, ocg, cpo;
    int64_t st[2], dl[2], pads[4];
} dc_geom;

static lt_status dc_check(lt_kctx *k, const lt_tensor *xt, const lt_tensor *wt, const lt_tensor *ot,
                          const lt_tensor *bt, const lt_tensor *mt, dc_geom *g)
{
    if (!xt || !wt || !ot)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X, W and offset");
    if (xt->rank != 4 || wt->rank != 4 || ot->rank != 4 || !lt_dtype_is_float(xt->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "only 2-D DeformConv is implemented (X, W, offset of rank 4)");
    g->N = xt->dims[0], g->C = xt->dims[1], g->H = xt->dims[2], g->W = xt->dims[3];
    g->OC = wt->dims[0], g->CG = wt->dims[1], g->KH = wt->dims[2], g->KW = wt->dims[3];
    g->group = lt_attr_int(k->node, "group", 1), g->og = lt_attr_int(k->node, "offset_group", 1);
    int64_t ks[2];
    pair_attr(k->node, "kernel_shape", 0, ks, 2);
    pair_attr(k->node, "strides", 1, g->st, 2);
    pair_attr(k->node, "dilations", 1, g->dl, 2);
    pair_attr(k->node, "pads", 0, g->pads, 4);
    if ((ks[0] && ks[0] != g->KH) || (ks[1] && ks[1] != g->KW))
        return lt_k_fail(k, LT_ERR_RUNTIME, "kernel_shape does not match W's %lldx%lld", (long long)g->KH,
                         (long long)g->KW);
    if (g->group <= 0 || g->og <= 0 || g->C != g->CG * g->group || g->OC % g->group || g->C % g->og)
        return lt_k_fail(k, LT_ERR_RUNTIME, "channels %lld, W (%lld, %lld), group %lld, offset_group %lld do not fit",
                         (long long)g->C, (long long)g->OC, (long long)g->CG, (long long)g->group, (long long)g->og);
    g->OH = ot->dims[2], g->OW = ot->dims[3], g->taps = g->KH * g->KW;
    int64_t eh = (g->H + g->pads[0] + g->pads[2] - ((g->KH - 1) * g->dl[0] + 1)) / g->st[0] + 1;
    int64_t ew = (g->W + g->pads[1] + g->pads[3] - ((g->KW - 1) * g->dl[1] + 1)) / g->st[1] + 1;
    if (ot->dims[0] != g->N || ot->dims[1] != g->og * g->taps * 2 || g->OH != eh || g->OW != ew)
        return lt_k_fail(k, LT_ERR_RUNTIME, "offset must be (%lld, %lld, %lld, %lld)", (long long)g->N,
                         (long long)(g->og * g->taps * 2), (long long)eh, (long long)ew);
    if (bt && bt->numel != g->OC)
        return lt_k_fail(k, LT_ERR_RUNTIME, "B must have %lld elements", (long long)g->OC);
    if (mt && (mt->rank != 4 || mt->dims[0] != g->N || mt->dims[1] != g->og * g->taps || mt->dims[2] != g->OH ||
               mt->dims[3] != g->OW))
        return lt_k_fail(k, LT_ERR_RUNTIME, "mask must be (%lld, %lld, %lld, %lld)", (long long)g->N,
                         (long long)(g->og * g->taps), (long long)g->OH, (long long)g->OW);
    g->ocg = g->OC / g->group, g->cpo = g->C / g->og;
    return LT_OK;
}

/* where tap t of output p samples, for image n and offset group og_i */
static void dc_place(const dc_geom *g, const double *off, int64_t n, int64_t og_i, int64_t t, int64_t p, double *yy,
                     double *zz)
{
    int64_t P = g->OH * g->OW, kh = t / g->KW, kw = t % g->KW, i = p / g->OW, j = p % g->OW;
    const double *oy = off + ((n * g->og + og_i) * g->taps * 2 + 2 * t) * P, *ox = oy + P;
    *yy = (double)(i * g->st[0] - g->pads[0] + kh * g->dl[0]) + oy[p];
    *zz = (double)(j * g->st[1] - g->pads[1] + kw * g->dl[1]) + ox[p];
}

static lt_status deform_conv(lt_kctx *k)
{
    const lt_tensor *xt = lt_k_in(k, 0), *wt = lt_k_in(k, 1), *ot = lt_k_in(k, 2), *bt = lt_k_in(k, 3);
    const lt_tensor *mt = lt_k_in(k, 4);
    dc_geom g;
    lt_status s = dc_check(k, xt, wt, ot, bt, mt, &g);
    if (s != LT_OK)
        return s;
    int64_t N = g.N, C = g.C, H = g.H, Wd = g.W, OC = g.OC, CG = g.CG, taps = g.taps, OH = g.OH, OW = g.OW;
    const double *x = lt_nu_as_f64(k, xt), *w = x ? lt_nu_as_f64(k, wt) : NULL;
    const double *off = w ? lt_nu_as_f64(k, ot) : NULL;
    const double *b = off && bt ? lt_nu_as_f64(k, bt) : NULL, *m = off && mt ? lt_nu_as_f64(k, mt) : NULL;
    int64_t ocg = g.ocg, cpo = g.cpo, og = g.og;
    double *y = off && (!bt || b) && (!mt || m) ? lt_nu_scratch(k, N * OC * OH * OW, sizeof *y) : NULL;
    /* the sampled columns of one image: [C, taps, OH * OW] */
    double *col = y ? lt_nu_scratch(k, C * taps * OH * OW, sizeof *col) : NULL;
    if (!col)
        return LT_ERR_RUNTIME;
    int64_t P = OH * OW;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            int64_t gi = c / cpo;
            const double *xc = x + (n * C + c) * H * Wd;
            for (int64_t t = 0; t < taps; t++) {
                const double *mk = m ? m + ((n * og + gi) * taps + t) * P : NULL;
                for (int64_t p = 0; p < P; p++) {
                    double yy, zz;
                    dc_place(&g, off, n, gi, t, p, &yy, &zz);
                    double v = sample(xc, H, Wd, yy, zz);
                    col[(c * taps + t) * P + p] = mk ? v * mk[p] : v;
                }
            }
        }
        for (int64_t o = 0; o < OC; o++) {
            double *yo = y + (n * OC + o) * P;
            int64_t gi = o / ocg;
            for (int64_t p = 0; p < P; p++)
                yo[p] = b ? b[o] : 0;
            for (int64_t ci = 0; ci < CG; ci++)
                for (int64_t t = 0; t < taps; t++) {
                    double wv = w[(o * CG + ci) * taps + t];
                    const double *cc = col + ((gi * CG + ci) * taps + t) * P;
                    for (int64_t p = 0; p < P; p++)
                        yo[p] += wv * cc[p];
                }
        }
    }
    int64_t yd[4] = {N, OC, OH, OW};
    lt_tensor *yt;
    s = lt_k_out(k, 0, xt->dtype, 4, yd, &yt);
    if (s == LT_OK)
        lt_nu_store_f64(yt, y);
    return s;
}

/* DeformConvGrad (dy, X, W, offset, B, mask) -> dX, dW, doffset, dB, dmask.
 * With v the bilinear sample of tap t at output p and m its mask, the
 * forward is y[o, p] = B[o] + sum W[o, c, t] m v. Per image: dcol[c, t, p]
 * = sum over o of c's group of W[o, c, t] dy[o, p]; dW contracts dy with the
 * columns m v; dmask sums dcol v over the offset group's channels; dcol m
 * goes back to X through the four bilinear weights, and to the offsets
 * through the weights' derivatives along y and x (one-sided at integer
 * positions, where the sample is not differentiable). */
static lt_status deform_conv_grad(lt_kctx *k)
{
    const lt_tensor *dyt = lt_k_in(k, 0), *xt = lt_k_in(k, 1), *wt = lt_k_in(k, 2), *ot = lt_k_in(k, 3);
    const lt_tensor *bt = lt_k_in(k, 4), *mt = lt_k_in(k, 5);
    dc_geom g;
    lt_status s = dc_check(k, xt, wt, ot, bt, mt, &g);
    if (s != LT_OK)
        return s;
    int64_t N = g.N, C = g.C, H = g.H, Wd = g.W, OC = g.OC, CG = g.CG, taps = g.taps, P = g.OH * g.OW;
    if (!dyt || dyt->rank != 4 || dyt->dims[0] != N || dyt->dims[1] != OC || dyt->dims[2] != g.OH ||
        dyt->dims[3] != g.OW)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dY must be (%lld, %lld, %lld, %lld)", (long long)N, (long long)OC,
                         (long long)g.OH, (long long)g.OW);
    const double *dy = lt_nu_as_f64(k, dyt), *x = dy ? lt_nu_as_f64(k, xt) : NULL;
    const double *w = x ? lt_nu_as_f64(k, wt) : NULL, *off = w ? lt_nu_as_f64(k, ot) : NULL;
    const double *m = off && mt ? lt_nu_as_f64(k, mt) : NULL;
    if (!off || (mt && !m))
        return LT_ERR_RUNTIME;
    double *dx = lt_nu_scratch(k, N * C * H * Wd, sizeof *dx), *dw = dx ? lt_nu_scratch(k, OC * CG * taps, sizeof *dw) : NULL;
    double *doff = dw ? lt_nu_scratch(k, ot->numel, sizeof *doff) : NULL, *db = doff ? lt_nu_scratch(k, OC, sizeof *db) : NULL;
    double *dm = db ? lt_nu_scratch(k, N * g.og * taps * P, sizeof *dm) : NULL;
    double *dcol = dm ? lt_nu_scratch(k, C * taps * P, sizeof *dcol) : NULL;
    if (!dcol)
        return LT_ERR_RUNTIME;
    memset(dx, 0, sizeof *dx * (size_t)(N * C * H * Wd));
    memset(dw, 0, sizeof *dw * (size_t)(OC * CG * taps));
    memset(doff, 0, sizeof *doff * (size_t)ot->numel);
    memset(db, 0, sizeof *db * (size_t)OC);
    memset(dm, 0, sizeof *dm * (size_t)(N * g.og * taps * P));
    for (int64_t n = 0; n < N; n++) {
        const double *dyn = dy + n * OC * P;
        memset(dcol, 0, sizeof *dcol * (size_t)(C * taps * P));
        for (int64_t o = 0; o < OC; o++) {
            int64_t gi = o / g.ocg;
            const double *dyo = dyn + o * P;
            for (int64_t p = 0; p < P; p++)
                db[o] += dyo[p];
            for (int64_t ci = 0; ci < CG; ci++)
                for (int64_t t = 0; t < taps; t++) {
                    double wv = w[(o * CG + ci) * taps + t];
                    double *dc = dcol + ((gi * CG + ci) * taps + t) * P;
                    for (int64_t p = 0; p < P; p++)
                        dc[p] += wv * dyo[p];
                }
        }
        for (int64_t c = 0; c < C; c++) {
            int64_t gi = c / g.cpo, wg = c / CG, ci = c % CG;
            const double *xc = x + (n * C + c) * H * Wd;
            double *dxc = dx + (n * C + c) * H * Wd;
            for (int64_t t = 0; t < taps; t++) {
                int64_t mi = ((n * g.og + gi) * taps + t) * P, oi = ((n * g.og + gi) * taps * 2 + 2 * t) * P;
                const double *dc = dcol + (c * taps + t) * P;
                for (int64_t p = 0; p < P; p++) {
                    double yy, zz;
                    dc_place(&g, off, n, gi, t, p, &yy, &zz);
                    double fy = floor(yy), fz = floor(zz), ay = yy - fy, az = zz - fz;
                    int64_t y0 = (int64_t)fy, z0 = (int64_t)fz;
                    double v = 0, dvy = 0, dvz = 0;
                    for (int a = 0; a < 2; a++)
                        for (int b2 = 0; b2 < 2; b2++) {
                            int64_t r = y0 + a, q = z0 + b2;
                            if (r < 0 || r >= H || q < 0 || q >= Wd)
                                continue;
                            double wy = a ? ay : 1 - ay, wz = b2 ? az : 1 - az, xv = xc[r * Wd + q];
                            v += wy * wz * xv;
                            dvy += (a ? 1 : -1) * wz * xv;
                            dvz += wy * (b2 ? 1 : -1) * xv;
                        }
                    double mk = m ? m[mi + p] : 1, gv = dc[p] * mk;
                    /* dW: the columns m v against dy */
                    for (int64_t o = wg * g.ocg; o < (wg + 1) * g.ocg; o++)
                        dw[(o * CG + ci) * taps + t] += dyn[o * P + p] * mk * v;
                    dm[mi + p] += dc[p] * v;
                    doff[oi + p] += gv * dvy;
                    doff[oi + P + p] += gv * dvz;
                    if (gv == 0)
                        continue;
                    for (int a = 0; a < 2; a++)
                        for (int b2 = 0; b2 < 2; b2++) {
                            int64_t r = y0 + a, q = z0 + b2;
                            if (r >= 0 && r < H && q >= 0 && q < Wd)
                                dxc[r * Wd + q] += gv * (a ? ay : 1 - ay) * (b2 ? az : 1 - az);
                        }
                }
            }
        }
    }
    const lt_tensor *like[5] = {xt, wt, ot, bt, mt};
    double *res[5] = {dx, dw, doff, db, dm};
    for (int i = 0; i < 5 && s == LT_OK; i++) {
        if (!lt_k_want(k, i))
            continue;
        if (!like[i])
            return lt_k_fail(k, LT_ERR_RUNTIME, "output %d is wanted but its forward input is absent", i);
        lt_tensor *t;
        s = lt_k_out(k, i, like[i]->dtype, like[i]->rank, like[i]->dims, &t);
        if (s == LT_OK)
            lt_nu_store_f64(t, res[i]);
    }
    return s;
}

void lt_cpu_register_deform_conv(lt_kernel_fn *tab)
{
    tab[LT_OP_DEFORM_CONV] = deform_conv;
    tab[LT_OP_DEFORM_CONV_GRAD] = deform_conv_grad;
}
