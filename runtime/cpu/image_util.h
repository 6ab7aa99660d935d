/* Private interface of the image family: the resize engine that Resize and
 * Upsample share (image_resize.c), and GridSample (image_grid.c). The
 * parameter readers and tap tables are exported for ResizeGrad
 * (grad_nn_resize.c), which must map exactly as the forward does. */
#ifndef LT_CPU_IMAGE_UTIL_H
#define LT_CPU_IMAGE_UTIL_H

#include "../runtime.h"
#include "../../ir/shape_image.h"
#include <math.h>

enum { LT_RS_NEAREST, LT_RS_LINEAR, LT_RS_CUBIC };

/* How output coordinates map back onto the input. */
enum {
    LT_RS_HALF_PIXEL,
    LT_RS_HALF_PIXEL_SYMMETRIC,
    LT_RS_PYTORCH_HALF_PIXEL,
    LT_RS_ALIGN_CORNERS,
    LT_RS_ASYMMETRIC,
    LT_RS_TF_HALF_PIXEL_FOR_NN,
    LT_RS_TF_CROP_AND_RESIZE
};

/* Nearest rounding; SIMPLE is the pre-opset-11 rule other runtimes keep:
 * floor when upsampling, ceil when downsampling. */
enum { LT_RS_ROUND_PREFER_FLOOR, LT_RS_ROUND_PREFER_CEIL, LT_RS_FLOOR, LT_RS_CEIL, LT_RS_SIMPLE };

typedef struct lt_resize {
    int mode, coord, nearest;
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
    int rank;
    int64_t out[LT_MAX_RANK];
    double scale[LT_MAX_RANK];
    /* length of the resized axis that coordinates are measured against:
     * scale * in (not rounded), as the ONNX reference has it */
    double out_f[LT_MAX_RANK];
    double roi_start[LT_MAX_RANK], roi_end[LT_MAX_RANK];
} lt_resize;

/* Starts p for a rank-`rank` input: mode, coordinate mapping and nearest
 * rounding from the node's attributes, a roi covering every axis. legacy =
 * Upsample and Resize-10, which map asymmetrically. */
lt_status lt_img_resize_modes(lt_kctx *k, int rank, lt_resize *p, bool legacy);
/* Output sizes from per-axis scales sc[i] of axes[i] (scale * in, floored). */
lt_status lt_img_resize_scales(lt_kctx *k, lt_resize *p, const lt_tensor *x, const double *sc, const int *axes,
                               int naxes);
/* Resize's output sizes, scales and roi from its inputs roi, scales and
 * sizes (each may be NULL; Resize-10 has scales alone) and the axes
 * attribute (opset 18). */
lt_status lt_img_resize_shape(lt_kctx *k, lt_resize *p, const lt_tensor *x, const lt_tensor *roi,
                              const lt_tensor *scales, const lt_tensor *sizes);

/* Keys' cubic convolution kernel with parameter a (Resize's cubic_coeff_a;
 * GridSample's bicubic is a = -0.75). */
static inline double lt_img_cubic(double t, double a)
{
    t = fabs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

/* One axis of a resize as a table of taps (source index, weight) per output
 * coordinate, built as the ONNX reference builds its 1-D interpolation. */
typedef struct lt_rs_axis {
    int64_t in, out;
    int ntap;
    int64_t *idx;     /* out * ntap source indices, clamped into [0, in) */
    double *w;        /* out * ntap weights */
    uint8_t *outside; /* tf_crop_and_resize: the coordinate left the input */
    bool identity;    /* output j reads input j with weight 1 */
} lt_rs_axis;

/* The taps of axis d (input length in) in scratch memory. */
lt_status lt_img_resize_axis(lt_kctx *k, const lt_resize *p, int d, int64_t in, lt_rs_axis *ax);

/* Resizes x into output 0 (shape p->out) as p says. */
lt_status lt_img_resize(lt_kctx *k, const lt_tensor *x, const lt_resize *p);

/* GridSample (image_grid.c); its sampling is in grid_util.h. */
lt_status lt_cpu_grid_sample(lt_kctx *k);

#endif
