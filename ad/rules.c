/* The rule table: one gradient rule per differentiable op, filled once from
 * the family files, and the inputs each op never differentiates. */
#include "ad_impl.h"
#include <pthread.h>

lt_ad_rule lt_ad_rules[LT_OP_COUNT];
uint32_t lt_ad_nondiff[LT_OP_COUNT];

static void fill(void)
{
    lt_ad_register_elementwise(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_tensor(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_nn(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_more(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_extra(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_attention(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_cumprod(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_affine_grid(lt_ad_rules, lt_ad_nondiff);
}

void lt_ad_rules_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill);
}
