/* The optimizer's state, shared by optim.c (the updates) and checkpoint.c
 * (saving and restoring it). Internal to the runtime. */
#ifndef LT_OPTIM_H
#define LT_OPTIM_H

#include "../runtime/backend.h"
#include "../runtime/runtime.h"

struct lt_optim {
    lt_optim_opts o;
    int n;
    lt_dtype *dtype;
    int64_t *numel;
    void **s1, **s2; /* momentum / sum of squares / first moment; second moment */
    int64_t t;       /* steps taken (Adam's bias correction) */
    /* set by lt_optim_to_backend: the state in be's memory (d1, d2 as s1,
     * s2; s1 and s2 then hold what lt_optim_pull last brought back), and
     * lt_optim_step takes parameters and gradients in that memory */
    const lt_backend *be;
    lt_buf **d1, **d2;
};

/* Moves the state's home to backend be (a copy of s1, s2 there); a host
 * backend or NULL leaves it on the host. */
lt_status lt_optim_to_backend(lt_optim *o, const lt_backend *be, lt_err *err);
void lt_optim_drop_backend(lt_optim *o);
/* The backend's state to s1, s2 (before a checkpoint is written), and
 * back (after one is read). No-ops on the host. */
lt_status lt_optim_pull(lt_optim *o, lt_err *err);
lt_status lt_optim_push(lt_optim *o, lt_err *err);
/* The global L2 norm of n gradients held by be (NULL or a host backend:
 * lt_grad_global_norm). */
lt_status lt_grad_global_norm_on(const lt_backend *be, int n, const lt_tensor *const *grads, double *norm,
                                 lt_err *err);

#endif
