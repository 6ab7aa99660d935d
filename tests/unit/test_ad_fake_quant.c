/* Fake quantization (QuantizeLinear then DequantizeLinear, as torch's
 * quantization-aware training exports it) takes the straight-through
 * gradient torch's fake_quantize gives: dy passes to what was quantized
 * where round(x / scale) + zero_point lies in the type's range, and is cut
 * where the quantization clips; per tensor (x, uint8) and per channel (W,
 * int8, axis 1), against torch's gradients saved as files
 * (tests/data/fake_quant/make_fake_quant.py). Training keeps the
 * QuantizeLinear's float scales fixed, with a note, as PyTorch keeps its
 * observers' buffers. */
#include "testutil.h"
#include <math.h>
#include <string.h>

#define FQ LT_SOURCE_DIR "/tests/data/fake_quant/"

static lt_value *npy(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FQ "%s.npy", name);
    lt_value *v = NULL;
    lt_err err;
    if (lt_value_load(path, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return v;
}

static void close_to(const lt_value *got, const lt_value *want, const char *what)
{
    char why[256];
    if (!lt_value_close(got, want, 1e-5, 1e-6, why, sizeof why))
        fail_msg("%s: %s", what, why);
}

static void straight_through_as_torch(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = NULL;
    if (lt_model_load(FQ "fq.onnx", &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *seeds[1] = {"y"};
    lt_grad_opts o = {.loss = LT_LOSS_SEEDS, .nseeds = 1, .seed_outputs = seeds, .wrt_inputs = 1};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_value *in[2] = {npy("x"), npy("dy")}, *out[8] = {0};
    const char *names[2] = {"x", "y_seed"};
    if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int seen = 0, zeros = 0;
    for (int i = 1; i < lt_model_num_outputs(m); i++) {
        const char *name = lt_model_output_name(m, i);
        const char *want = !strcmp(name, "x_grad") ? "dx" : !strcmp(name, "W_grad") ? "dW" : NULL;
        if (want) {
            lt_value *ref = npy(want);
            close_to(out[i], ref, name);
            for (int64_t k = 0; k < ref->t.numel; k++)
                zeros += tu_get(ref, k) == 0;
            lt_value_free(ref);
            seen++;
        }
        lt_value_free(out[i]);
    }
    assert_int_equal(seen, 2);
    assert_true(zeros > 0); /* the clipped entries are among those checked */
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_session_free(s);
    lt_model_free(m);
}

static void observer_scales_fixed(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(FQ "fq.onnx");
    assert_non_null(strstr(tu_notes, "2 initializer(s) are the scales or zero points of QuantizeLinear nodes"));
    assert_non_null(strstr(tu_notes, "'xs'"));
    assert_non_null(strstr(tu_notes, "'s'"));
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(straight_through_as_torch),
                                       cmocka_unit_test(observer_scales_fixed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
