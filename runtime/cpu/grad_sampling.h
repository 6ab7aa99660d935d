/* Private interface of the sampling-op gradient kernels
 * (runtime/cpu/grad_col2im_stft.c, grad_grid_sample.c, grad_roi.c):
 * the backward ops of GridSample, RoiAlign, MaxRoiPool, Col2Im and STFT. */
#ifndef LT_CPU_GRAD_SAMPLING_H
#define LT_CPU_GRAD_SAMPLING_H

#include "../runtime.h"

/* (dy, X, grid) -> dX, dgrid */
lt_status lt_gx_grid_sample_grad(lt_kctx *k);
/* (dy, X, rois, batch_indices) -> dX */
lt_status lt_gx_roi_align_grad(lt_kctx *k);
/* (dy, X, rois) -> dX */
lt_status lt_gx_max_roi_pool_grad(lt_kctx *k);

#endif
