/* Float initializers that are no weights (ir/freeze_buffers.c), on models
 * of tests/data/make_setting_models.py.
 *
 * A Resize's scales as a float initializer (torch's dynamo exporter writes
 * nn.Upsample(scale_factor=2) so: val_N = [1, 1, 2, 2]) get no gradient;
 * trained, weight decay alone moved them, and after one step the scales
 * 0.999 and 1.998 gave one channel of two, so the next step's Conv failed
 * (a YOLO-like network: "input has 63 channels, weights expect 64"). They
 * stay fixed, with a note, and the rest trains.
 *
 * The bias a BatchNorm folded into a Conv leaves (onnxscript's
 * FuseBatchNormIntoConv: beta - mean * gamma / sqrt(var + eps), under a
 * name the graph signature lacks) is made from the BatchNorm's
 * parameters, whose call the fused node carries: it trains as the Conv's
 * bias, as beta trains in PyTorch (it was kept fixed as a constant the
 * exporter folded, and that network's losses drifted from PyTorch's). */
#include "testutil.h"
#include <math.h>
#include <string.h>

#define DIR LT_SOURCE_DIR "/tests/data/settings/"

static void sgd(lt_train_opts *o, const char *data, int epochs, double wd)
{
    lt_train_defaults(o);
    o->data = data;
    o->loss = LT_LOSS_MSE;
    o->schedule.lr = 0.1;
    o->optim.weight_decay = wd;
    o->batch = 8;
    o->limit = 8;
    o->epochs = epochs;
    o->no_shuffle = 1;
    o->on_note = tu_keep_note;
    tu_notes[0] = 0;
}

/* Three SGD steps with weight decay: the scales stay [1, 1, 2, 2], the
 * note names them, and the Conv's weights move. */
static void resize_scales_stay(void **state)
{
    (void)state;
    lt_train_opts o;
    sgd(&o, "npy=" DIR "x.npy," DIR "y_resize.npy", 3, 0.01);
    lt_model *trained = NULL, *before = tu_model(DIR "resize.onnx");
    lt_err err;
    if (lt_train(DIR "resize.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_param *s = tu_ir_param(before, "val_3");
    assert_false(s->trainable);
    assert_true(s->op_setting);
    assert_true(tu_ir_param(before, "w")->trainable);
    assert_true(tu_max_rel_err(tu_param(trained, "val_3"), tu_param(before, "val_3")) == 0);
    assert_true(tu_max_rel_err(tu_param(trained, "w"), tu_param(before, "w")) > 1e-4);
    assert_non_null(strstr(tu_notes, "read only as operators' settings"));
    assert_non_null(strstr(tu_notes, "'val_3'"));
    lt_model_free(trained);
    lt_model_free(before);
}

/* One SGD step of out = conv1x1(x, W) + b': b' moves by -lr dL/db', as
 * the BatchNorm's beta does in PyTorch (the running mean is zero). */
static void fused_bn_bias_trains(void **state)
{
    (void)state;
    lt_model *m = tu_model(DIR "fused_bn.onnx");
    const lt_param *fb = tu_ir_param(m, "conv.weight_bias");
    assert_true(fb->trainable);
    assert_false(fb->torch_buffer);
    const lt_tensor *W = tu_param(m, "conv.weight"), *b = tu_param(m, "conv.weight_bias");
    lt_value *xv = tu_load(DIR "x.npy"), *yv = tu_load(DIR "y_bn.npy");
    double db[3] = {0}, want[3];
    for (int n = 0; n < 8; n++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < 4; i++) {
                double out = lt_tensor_get_f64(b, c);
                for (int k = 0; k < 2; k++)
                    out += lt_tensor_get_f64(W, c * 2 + k) * tu_get(xv, (n * 2 + k) * 4 + i);
                db[c] += 2 * (out - tu_get(yv, (n * 3 + c) * 4 + i)) / 96;
            }
    for (int c = 0; c < 3; c++)
        want[c] = lt_tensor_get_f64(b, c) - 0.1 * db[c];

    lt_train_opts o;
    sgd(&o, "npy=" DIR "x.npy," DIR "y_bn.npy", 1, 0);
    lt_model *trained = NULL;
    lt_err err;
    if (lt_train(DIR "fused_bn.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_tensor *got = tu_param(trained, "conv.weight_bias");
    double e = 0;
    for (int c = 0; c < 3; c++)
        e = fmax(e, fabs(lt_tensor_get_f64(got, c) - want[c]));
    print_message("fused bias after one step against the expected: %.2g (moved %.2g)\n", e,
                  fabs(want[0] - lt_tensor_get_f64(b, 0)));
    assert_true(e < 1e-6);
    assert_true(fabs(want[0] - lt_tensor_get_f64(b, 0)) > 1e-4);
    assert_non_null(strstr(tu_notes, "FuseBatchNormIntoConv"));
    lt_model_free(trained);
    lt_model_free(m);
    lt_value_free(xv);
    lt_value_free(yv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_scales_stay),
        cmocka_unit_test(fused_bn_bias_trains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
