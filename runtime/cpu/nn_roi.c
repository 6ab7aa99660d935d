/* CPU kernels: MaxUnpool, MaxRoiPool, RoiAlign. The roi layout and
 * sampling (roi_util.h) are exported for the gradients in
 * grad_roi.c. */
#include "nn_util.h"
#include "roi_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

static lt_status k_max_unpool(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *ind = lt_k_in(k, 1), *os = lt_k_in(k, 2);
    if (!x || !ind)
        return lt_k_fail(k, LT_ERR_INVALID, "needs values and indices");
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    if (ind->dtype != LT_I64 || ind->rank != x->rank || memcmp(ind->dims, x->dims, sizeof(int64_t) * x->rank))
        return lt_k_fail(k, LT_ERR_RUNTIME, "indices must be int64 of the input's shape");
    size_t esz = lt_dtype_size(x->dtype);
    if (x->dtype == LT_STRING || !esz)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s", lt_dtype_name(x->dtype));
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    lt_status s = lt_nn_kernel(k, nsp, NULL, kernel);
    if (s != LT_OK)
        return s;
    /* indices address the unpooled tensor of the default shape (what the
     * pool saw); an explicit output_shape keeps their coordinates */
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window_transpose(k->node, nsp, x->dims + 2, kernel, &g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    int64_t dims[LT_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < nsp; i++)
        dims[i + 2] = g.img[i];
    int64_t planes = x->dims[0] * x->dims[1], dplane = lt_nn_prod(nsp, g.img), total;
    if (dplane < 0 || !lt_nn_mul(planes, dplane, &total))
        return lt_k_fail(k, LT_ERR_RUNTIME, "unpooled shape too large");
    bool same = true;
    if (os) {
        if (!lt_dtype_is_int(os->dtype) || os->rank != 1 || os->numel != x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "output_shape must be 1-D with %d integers", x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t v = lt_tensor_get_i64(os, i);
            if (v < 0 || (i < 2 && v != x->dims[i]))
                return lt_k_fail(k, LT_ERR_RUNTIME, "output_shape value %lld on axis %d", (long long)v, i);
            same = same && v == dims[i];
            dims[i] = v;
        }
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, dims, &y)) != LT_OK)
        return s;
    memset(y->data, 0, esz * (size_t)y->numel);
    int64_t oplane = lt_nn_prod(nsp, dims + 2);
    const int64_t *iv = ind->data;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t at = iv[i];
        if (at < 0 || at >= total)
            return lt_k_fail(k, LT_ERR_RUNTIME, "index %lld outside the unpooled tensor (%lld elements)",
                             (long long)at, (long long)total);
        if (!same) {
            int64_t r = at % dplane, off = 0, mul = 1;
            for (int d = nsp - 1; d >= 0; d--) {
                int64_t c = r % g.img[d];
                r /= g.img[d];
                if (c >= dims[d + 2])
                    return lt_k_fail(k, LT_ERR_RUNTIME, "index %lld falls outside output_shape", (long long)at);
                off += c * mul;
                mul *= dims[d + 2];
            }
            at = at / dplane * oplane + off;
        }
        memcpy((char *)y->data + (size_t)at * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return LT_OK;
}

lt_status lt_roi_check(lt_kctx *k, const lt_tensor *x, const lt_tensor *rois, int cols)
{
    if (!lt_dtype_is_float(x->dtype) || x->rank != 4)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be a 4-D float tensor (got %s of rank %d)",
                         lt_dtype_name(x->dtype), x->rank);
    if (!rois || !lt_dtype_is_float(rois->dtype) || rois->rank != 2 || rois->dims[1] != cols)
        return lt_k_fail(k, LT_ERR_RUNTIME, "rois must be a float tensor [num_rois, %d]", cols);
    return LT_OK;
}

lt_status lt_roi_pool_shape(lt_kctx *k, int64_t *ph, int64_t *pw)
{
    int np;
    const int64_t *ps = lt_attr_ints(k->node, "pooled_shape", &np);
    if (!ps || np != 2 || ps[0] < 1 || ps[1] < 1 || ps[0] > (1 << 20) || ps[1] > (1 << 20))
        return lt_k_fail(k, LT_ERR_INVALID, "pooled_shape must hold two positive sizes");
    *ph = ps[0];
    *pw = ps[1];
    return LT_OK;
}

lt_status lt_roi_pool_batches(lt_kctx *k, const double *rv, int64_t nr, int64_t n)
{
    for (int64_t r = 0; r < nr; r++) {
        double bi = rv[r * 5];
        if (!(bi >= 0 && bi < (double)n))
            return lt_k_fail(k, LT_ERR_RUNTIME, "roi %lld names batch %g of %lld", (long long)r, bi, (long long)n);
    }
    return LT_OK;
}

