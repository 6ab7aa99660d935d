/* CPU kernels: RoiAlignGrad and MaxRoiPoolGrad. Each roi's bins are laid
 * out as the forward does (runtime/cpu/nn_roi.c: the reference's sampling
 * grid, Caffe's rounded bins) and dy goes back to what each bin read: its
 * bilinear samples' corners with their weights (avg), or the one weighted
 * corner (RoiAlign max) or pixel (MaxRoiPool) the maximum came from. Rois
 * may overlap, so the channels run in parallel, the rois in order. */
#include "grad_extra.h"
#include "nn_util.h"
#include <math.h>
#include <string.h>

/* dy and X as double, X's checks shared with the forward, dX accumulated in
 * double and stored at the end */
static lt_status roi_inputs(lt_kctx *k, const lt_tensor *dy, const lt_tensor *x, const lt_tensor *rois, int cols,
                            int64_t oh, int64_t ow)
{
    if (!dy || !x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs dy and X");
    if (!lt_dtype_is_float(x->dtype) || x->rank != 4 || dy->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a 4-D float tensor and dy of its type (got %s of rank %d, %s)",
                         lt_dtype_name(x->dtype), x->rank, lt_dtype_name(dy->dtype));
    if (!rois || !lt_dtype_is_float(rois->dtype) || rois->rank != 2 || rois->dims[1] != cols)
        return lt_k_fail(k, LT_ERR_RUNTIME, "rois must be a float tensor [num_rois, %d]", cols);
    int64_t want[4] = {rois->dims[0], x->dims[1], oh, ow};
    if (dy->rank != 4 || memcmp(dy->dims, want, sizeof want))
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy must be [%lld, %lld, %lld, %lld]", (long long)want[0],
                         (long long)want[1], (long long)oh, (long long)ow);
    return LT_OK;
}

lt_status lt_gx_max_roi_pool_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *rois = lt_k_in(k, 2);
    int np;
    const int64_t *ps = lt_attr_ints(k->node, "pooled_shape", &np);
    if (!ps || np != 2 || ps[0] < 1 || ps[1] < 1 || ps[0] > (1 << 20) || ps[1] > (1 << 20))
        return lt_k_fail(k, LT_ERR_INVALID, "pooled_shape must hold two positive sizes");
    int64_t ph = ps[0], pw = ps[1];
    lt_status s = roi_inputs(k, dy, x, rois, 5, ph, pw);
    if (s != LT_OK)
        return s;
    double scale = lt_attr_float(k->node, "spatial_scale", 1.0f);
    int64_t nr = rois->dims[0], n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, 4, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    double *acc = lt_k_scratch(k, sizeof(double) * (size_t)dx->numel);
    if (!acc)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memset(acc, 0, sizeof(double) * (size_t)dx->numel);
    if (dy->numel == 0) {
        lt_nn_store_f64(dx, acc);
        return LT_OK;
    }
    const double *xv = lt_nn_f64_of(k, x), *rv = lt_nn_f64_of(k, rois), *gv = lt_nn_f64_of(k, dy);
    if (!xv || !rv || !gv)
        return LT_ERR_NOMEM;
    for (int64_t r = 0; r < nr; r++) {
        double bi = rv[r * 5];
        if (!(bi >= 0 && bi < (double)n))
            return lt_k_fail(k, LT_ERR_RUNTIME, "roi %lld names batch %g of %lld", (long long)r, bi, (long long)n);
    }
#pragma omp parallel for schedule(static) if (dy->numel * 4 >= LT_NN_PAR_MIN)
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t r = 0; r < nr; r++) {
            const double *roi = rv + r * 5;
            double x1 = round(roi[1] * scale), y1 = round(roi[2] * scale);
            double x2 = round(roi[3] * scale), y2 = round(roi[4] * scale);
            double rw = fmax(x2 - x1 + 1, 1), rh = fmax(y2 - y1 + 1, 1);
            double bh = rh / (double)ph, bw = rw / (double)pw;
            int64_t plane = ((int64_t)roi[0] * c + ch) * h * w;
            const double *g = gv + (r * c + ch) * ph * pw;
            for (int64_t i = 0; i < ph; i++)
                for (int64_t j = 0; j < pw; j++) {
                    double hs = fmin(fmax(floor((double)i * bh) + y1, 0), (double)h);
                    double he = fmin(fmax(ceil((double)(i + 1) * bh) + y1, 0), (double)h);
                    double ws = fmin(fmax(floor((double)j * bw) + x1, 0), (double)w);
                    double we = fmin(fmax(ceil((double)(j + 1) * bw) + x1, 0), (double)w);
                    int64_t at = -1;
                    double best = 0;
                    /* the first maximum in scan order, as the forward keeps it */
                    for (int64_t yy = (int64_t)hs; yy < (int64_t)he; yy++)
                        for (int64_t xx = (int64_t)ws; xx < (int64_t)we; xx++) {
                            double v = xv[plane + yy * w + xx];
                            if (at < 0 || v > best) {
                                best = v;
                                at = plane + yy * w + xx;
                            }
                        }
                    if (at >= 0)
                        acc[at] += g[i * pw + j];
                }
        }
    lt_nn_store_f64(dx, acc);
    return LT_OK;
}

/* RoiAlign's bilinear sample: four image offsets and their weights */
typedef struct sample {
    int64_t pos[4];
    double w[4];
} sample;

/* The samples of every bin of one roi, bins in row-major order, each bin's
 * gh x gw samples contiguous (the forward's layout and arithmetic). */
