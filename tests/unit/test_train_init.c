/* --init random (lt_train_opts.init_random) as PyTorch initializes layers:
 * weights uniform within He's bound sqrt(6 / fan_in) (not all equal, the
 * same for a seed, others for another seed), biases zero, and the scale of a
 * BatchNormalization one, so that a network with batch norms trains from
 * scratch; its running statistics start fresh (mean 0, variance 1). A
 * float16 weight, which the optimizers do not update, is named before
 * training; frozen, it only runs. */
#include "testutil.h"
#include <math.h>
#include <string.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static const lt_tensor *param(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_params(m); i++)
        if (!strcmp(lt_model_param_name(m, i), name))
            return lt_model_param(m, i);
    fail_msg("no parameter %s", name);
    return NULL;
}

static lt_trainer *trainer(uint64_t seed)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.init_random = 1;
    o.seed = seed;
    lt_trainer *t = NULL;
    lt_err err;
    if (lt_trainer_new(DATA "bn_model.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return t;
}

static void scales_start_at_one(void **state)
{
    (void)state;
    lt_trainer *a = trainer(3), *b = trainer(3), *c = trainer(4);
    const lt_model *ma = lt_trainer_model(a), *mb = lt_trainer_model(b), *mc = lt_trainer_model(c);
    const lt_tensor *w = param(ma, "W");
    /* Gemm(x [N,4], W [3,4], transB): fan-in 4 */
    double bound = sqrt(6.0 / 4.0), lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < w->numel; i++) {
        double v = ((const float *)w->data)[i];
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    assert_true(lo >= -bound && hi <= bound && hi - lo > 0.1);
    assert_memory_equal(w->data, param(mb, "W")->data, lt_tensor_nbytes(w));
    assert_memory_not_equal(w->data, param(mc, "W")->data, lt_tensor_nbytes(w));
    const char *ones[] = {"bn_scale"}, *zeros[] = {"b", "bn_bias"};
    for (int i = 0; i < 3; i++) {
        assert_true(((const float *)param(ma, ones[0])->data)[i] == 1.0f);
        for (int k = 0; k < 2; k++)
            assert_true(((const float *)param(ma, zeros[k])->data)[i] == 0.0f);
    }
    /* fresh running statistics, as a new nn.BatchNorm has: mean 0, variance 1
     * (a variance of 0 would divide by sqrt(epsilon) in inference) */
    for (int i = 0; i < 3; i++) {
        assert_true(((const float *)param(ma, "bn_mean")->data)[i] == 0.0f);
        assert_true(((const float *)param(ma, "bn_var")->data)[i] == 1.0f);
    }
    lt_trainer_free(a);
    lt_trainer_free(b);
    lt_trainer_free(c);
}

static void half_weight_named(void **state)
{
    (void)state;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_trainer *t = NULL;
    lt_err err;
    assert_int_equal(lt_trainer_new(DATA "half_mlp.onnx", &o, &t, &err), LT_ERR_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(err.msg, "parameter 'W' is float16"));
    const char *frozen[1] = {"W"};
    o.nfreeze = 1;
    o.freeze = frozen;
    if (lt_trainer_new(DATA "half_mlp.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(scales_start_at_one), cmocka_unit_test(half_weight_named)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