static lt_status k_max_roi_pool(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *rois = lt_k_in(k, 1);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input");
    int64_t ph, pw;
    lt_status s = lt_roi_check(k, x, rois, 5);
    if (s == LT_OK)
        s = lt_roi_pool_shape(k, &ph, &pw);
    if (s != LT_OK)
        return s;
    double scale = lt_attr_float(k->node, "spatial_scale", 1.0f);
    int64_t nr = rois->dims[0], n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    int64_t dims[4] = {nr, c, ph, pw};
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, 4, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    const double *xv = lt_nn_f64_of(k, x), *rv = lt_nn_f64_of(k, rois);
    double *out = lt_k_scratch(k, sizeof(double) * (size_t)y->numel);
    if (!xv || !rv)
        return LT_ERR_NOMEM;
    if (!out)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    if ((s = lt_roi_pool_batches(k, rv, nr, n)) != LT_OK)
        return s;
#pragma omp parallel for schedule(static) if (y->numel * 4 >= LT_NN_PAR_MIN)
    for (int64_t rc = 0; rc < nr * c; rc++) {
        int64_t r = rc / c, ch = rc % c;
        const double *roi = rv + r * 5;
        lt_roi_pool_box box = lt_roi_pool_box_of(roi, scale, ph, pw);
        const double *plane = xv + ((int64_t)roi[0] * c + ch) * h * w;
        double *o = out + rc * ph * pw;
        for (int64_t i = 0; i < ph; i++)
            for (int64_t j = 0; j < pw; j++) {
                int64_t hs, he, ws, we;
                lt_roi_pool_bin(&box, i, j, h, w, &hs, &he, &ws, &we);
                double best = 0;
                bool any = false;
                for (int64_t yy = hs; yy < he; yy++)
                    for (int64_t xx = ws; xx < we; xx++) {
                        double v = plane[yy * w + xx];
                        if (!any || v > best)
                            best = v;
                        any = true;
                    }
                o[i * pw + j] = best;
            }
    }
    lt_nn_store_f64(y, out);
    return LT_OK;
}

lt_status lt_roi_align_attrs(lt_kctx *k, lt_roi_align *a)
{
    const lt_node *n = k->node;
    const char *mode = lt_attr_str(n, "mode", "avg");
    const char *ctm = lt_attr_str(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel"
                                                                                      : "output_half_pixel");
    a->is_max = !strcmp(mode, "max");
    a->half_pixel = !strcmp(ctm, "half_pixel");
    if (!a->is_max && strcmp(mode, "avg"))
        return lt_k_fail(k, LT_ERR_INVALID, "unknown mode '%s'", mode);
    if (!a->half_pixel && strcmp(ctm, "output_half_pixel"))
        return lt_k_fail(k, LT_ERR_INVALID, "unknown coordinate_transformation_mode '%s'", ctm);
    a->oh = lt_attr_int(n, "output_height", 1);
    a->ow = lt_attr_int(n, "output_width", 1);
    a->ratio = lt_attr_int(n, "sampling_ratio", 0);
    a->scale = lt_attr_float(n, "spatial_scale", 1.0f);
    if (a->oh < 1 || a->ow < 1 || a->oh > (1 << 20) || a->ow > (1 << 20) || a->ratio < 0 || a->ratio > (1 << 20))
        return lt_k_fail(k, LT_ERR_INVALID, "output %lldx%lld with sampling_ratio %lld", (long long)a->oh,
                         (long long)a->ow, (long long)a->ratio);
    return LT_OK;
}

lt_status lt_roi_align_plan(lt_kctx *k, const lt_roi_align *a, const double *rv, const lt_tensor *bi, int64_t nr,
                            int64_t nb, double **box_out, int64_t **grid_out, lt_roi_sample **samples)
{
    int64_t oh = a->oh, ow = a->ow, most = 1;
    double *box = lt_k_scratch(k, sizeof(double) * 4 * (size_t)(nr ? nr : 1));
    int64_t *grid = lt_k_scratch(k, sizeof(int64_t) * 2 * (size_t)(nr ? nr : 1));
    if (!box || !grid)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    double off = a->half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < nr; r++) {
        int64_t b = lt_tensor_get_i64(bi, r);
        if (b < 0 || b >= nb)
            return lt_k_fail(k, LT_ERR_RUNTIME, "roi %lld names batch %lld of %lld", (long long)r, (long long)b,
                             (long long)nb);
        double x0 = rv[r * 4] * a->scale - off, y0 = rv[r * 4 + 1] * a->scale - off;
        double rw = rv[r * 4 + 2] * a->scale - off - x0, rh = rv[r * 4 + 3] * a->scale - off - y0;
        if (!a->half_pixel) {
            /* malformed rois become 1x1 */
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double gh = a->ratio > 0 ? (double)a->ratio : ceil(rh / (double)oh);
        double gw = a->ratio > 0 ? (double)a->ratio : ceil(rw / (double)ow);
        gh = isfinite(gh) && gh > 0 ? gh : 0;
        gw = isfinite(gw) && gw > 0 ? gw : 0;
        if (gh * gw * (double)(oh * ow) > (double)(1 << 26))
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "roi %lld needs %g x %g samples per bin", (long long)r, gh, gw);
        box[r * 4] = y0;
        box[r * 4 + 1] = x0;
        box[r * 4 + 2] = rh / (double)oh;
        box[r * 4 + 3] = rw / (double)ow;
        grid[r * 2] = (int64_t)gh;
        grid[r * 2 + 1] = (int64_t)gw;
        int64_t need = (int64_t)gh * (int64_t)gw * oh * ow;
        most = need > most ? need : most;
    }
    *box_out = box;
    *grid_out = grid;
    *samples = lt_k_scratch(k, sizeof(lt_roi_sample) * (size_t)most);
    if (!*samples)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    return LT_OK;
}