static void roi_samples(sample *sp, int64_t h, int64_t w, int64_t oh, int64_t ow, double y0, double x0, double bh,
                        double bw, int64_t gh, int64_t gw)
{
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++)
            for (int64_t iy = 0; iy < gh; iy++) {
                double yy = y0 + (double)i * bh + ((double)iy + 0.5) * bh / (double)gh;
                for (int64_t ix = 0; ix < gw; ix++, sp++) {
                    double xx = x0 + (double)j * bw + ((double)ix + 0.5) * bw / (double)gw;
                    memset(sp, 0, sizeof *sp);
                    if (yy < -1.0 || yy > (double)h || xx < -1.0 || xx > (double)w)
                        continue;
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

lt_status lt_gx_roi_align_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *rois = lt_k_in(k, 2), *bi = lt_k_in(k, 3);
    const lt_node *n = k->node;
    int64_t oh = lt_attr_int(n, "output_height", 1), ow = lt_attr_int(n, "output_width", 1);
    int64_t ratio = lt_attr_int(n, "sampling_ratio", 0);
    if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20) || ratio < 0 || ratio > (1 << 20))
        return lt_k_fail(k, LT_ERR_INVALID, "output %lldx%lld with sampling_ratio %lld", (long long)oh,
                         (long long)ow, (long long)ratio);
    lt_status s = roi_inputs(k, dy, x, rois, 4, oh, ow);
    if (s != LT_OK)
        return s;
    if (!bi || !lt_dtype_is_int(bi->dtype) || bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "batch_indices must be 1-D integers, one per roi");
    const char *mode = lt_attr_str(n, "mode", "avg");
    const char *ctm = lt_attr_str(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel"
                                                                                      : "output_half_pixel");
    bool is_max = !strcmp(mode, "max"), half_pixel = !strcmp(ctm, "half_pixel");
    if (!is_max && strcmp(mode, "avg"))
        return lt_k_fail(k, LT_ERR_INVALID, "unknown mode '%s'", mode);
    if (!half_pixel && strcmp(ctm, "output_half_pixel"))
        return lt_k_fail(k, LT_ERR_INVALID, "unknown coordinate_transformation_mode '%s'", ctm);
    double scale = lt_attr_float(n, "spatial_scale", 1.0f);
    int64_t nr = rois->dims[0], nb = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, 4, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    double *acc = lt_k_scratch(k, sizeof(double) * (size_t)dx->numel);
    if (!acc)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memset(acc, 0, sizeof(double) * (size_t)dx->numel);
    const double *rv = lt_nn_f64_of(k, rois), *gv = dy->numel ? lt_nn_f64_of(k, dy) : NULL;
    const double *xv = is_max && dy->numel ? lt_nn_f64_of(k, x) : NULL;
    if (!rv || (dy->numel && !gv) || (is_max && dy->numel && !xv))
        return LT_ERR_NOMEM;
    /* per roi: its box in feature-map coordinates and its sampling grid */
    double *box = lt_k_scratch(k, sizeof(double) * 4 * (size_t)(nr ? nr : 1));
    int64_t *grid = lt_k_scratch(k, sizeof(int64_t) * 2 * (size_t)(nr ? nr : 1)), most = 1;
    if (!box || !grid)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    double off = half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < nr; r++) {
        int64_t b = lt_tensor_get_i64(bi, r);
        if (b < 0 || b >= nb)
            return lt_k_fail(k, LT_ERR_RUNTIME, "roi %lld names batch %lld of %lld", (long long)r, (long long)b,
                             (long long)nb);
        double x0 = rv[r * 4] * scale - off, y0 = rv[r * 4 + 1] * scale - off;
        double rw = rv[r * 4 + 2] * scale - off - x0, rh = rv[r * 4 + 3] * scale - off - y0;
        if (!half_pixel) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double gh = ratio > 0 ? (double)ratio : ceil(rh / (double)oh);
        double gw = ratio > 0 ? (double)ratio : ceil(rw / (double)ow);
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
    sample *sp = lt_k_scratch(k, sizeof(sample) * (size_t)most);
    if (!sp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < nr && dy->numel; r++) {
        int64_t gh = grid[r * 2], gw = grid[r * 2 + 1], per = gh * gw, b = lt_tensor_get_i64(bi, r);
        roi_samples(sp, h, w, oh, ow, box[r * 4], box[r * 4 + 1], box[r * 4 + 2], box[r * 4 + 3], gh, gw);
        double count = per > 1 ? (double)per : 1;
#pragma omp parallel for schedule(static) if (c * oh * ow * per * 4 >= LT_NN_PAR_MIN)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t base = (b * c + ch) * h * w;
            const double *g = gv + (r * c + ch) * oh * ow;
            for (int64_t bin = 0; bin < oh * ow; bin++) {
                const sample *q = sp + bin * per;
                if (!is_max) {
                    double share = g[bin] / count;
                    for (int64_t t = 0; t < per; t++)
                        for (int e = 0; e < 4; e++)
                            acc[base + q[t].pos[e]] += q[t].w[e] * share;
                    continue;
                }
                /* the forward's max: the largest weighted corner; among
                 * equals the first sample and its first corner */
                double best = 0;
                int64_t bt = -1;
                int be = 0;
                for (int64_t t = 0; t < per; t++) {
                    double v[4];
                    int em = 0;
                    for (int e = 0; e < 4; e++) {
                        v[e] = q[t].w[e] * xv[base + q[t].pos[e]];
                        if (v[e] > v[em])
                            em = e;
                    }
                    if (bt < 0 || v[em] > best) {
                        best = v[em];
                        bt = t;
                        be = em;
                    }
                }
                if (bt >= 0)
                    acc[base + q[bt].pos[be]] += q[bt].w[be] * g[bin];
            }
        }
    }
    lt_nn_store_f64(dx, acc);
    return LT_OK;
}
