/* Calls of IR functions: the callee's body runs on the arguments (the
 * accumulation cells the AD passes along are in control_cells.c). */
#include "../runtime.h"
#include <stdlib.h>

static lt_status op_call(lt_kctx *k)
{
    int64_t fi = lt_attr_int(k->node, "callee", -1);
    const lt_func *f = lt_k_callee(k, fi);
    if (!f)
        return lt_k_fail(k, LT_ERR_INVALID, "calls function %lld, which does not exist", (long long)fi);
    if (f->body->nparams != k->nin || f->body->nresults != k->nout)
        return lt_k_fail(k, LT_ERR_INVALID, "argument or result count does not match '%s'", f->name);
    lt_value **res = calloc(k->nout + 1, sizeof *res);
    if (!res)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_k_run_block(k, f->body, k->in, res);
    for (int i = 0; i < k->nout; i++) {
        if (s == LT_OK)
            lt_k_out_value(k, i, res[i]);
        else
            lt_value_free(res[i]);
    }
    free(res);
    return s;
}

void lt_cpu_register_control_call(lt_kernel_fn *tab)
{
    tab[LT_OP_CALL] = op_call;
}
