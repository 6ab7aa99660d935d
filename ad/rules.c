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

bool lt_ad_bn_training(const lt_node *n)
{
    if (n->op != LT_OP_BATCH_NORMALIZATION)
        return false;
    if (n->opset >= 14)
        return lt_attr_int(n, "training_mode", 0) != 0;
    /* before training_mode, asking for the statistics outputs meant
     * training (with is_test = 0 before opset 7) */
    bool stats = false;
    for (int j = 1; j < 5 && j < n->nout; j++)
        stats = stats || n->out[j];
    return stats && (n->opset >= 7 || lt_attr_int(n, "is_test", 0) == 0);
}

bool lt_ad_input_nondiff(const lt_node *n, int i)
{
    if (i >= 32 || !(lt_ad_nondiff[n->op] >> i & 1))
        return false;
    /* an inference-mode BatchNormalization's mean and variance are running
     * statistics (no gradient, as PyTorch's buffers) when they are
     * initializers or inputs, but computed ones (tf2onnx writes Keras's
     * LayerNormalization so, the statistics made from the input) carry
     * the derivative the function has */
    if (n->op == LT_OP_BATCH_NORMALIZATION && (i == 3 || i == 4) && n->in[i] && n->in[i]->def &&
        n->in[i]->def->op != LT_OP_CONSTANT && !lt_ad_bn_training(n))
        return false;
    return true;
}
