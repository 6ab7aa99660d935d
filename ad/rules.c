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
    lt_ad_register_unary(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_movement(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_norm(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_linalg(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_sampling(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_signal(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_quant(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_generate(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_attention(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_cumprod(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_affine_grid(lt_ad_rules, lt_ad_nondiff);
    lt_ad_register_sequence(lt_ad_rules, lt_ad_nondiff);
}

void lt_ad_rules_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill);
}
