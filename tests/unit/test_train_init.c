/* --init random (lt_train_opts.init_random) as PyTorch initializes layers:
 * weights uniform within He's bound sqrt(6 / fan_in) (not all equal, the
 * same for a seed, others for another seed), biases zero, and the scale of a
 * BatchNormalization one, so that a network with batch norms trains from
 * scratch; its running statistics start fresh (mean 0, variance 1). A
 * float16 weight, which the optimizers do not update, is named before
 * training; frozen, it only runs. The graph's constants as torch's
 * exporters store them (single-valued val_N, onnx::* scalars) stay fixed,
 * with a note, unless train_constants. */
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


static double value_of(const lt_model *m, const char *name) { return lt_tensor_get_f64(param(m, name), 0); }

/* A trainer of model on o (lt_train_defaults and the caller's changes) at
 * lr 0.1, its notes in tu_notes. */
static lt_trainer *trainer_at_01(const char *model, lt_train_opts *o)
{
    o->on_note = tu_keep_note;
    o->schedule.lr = 0.1;
    tu_notes[0] = 0;
    lt_trainer *t = NULL;
    lt_err err;
    if (lt_trainer_new(model, o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return t;
}

/* steps SGD steps at lr 0.1 on in[0..1], named names; frees in. */
static void steps_at_01(lt_trainer *t, int steps, const char *const *names, lt_value **in)
{
    lt_err err;
    for (int step = 0; step < steps; step++)
        if (lt_trainer_step(t, 0.1, 2, names, in, NULL, &err) != LT_OK)
            fail_msg("%s", err.msg);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

/* one SGD step at lr 0.1 on a seeded batch; the model after it */
static lt_trainer *one_step(int train_constants)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.train_constants = train_constants;
    lt_trainer *t = trainer_at_01(DATA "const_model.onnx", &o);
    lt_value *in[2] = {tu_rand(LT_F32, 2, (int64_t[]){8, 4}, -1, 1, 77),
                       tu_from(LT_I64, 1, (int64_t[]){8}, (double[]){0, 1, 2, 0, 1, 2, 0, 1})};
    const char *names[2] = {"x", "labels"};
    steps_at_01(t, 1, names, in);
    return t;
}

static void graph_constants_stay(void **state)
{
    (void)state;
    lt_trainer *t = one_step(0);
    const lt_model *m = lt_trainer_model(t);
    assert_non_null(strstr(tu_notes, "3 single-valued initializer(s)"));
    assert_true(value_of(m, "val_1") == 3.0f && value_of(m, "val_2") == 0.044715f && value_of(m, "onnx::Mul_9") == 0.5f);
    assert_true(value_of(m, "scale") != 1.0f); /* a scalar weight of its own name trains */
    assert_true(value_of(m, "fc.bias") != 0.0f); /* zeros, but a weight */
    lt_trainer_free(t);
    t = one_step(1);
    m = lt_trainer_model(t);
    assert_int_equal(tu_notes[0], 0);
    assert_true(value_of(m, "val_2") != 0.044715f);
    lt_trainer_free(t);
}

/* tf2onnx's constants (an attention scale ".../Mul/y:0", LayerNorm's
 * ".../ones/Const:0") stay fixed as the graph's constants; a Keras
 * variable's read of zeros (".../ReadVariableOp:0") trains: the constants
 * trained (MHA's losses 1.1688 against Keras's 1.1796) */
static void tf2onnx_constants_stay(void **state)
{
    (void)state;
    lt_train_opts o;
    lt_train_defaults(&o);
    o.loss = LT_LOSS_MSE;
    lt_trainer *t = trainer_at_01(DATA "tf_consts.onnx", &o);
    assert_non_null(strstr(tu_notes, "stay fixed as the graph's constants (model/mha/Mul/y:0, "
                                     "model/ln/ones/Const:0)"));
    lt_value *in[2] = {tu_rand(LT_F32, 2, (int64_t[]){8, 4}, -1, 1, 79), tu_rand(LT_F32, 2, (int64_t[]){8, 3}, -1, 1, 80)};
    const char *names[2] = {"x", "targets"};
    steps_at_01(t, 2, names, in);
    const lt_model *m = lt_trainer_model(t);
    assert_true(value_of(m, "model/mha/Mul/y:0") == 0.5f && value_of(m, "model/ln/ones/Const:0") == 1.0f);
    assert_true(value_of(m, "model/dense/BiasAdd/ReadVariableOp:0") != 0.0f);
    lt_trainer_free(t);
}

/* A BatchNorm tf2onnx folded into a Conv (NAME_weights_fused_bn) is noted:
 * the Keras model trains it with batch statistics */
static void tf2onnx_fused_bn_noted(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(DATA "tf_fused_bn.onnx");
    assert_non_null(strstr(tu_notes, "1 Conv weight(s) hold a BatchNormalization tf2onnx folded in "
                                     "(seq/conv2d/BiasAdd_weights_fused_bn)"));
    lt_trainer_free(t);
}

/* A literal of a torch.cond branch that the dynamo exporter lifted into
 * the main graph (models/zoo/if_dynamo: val_0_2, the 2.0 of b(x) * 2.0)
 * is one of the graph's constants too: it was trained as a weight. */
static void branch_literal_stays(void **state)
{
    (void)state;
    lt_train_opts o;
    lt_train_defaults(&o);
    o.loss = LT_LOSS_MSE;
    lt_trainer *t = trainer_at_01(LT_SOURCE_DIR "/models/zoo/if_dynamo/model.onnx", &o);
    assert_non_null(strstr(tu_notes, "stay fixed as the graph's constants (val_0_2)"));
    lt_value *in[2] = {tu_load(LT_SOURCE_DIR "/models/zoo/if_dynamo/in_0.npy"),
                       tu_rand(LT_F32, 2, (int64_t[]){3, 5}, -1, 1, 78)};
    const char *names[2] = {"in0", "targets"};
    steps_at_01(t, 2, names, in);
    const lt_model *m = lt_trainer_model(t);
    assert_true(value_of(m, "val_0_2") == 2.0f);
    assert_true(value_of(m, "b.bias") != 0.0f);
    lt_trainer_free(t);
}

/* Weights written as Constant nodes (tests/data/const_weight.onnx: two in
 * a Loop body, as TorchScript writes a scripted loop's LSTM) do not train,
 * and the note says so; const_model.onnx, whose Constants are small, gets
 * no such note. */
static void constant_weights_noted(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(DATA "const_weight.onnx");
    assert_non_null(strstr(tu_notes, "2 Constant node(s) hold float tensors of 256 values or more (512 values; the "
                                     "largest 'w1', float32[4,64], in the body of Loop"));
    lt_trainer_free(t);
    t = tu_trainer_noting(DATA "const_model.onnx");
    assert_null(strstr(tu_notes, "Constant node(s)"));
    lt_trainer_free(t);
}

/* One all-ones scale and one zero bias read by two LayerNormalizations:
 * the note says they train as one tensor each; const_model.onnx, whose
 * weights are each read once, gets no such note. */
static void merged_weights_noted(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(DATA "merged_scales.onnx");
    assert_non_null(strstr(tu_notes, "2 weight(s) holding one value throughout feed several nodes each"));
    lt_trainer_free(t);
    lt_trainer_free(one_step(0));
    assert_null(strstr(tu_notes, "feed several nodes"));
}

/* A -inf mask stored as an initializer stays fixed, with a note, through
 * steps with weight decay (0 * -inf would make it nan) and through --init
 * random; the weights beside it train. */
static void infinite_mask_fixed(void **state)
{
    (void)state;
    for (int init = 0; init < 2; init++) {
        lt_train_opts o;
        lt_train_defaults(&o);
        o.on_note = tu_keep_note;
        o.init_random = init;
        o.optim.kind = LT_OPTIM_MOMENTUM;
        o.optim.weight_decay = 0.01;
        tu_notes[0] = 0;
        lt_trainer *t = NULL;
        lt_err err;
        if (lt_trainer_new(DATA "inf_mask.onnx", &o, &t, &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_non_null(strstr(tu_notes, "1 initializer(s) hold -inf or inf, as masks do, and are kept fixed"));
        assert_non_null(strstr(tu_notes, "'mask'"));
        double w0 = value_of(lt_trainer_model(t), "fc.weight");
        lt_value *in[2] = {tu_rand(LT_F32, 2, (int64_t[]){32, 4}, -1, 1, 78), NULL};
        double y[32];
        for (int i = 0; i < 32; i++)
            y[i] = i % 2;
        in[1] = tu_from(LT_I64, 1, (int64_t[]){32}, y);
        const char *names[2] = {"x", "labels"};
        double loss = 0;
        for (int step = 0; step < 3; step++) {
            if (lt_trainer_step(t, 0.1, 2, names, in, &loss, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_true(isfinite(loss));
        }
        const lt_tensor *mask = param(lt_trainer_model(t), "mask");
        assert_true(lt_tensor_get_f64(mask, 0) == 0 && lt_tensor_get_f64(mask, 1) == 0);
        assert_true(isinf(lt_tensor_get_f64(mask, 2)) && lt_tensor_get_f64(mask, 2) < 0);
        assert_true(value_of(lt_trainer_model(t), "fc.weight") != w0);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
        lt_trainer_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(scales_start_at_one), cmocka_unit_test(half_weight_named),
                                       cmocka_unit_test(graph_constants_stay), cmocka_unit_test(branch_literal_stays),
                                       cmocka_unit_test(tf2onnx_constants_stay), cmocka_unit_test(tf2onnx_fused_bn_noted),
                                       cmocka_unit_test(constant_weights_noted),
                                       cmocka_unit_test(merged_weights_noted),
                                       cmocka_unit_test(infinite_mask_fixed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
