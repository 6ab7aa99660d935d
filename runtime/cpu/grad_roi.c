/* CPU kernels: RoiAlignGrad and MaxRoiPoolGrad. Each roi's bins are laid
 * out by the forward's own code (roi_util.h: the reference's sampling
 * grid, Caffe's rounded bins) and dy goes back to what each bin read: its
 * bilinear samples' corners with their weights (avg), or the one weighted
 * corner (RoiAlign max) or pixel (MaxRoiPool) the maximum came from. Rois
 * may overlap, so the channels run in parallel, the rois in order. */
#include "grad_sampling.h"
#include "nn_util.h"
#include "roi_util.h"
#include <string.h>

/* dy and X checked (X's checks the forward's), and dX created with its
 * accumulator: dX is summed in double, zeroed here (*acc stays NULL when
 * dX is empty), and stored at the end. */
static lt_status roi_inputs(lt_kctx *k, const lt_tensor *dy, const lt_tensor *x, const lt_tensor *rois, int cols,
                            int64_t oh, int64_t ow, lt_tensor **dx, double **acc)
{
    *acc = NULL;
    if (!dy || !x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs dy and X");
    lt_status s = lt_roi_check(k, x, rois, cols);
    if (s != LT_OK)
        return s;
    if (dy->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy is %s, X %s", lt_dtype_name(dy->dtype), lt_dtype_name(x->dtype));
    int64_t want[4] = {rois->dims[0], x->dims[1], oh, ow};
    if (dy->rank != 4 || memcmp(dy->dims, want, sizeof want))
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy must be [%lld, %lld, %lld, %lld]", (long long)want[0],
                         (long long)want[1], (long long)oh, (long long)ow);
    if ((s = lt_k_out(k, 0, x->dtype, 4, x->dims, dx)) != LT_OK || (*dx)->numel == 0)
        return s;
    if (!(*acc = lt_k_scratch(k, sizeof(double) * (size_t)(*dx)->numel)))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memset(*acc, 0, sizeof(double) * (size_t)(*dx)->numel);
    return LT_OK;
}

lt_status lt_gx_max_roi_pool_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *rois = lt_k_in(k, 2);
    int64_t ph, pw;
    lt_tensor *dx;
    double *acc = NULL;
    lt_status s = lt_roi_pool_shape(k, &ph, &pw);
    if (s == LT_OK)
        s = roi_inputs(k, dy, x, rois, 5, ph, pw, &dx, &acc);
    if (s != LT_OK || !acc)
        return s;
    double scale = lt_attr_float(k->node, "spatial_scale", 1.0f);
    int64_t nr = rois->dims[0], n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (dy->numel == 0) {
        lt_nn_store_f64(dx, acc);
        return LT_OK;
    }
    const double *xv = lt_nn_f64_of(k, x), *rv = lt_nn_f64_of(k, rois), *gv = lt_nn_f64_of(k, dy);
    if (!xv || !rv || !gv)
        return LT_ERR_NOMEM;
    if ((s = lt_roi_pool_batches(k, rv, nr, n)) != LT_OK)
        return s;
#pragma omp parallel for schedule(static) if (dy->numel * 4 >= LT_NN_PAR_MIN)
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t r = 0; r < nr; r++) {
            const double *roi = rv + r * 5;
            lt_roi_pool_box box = lt_roi_pool_box_of(roi, scale, ph, pw);
            int64_t plane = ((int64_t)roi[0] * c + ch) * h * w;
            const double *g = gv + (r * c + ch) * ph * pw;
            for (int64_t i = 0; i < ph; i++)
                for (int64_t j = 0; j < pw; j++) {
                    int64_t hs, he, ws, we, at = -1;
                    lt_roi_pool_bin(&box, i, j, h, w, &hs, &he, &ws, &we);
                    double best = 0;
                    /* the first maximum in scan order, as the forward keeps it */
                    for (int64_t yy = hs; yy < he; yy++)
                        for (int64_t xx = ws; xx < we; xx++) {
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

lt_status lt_gx_roi_align_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *rois = lt_k_in(k, 2), *bi = lt_k_in(k, 3);
    lt_roi_align a;
    lt_tensor *dx;
    double *acc = NULL;
    lt_status s = lt_roi_align_attrs(k, &a);
    if (s == LT_OK)
        s = roi_inputs(k, dy, x, rois, 4, a.oh, a.ow, &dx, &acc);
    if (s != LT_OK || !acc)
        return s;
    if (!bi || !lt_dtype_is_int(bi->dtype) || bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "batch_indices must be 1-D integers, one per roi");
    int64_t oh = a.oh, ow = a.ow, nr = rois->dims[0], nb = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    bool is_max = a.is_max;
    const double *rv = lt_nn_f64_of(k, rois), *gv = dy->numel ? lt_nn_f64_of(k, dy) : NULL;
    const double *xv = is_max && dy->numel ? lt_nn_f64_of(k, x) : NULL;
    if (!rv || (dy->numel && !gv) || (is_max && dy->numel && !xv))
        return LT_ERR_NOMEM;
    double *box;
    int64_t *grid;
    lt_roi_sample *sp;
    if ((s = lt_roi_align_plan(k, &a, rv, bi, nr, nb, &box, &grid, &sp)) != LT_OK)
        return s;
    for (int64_t r = 0; r < nr && dy->numel; r++) {
        int64_t per = grid[r * 2] * grid[r * 2 + 1], b = lt_tensor_get_i64(bi, r);
        lt_roi_align_samples(sp, h, w, &a, box + r * 4, grid + r * 2);
        double count = per > 1 ? (double)per : 1;
#pragma omp parallel for schedule(static) if (c * oh * ow * per * 4 >= LT_NN_PAR_MIN)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t base = (b * c + ch) * h * w;
            const double *g = gv + (r * c + ch) * oh * ow;
            for (int64_t bin = 0; bin < oh * ow; bin++) {
                const lt_roi_sample *q = sp + bin * per;
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
