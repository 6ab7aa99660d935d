/* Kernels of the norm family defined outside norm.c (which registers them). */
#ifndef LT_CPU_NORM_KERNELS_H
#define LT_CPU_NORM_KERNELS_H

#include "../runtime.h"

lt_status lt_cpu_layer_norm(lt_kctx *k);
lt_status lt_cpu_rms_norm(lt_kctx *k);
lt_status lt_cpu_group_norm(lt_kctx *k);
lt_status lt_cpu_lrn(lt_kctx *k);
lt_status lt_cpu_dropout(lt_kctx *k);

#endif
