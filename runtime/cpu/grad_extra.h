/* Private interface of the grad_extra kernels (runtime/cpu/grad_extra*.c):
 * the backward ops of GridSample, RoiAlign, MaxRoiPool, Col2Im and STFT. */
#ifndef LT_CPU_GRAD_EXTRA_H
#define LT_CPU_GRAD_EXTRA_H

#include "../runtime.h"

/* (dy, X, grid) -> dX, dgrid */
lt_status lt_gx_grid_sample_grad(lt_kctx *k);
/* (dy, X, rois, batch_indices) -> dX */
lt_status lt_gx_roi_align_grad(lt_kctx *k);
/* (dy, X, rois) -> dX */
lt_status lt_gx_max_roi_pool_grad(lt_kctx *k);

#endif