void lt_roi_align_samples(lt_roi_sample *sp, int64_t h, int64_t w, const lt_roi_align *a, const double *box,
                          const int64_t *grid)
{
    double y0 = box[0], x0 = box[1], bh = box[2], bw = box[3];
    int64_t gh = grid[0], gw = grid[1];
    for (int64_t i = 0; i < a->oh; i++)
        for (int64_t j = 0; j < a->ow; j++)
            for (int64_t iy = 0; iy < gh; iy++) {
                double yy = y0 + (double)i * bh + ((double)iy + 0.5) * bh / (double)gh;
                for (int64_t ix = 0; ix < gw; ix++, sp++) {
                    double xx = x0 + (double)j * bw + ((double)ix + 0.5) * bw / (double)gw;
                    memset(sp, 0, sizeof *sp);
                    if (yy < -1.0 || yy > (double)h || xx < -1.0 || xx > (double)w)
                        continue; /* outside the map: contributes 0 */
                    double y = yy > 0 ? yy : 0, x = xx > 0 ? xx : 0;
                    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
                    if (yl >= h - 1) {
                        yh = yl = h - 1;
                        y = (double)yl;
                    } else {
                        yh = yl + 1;
                    }
                    if (xl >= w - 1) {
                        xh = xl = w - 1;
                        x = (double)xl;
                    } else {
                        xh = xl + 1;
                    }
                    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
                    sp->pos[0] = yl * w + xl;
                    sp->pos[1] = yl * w + xh;
                    sp->pos[2] = yh * w + xl;
                    sp->pos[3] = yh * w + xh;
                    sp->w[0] = hy * hx;
                    sp->w[1] = hy * lx;
                    sp->w[2] = ly * hx;
                    sp->w[3] = ly * lx;
                }
            }
}

static lt_status k_roi_align(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *rois = lt_k_in(k, 1), *bi = lt_k_in(k, 2);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input");
    lt_status s = lt_roi_check(k, x, rois, 4);
    if (s != LT_OK)
        return s;
    if (!bi || !lt_dtype_is_int(bi->dtype) || bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "batch_indices must be 1-D integers, one per roi");
    lt_roi_align a;
    if ((s = lt_roi_align_attrs(k, &a)) != LT_OK)
        return s;
    int64_t oh = a.oh, ow = a.ow, nr = rois->dims[0], nb = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    int64_t dims[4] = {nr, c, oh, ow};
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, 4, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    const double *rv = lt_nn_f64_of(k, rois);
    if (!rv)
        return LT_ERR_NOMEM;
    double *box;
    int64_t *grid;
    lt_roi_sample *sp;
    if ((s = lt_roi_align_plan(k, &a, rv, bi, nr, nb, &box, &grid, &sp)) != LT_OK)
        return s;
    double *out = lt_k_scratch(k, sizeof(double) * (size_t)y->numel);
    const float *xf = x->dtype == LT_F32 ? x->data : NULL;
    const double *xd = xf ? NULL : lt_nn_f64_of(k, x);
    if (!xf && !xd)
        return LT_ERR_NOMEM;
    if (!out)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    bool is_max = a.is_max;
    for (int64_t r = 0; r < nr; r++) {
        int64_t per = grid[r * 2] * grid[r * 2 + 1], b = lt_tensor_get_i64(bi, r);
        lt_roi_align_samples(sp, h, w, &a, box + r * 4, grid + r * 2);
        double count = per > 1 ? (double)per : 1;
#pragma omp parallel for schedule(static) if (c * oh * ow * per * 4 >= LT_NN_PAR_MIN)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t base = (b * c + ch) * h * w;
            double *o = out + (r * c + ch) * oh * ow;
            for (int64_t bin = 0; bin < oh * ow; bin++) {
                const lt_roi_sample *q = sp + bin * per;
                double acc = 0;
                for (int64_t t = 0; t < per; t++) {
                    double v[4];
                    for (int e = 0; e < 4; e++)
                        v[e] = q[t].w[e] * (xf ? (double)xf[base + q[t].pos[e]] : xd[base + q[t].pos[e]]);
                    if (!is_max) {
                        acc += v[0] + v[1] + v[2] + v[3];
                    } else {
                        /* the reference's max mode: largest weighted corner */
                        double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                        acc = t == 0 || m > acc ? m : acc;
                    }
                }
                o[bin] = is_max ? acc : acc / count;
            }
        }
    }
    lt_nn_store_f64(y, out);
    return LT_OK;
}

void lt_nn_register_roi(lt_kernel_fn *tab)
{
    tab[LT_OP_MAX_UNPOOL] = k_max_unpool;
    tab[LT_OP_MAX_ROI_POOL] = k_max_roi_pool;
    tab[LT_OP_ROI_ALIGN] = k_roi_align;
}
