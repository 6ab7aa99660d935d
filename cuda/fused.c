/* FusedElementwise on the GPU (ir/fuse_elementwise.h): the node's program
 * checked as the CPU kernel checks it, each input classed as full, one
 * element or a row along the last axis, and one launch of fused.cu's
 * interpreter. While it has not run on a GPU it is on trial: the trainer
 * fuses chains for cuda, and this kernel takes them, only with
 * LANTERN_CUDA_FUSED=1. */
#include "cuda_internal.h"
#include "../ir/fuse_elementwise.h"
#include <stdlib.h>
#include <string.h>

_Static_assert((int)LT_CU_FE_ADD == (int)LT_FE_ADD && (int)LT_CU_FE_DIV == (int)LT_FE_DIV &&
                   (int)LT_CU_FE_NEG == (int)LT_FE_NEG && (int)LT_CU_FE_SIGMOID == (int)LT_FE_SIGMOID &&
                   (int)LT_CU_FE_RECIPROCAL == (int)LT_FE_RECIPROCAL && (int)LT_CU_FE_CODES == (int)LT_FE_COUNT &&
                   LT_CU_FE_MAX_STEPS == LT_FE_MAX_STEPS,
               "fused.cu numbers the steps as ir/fuse_elementwise.h does");

static bool on_trial(void)
{
    const char *e = getenv("LANTERN_CUDA_FUSED");
    return e && strcmp(e, "1") == 0;
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
    int plen = 0, olen = 0;
    const int64_t *prog = lt_attr_ints(k->node, "program", &plen);
    const int64_t *oreg = lt_attr_ints(k->node, "outputs", &olen);
    lt_cu_fused f;
    memset(&f, 0, sizeof f);
    f.nin = k->nin;
    f.nsteps = plen / 3;
    if (!prog || plen % 3 || f.nsteps < 1 || f.nsteps > LT_CU_FE_MAX_STEPS || !oreg || olen != k->nout ||
        k->nin < 1 || k->nin > LT_CU_FE_MAX_IN)
        return lt_k_fail(k, LT_ERR_INVALID, "malformed program (%d ints, %d outputs, %d inputs)", plen, olen, k->nin);
    for (int s = 0; s < f.nsteps; s++) {
        const int64_t *ins = prog + 3 * s;
        int64_t lim = f.nin + s;
        bool bin = lt_fe_binary((int)ins[0]);
        if (ins[0] < 0 || ins[0] >= LT_FE_COUNT || ins[1] < 0 || ins[1] >= lim ||
            (bin ? ins[2] < 0 || ins[2] >= lim : ins[2] != -1))
            return lt_k_fail(k, LT_ERR_INVALID, "malformed program step %d", s);
        for (int c = 0; c < 3; c++)
            f.prog[s][c] = (signed char)ins[c];
    }
    const lt_tensor *x0 = lt_k_in(k, 0);
    if (!x0 || x0->dtype != LT_F32)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 must be a float32 tensor");
    f.n = x0->numel;
    f.last = x0->rank ? x0->dims[x0->rank - 1] : 1;
    for (int e = 0; e < f.nin; e++) {
        const lt_tensor *x = lt_k_in(k, e);
        if (!x || x->dtype != LT_F32)
            return lt_k_fail(k, LT_ERR_INVALID, "input %d must be a float32 tensor", e);
        bool same = x->rank == x0->rank && x->numel == x0->numel;
        for (int d = 0; same && d < x->rank; d++)
            same = x->dims[d] == x0->dims[d];
        bool ones = x->rank <= x0->rank, row = x->rank >= 1 && x->rank <= x0->rank && x->dims[x->rank - 1] == f.last;
        for (int d = 0; d < x->rank; d++) {
            ones &= x->dims[d] == 1;
            row &= d == x->rank - 1 || x->dims[d] == 1;
        }
        if (same)
            f.kind[e] = LT_CU_FE_FULL;
        else if (ones)
            f.kind[e] = LT_CU_FE_SCALAR;
        else if (row && f.last > 0)
            f.kind[e] = LT_CU_FE_ROW;
        else
            return lt_k_fail(k, LT_ERR_RUNTIME, "input %d does not broadcast against input 0 as one element or a row",
                             e);
        f.in[e] = x->data;
    }
    for (int o = 0; o < k->nout; o++) {
        int64_t s = oreg[o] - f.nin;
        if (s < 0 || s >= f.nsteps || f.out_of[s])
            return lt_k_fail(k, LT_ERR_INVALID, "output %d names register %lld", o, (long long)oreg[o]);
        lt_tensor *y;
        lt_status st = lt_k_out(k, o, LT_F32, x0->rank, x0->dims, &y);
        if (st != LT_OK)
            return st;
        f.out_of[s] = y->data;
    }
    LT_CUDA_K(k, lt_cu_fused_run(lt_cuda_of(k->be)->stream, &f));
    return LT_OK;
}

void lt_cuda_register_fused(lt_cu_op *tab) { tab[LT_OP_FUSED_ELEMENTWISE] = (lt_cu_op){k_fused, 0, 0, fits_fused, false}; }
