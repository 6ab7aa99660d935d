/* Gradient rule: CumProd, through CumProdGrad (division-free, so zeros in
 * x get their exact gradient). */
#include "ad_impl.h"

static lt_status r_cumprod(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                           lt_ival *const *dout)
{
    (void)out;
    if (!dout[0] || !lt_ad_wants(c, n, 0))
        return LT_OK;
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_CUM_PROD_GRAD, 1, dout, 2, in, 1);
    if (!k)
        return LT_ERR_NOMEM;
    return lt_ad_accum(c, n, 0, k->out[0]);
}

void lt_ad_register_cumprod(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_CUM_PROD] = r_cumprod;
    nd[LT_OP_CUM_PROD] = 1u << 1; /* axis */
}
