/* FusedElementwise on the GPU (ir/fuse_elementwise.h): the node's program
 * checked as the CPU kernel checks it, each input classed as full, one
 * element or a row along the last axis, and one launch of fused.cu's
 * interpreter. It passed test_cuda_kernels on an H200 and made every GPU
 * bench step faster there but the LSTM's (same within noise); with
 * LANTERN_CUDA_FUSED=0 the trainer does not fuse chains for cuda and this
 * kernel takes none. */
#include "cuda_internal.h"
#include "../runtime/cpu/fused_args.h"
#include <stdlib.h>
#include <string.h>

_Static_assert((int)LT_CU_FE_ADD == (int)LT_FE_ADD && (int)LT_CU_FE_DIV == (int)LT_FE_DIV &&
                   (int)LT_CU_FE_NEG == (int)LT_FE_NEG && (int)LT_CU_FE_SIGMOID == (int)LT_FE_SIGMOID &&
                   (int)LT_CU_FE_RECIPROCAL == (int)LT_FE_RECIPROCAL &&
                   (int)LT_CU_FE_SOFTPLUS == (int)LT_FE_SOFTPLUS && (int)LT_CU_FE_CODES == (int)LT_FE_COUNT &&
                   LT_CU_FE_MAX_STEPS == LT_FE_MAX_STEPS && LT_CU_FE_MAX_IN == LT_FE_MAX_IN,
               "fused.cu numbers the steps as ir/fuse_elementwise.h does");

static bool on_trial(void)
{
    const char *e = getenv("LANTERN_CUDA_FUSED");
    return !e || strcmp(e, "0") != 0;
}

static bool fits_fused(const lt_node *n)
{
    if (!on_trial() || n->nin < 1 || n->nin > LT_CU_FE_MAX_IN)
        return false;
    for (int j = 0; j < n->nin; j++)
        if (!n->in[j] || n->in[j]->type.dtype != LT_F32)
            return false;
    return true;
}

static lt_status k_fused(lt_kctx *k)
{
    lt_fe_args a;
    lt_status s = lt_fe_args_read(k, &a);
    if (s != LT_OK)
        return s;
    lt_cu_fused f;
    memset(&f, 0, sizeof f);
    f.nin = a.nin;
    f.nsteps = a.nsteps;
    f.n = a.n;
    f.last = a.last;
    for (int st = 0; st < a.nsteps; st++)
        for (int c = 0; c < 3; c++)
            f.prog[st][c] = (signed char)a.prog[3 * st + c];
    for (int e = 0; e < a.nin; e++) {
        f.kind[e] = (signed char)(a.kind[e] == LT_FE_FULL     ? LT_CU_FE_FULL
                                  : a.kind[e] == LT_FE_SCALAR ? LT_CU_FE_SCALAR
                                                              : LT_CU_FE_ROW);
        f.in[e] = a.in[e];
    }
    memcpy(f.out_of, a.out_of, sizeof f.out_of);
    LT_CUDA_K(k, lt_cu_fused_run(lt_cuda_of(k->be)->stream, &f));
    return LT_OK;
}

void lt_cuda_register_fused(lt_cu_op *tab)
{
    tab[LT_OP_FUSED_ELEMENTWISE] = (lt_cu_op){k_fused, 0, 0, fits_fused, false};
}
