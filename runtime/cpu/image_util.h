/* Private interface of the image family: the resize engine that Resize and
 * Upsample share (image_resize.c), and GridSample (image_grid.c). */
#ifndef LT_CPU_IMAGE_UTIL_H
#define LT_CPU_IMAGE_UTIL_H

#include "../runtime.h"

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

/* Resizes x into output 0 (shape p->out) as p says. */
lt_status lt_img_resize(lt_kctx *k, const lt_tensor *x, const lt_resize *p);

lt_status lt_cpu_grid_sample(lt_kctx *k);

#endif
