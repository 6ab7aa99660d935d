/* Private helpers of the grad_misc CPU kernels (runtime/cpu/grad_misc*.c):
 * the sub-registrars and small input checks they share. */
#ifndef LT_CPU_GRAD_MISC_UTIL_H
#define LT_CPU_GRAD_MISC_UTIL_H

#include "../runtime.h"
#include "par.h"
#include <string.h>

/* Work (elements) below which a loop stays on one thread. */
#define LT_GM_PAR_MIN LT_PAR_ELEMS

/* Input i, or a failed status naming it when it is missing. */
static inline lt_status lt_gm_need(lt_kctx *k, int i, const char *what, const lt_tensor **t)
{
    *t = lt_k_in(k, i);
    if (!*t)
        return lt_k_fail(k, LT_ERR_INVALID, "input %d (%s) is missing or not a tensor", i, what);
    return LT_OK;
}

/* Fails unless t has exactly the given shape. */
static inline lt_status lt_gm_shape(lt_kctx *k, const lt_tensor *t, const char *what, int rank,
                                    const int64_t *dims)
{
    bool ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++)
        ok = t->dims[d] == dims[d];
    if (ok)
        return LT_OK;
    char want[160] = "", got[160] = "";
    size_t wl = 0, gl = 0;
    for (int d = 0; d < rank && wl < sizeof want; d++)
        wl += (size_t)snprintf(want + wl, sizeof want - wl, d ? ",%lld" : "%lld", (long long)dims[d]);
    for (int d = 0; d < t->rank && gl < sizeof got; d++)
        gl += (size_t)snprintf(got + gl, sizeof got - gl, d ? ",%lld" : "%lld", (long long)t->dims[d]);
    return lt_k_fail(k, LT_ERR_RUNTIME, "%s has shape [%s], expected [%s]", what, got, want);
}

/* Zeroes n bytes (zero bits are zero in every numeric type), in parallel
 * when large: gradients of gathers, slices and pads start as big zero
 * tensors. */
static inline void lt_gm_zero(void *p, size_t n)
{
    if (n < (size_t)LT_GM_PAR_MIN * 16) {
        if (n)
            memset(p, 0, n);
        return;
    }
    const size_t chunk = 1 << 16;
    int64_t nc = (int64_t)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nc; c++) {
        size_t at = (size_t)c * chunk;
        memset((char *)p + at, 0, n - at < chunk ? n - at : chunk);
    }
}

/* Registrars of the family's files, called from grad_misc.c. */
void lt_cpu_register_grad_misc_sum(lt_kernel_fn *tab);     /* ReduceSumLike */
void lt_cpu_register_grad_misc_softmax(lt_kernel_fn *tab); /* Softmax/LogSoftmax and loss grads */
void lt_cpu_register_grad_misc_gather(lt_kernel_fn *tab);  /* Gather, GatherElements, GatherND grads */
void lt_cpu_register_grad_misc_shape(lt_kernel_fn *tab);   /* Slice and Pad grads */

#endif
