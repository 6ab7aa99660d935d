/* The optimizer's state, shared by optim.c (the updates) and checkpoint.c
 * (saving and restoring it). Internal to the runtime. */
#ifndef LT_OPTIM_H
#define LT_OPTIM_H

#include "../runtime/runtime.h"

struct lt_optim {
    lt_optim_opts o;
    int n;
    lt_dtype *dtype;
    int64_t *numel;
    void **s1, **s2; /* momentum / sum of squares / first moment; second moment */
    int64_t t;       /* steps taken (Adam's bias correction) */
};

#endif
