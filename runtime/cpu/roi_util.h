/* Private interface of the roi kernels: what RoiAlign and MaxRoiPool
 * (nn_roi.c) share with their gradients (grad_roi.c), so that a bin
 * is laid out and sampled in one place. */
#ifndef LT_CPU_ROI_UTIL_H
#define LT_CPU_ROI_UTIL_H

#include "../runtime.h"
#include <math.h>

/* Fails unless x is a 4-D float tensor and rois a float [num_rois, cols]. */
lt_status lt_roi_check(lt_kctx *k, const lt_tensor *x, const lt_tensor *rois, int cols);

/* ---- RoiAlign ---- */

typedef struct lt_roi_align {
    int64_t oh, ow, ratio; /* output_height, output_width, sampling_ratio */
    double scale;          /* spatial_scale */
    bool is_max, half_pixel;
} lt_roi_align;

/* The node's attributes, checked. */
lt_status lt_roi_align_attrs(lt_kctx *k, lt_roi_align *a);

/* One bilinear sample: four offsets into an h x w image and their weights
 * (all 0 for a sample outside the map). */
typedef struct lt_roi_sample {
    int64_t pos[4];
    double w[4];
} lt_roi_sample;

/* Per roi r of the nr in rv ([nr, 4] as double): box[4r..4r+4) = its top,
 * left, bin height and bin width in feature-map coordinates, grid[2r],
 * grid[2r+1] = its samples per bin down and across; *samples = room for
 * the samples of any one roi. All in scratch memory. Fails on a batch
 * index (bi) outside [0, nb) or a sampling grid too large. */
lt_status lt_roi_align_plan(lt_kctx *k, const lt_roi_align *a, const double *rv, const lt_tensor *bi, int64_t nr,
                            int64_t nb, double **box, int64_t **grid, lt_roi_sample **samples);

/* The samples of every bin of one roi (its box and grid from
 * lt_roi_align_plan), bins in row-major order, each bin's samples
 * contiguous (the reference implementation's layout). */
void lt_roi_align_samples(lt_roi_sample *sp, int64_t h, int64_t w, const lt_roi_align *a, const double *box,
                          const int64_t *grid);

/* ---- MaxRoiPool ---- */

/* pooled_shape, checked. */
lt_status lt_roi_pool_shape(lt_kctx *k, int64_t *ph, int64_t *pw);

/* Fails unless every roi of rv ([nr, 5] as double) names a batch in [0, n). */
lt_status lt_roi_pool_batches(lt_kctx *k, const double *rv, int64_t nr, int64_t n);

/* One roi's corner and bin size, Caffe's semantics: corners rounded to
 * pixels, at least one pixel across. */
typedef struct lt_roi_pool_box {
    double x1, y1, bh, bw;
} lt_roi_pool_box;

static inline lt_roi_pool_box lt_roi_pool_box_of(const double *roi, double scale, int64_t ph, int64_t pw)
{
    double x1 = round(roi[1] * scale), y1 = round(roi[2] * scale);
    double x2 = round(roi[3] * scale), y2 = round(roi[4] * scale);
    double rw = fmax(x2 - x1 + 1, 1), rh = fmax(y2 - y1 + 1, 1);
    return (lt_roi_pool_box){x1, y1, rh / (double)ph, rw / (double)pw};
}

/* Bin (i, j) of the box: rows [*hs, *he), columns [*ws, *we) of an h x w
 * map (bins by floor / ceil, clipped to the map). */
static inline void lt_roi_pool_bin(const lt_roi_pool_box *b, int64_t i, int64_t j, int64_t h, int64_t w, int64_t *hs,
                                   int64_t *he, int64_t *ws, int64_t *we)
{
    *hs = (int64_t)fmin(fmax(floor((double)i * b->bh) + b->y1, 0), (double)h);
    *he = (int64_t)fmin(fmax(ceil((double)(i + 1) * b->bh) + b->y1, 0), (double)h);
    *ws = (int64_t)fmin(fmax(floor((double)j * b->bw) + b->x1, 0), (double)w);
    *we = (int64_t)fmin(fmax(ceil((double)(j + 1) * b->bw) + b->x1, 0), (double)w);
}

#endif
