/* The shipped models against PyTorch: logits for 8 Fashion-MNIST test images
 * saved by models/make_models.py, the Loop-written RNN against the RNN op,
 * and the If model against a direct evaluation in double. */
#include "testutil.h"
#include <math.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"

static lt_value *run_model(const char *model, const char *input)
{
    lt_err err;
    lt_model *m;
    lt_session *s;
    if (lt_model_load(model, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_value *x = tu_load(input), *y = NULL;
    const char *name = lt_model_input_name(m, 0);
    if (lt_session_run(s, 1, &name, &x, &y, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value_free(x);
    lt_session_free(s);
    lt_model_free(m);
    return y;
}

static void compare(const char *model, const char *input, const char *ref, double rtol, double atol)
{
    lt_value *y = run_model(model, input), *want = tu_load(ref);
    char why[256];
    if (!lt_value_close(y, want, rtol, atol, why, sizeof why))
        fail_msg("%s: %s", model, why);
    lt_value_free(y);
    lt_value_free(want);
}

static void mlp_matches_pytorch(void **s) { (void)s; compare(MODELS "mlp.onnx", MODELS "ref/x8_flat.npy", MODELS "ref/mlp_logits.npy", 1e-4, 1e-4); }
static void cnn_matches_pytorch(void **s) { (void)s; compare(MODELS "cnn.onnx", MODELS "ref/x8_img.npy", MODELS "ref/cnn_logits.npy", 1e-4, 1e-4); }
static void rnn_matches_pytorch(void **s) { (void)s; compare(MODELS "rnn.onnx", MODELS "ref/x8_seq.npy", MODELS "ref/rnn_logits.npy", 1e-4, 1e-4); }
static void lstm_matches_pytorch(void **s) { (void)s; compare(MODELS "lstm.onnx", MODELS "ref/x8_seq.npy", MODELS "ref/lstm_logits.npy", 1e-4, 1e-4); }
static void loop_rnn_matches_pytorch(void **s) { (void)s; compare(MODELS "rnn_loop.onnx", MODELS "ref/x8_seq.npy", MODELS "ref/rnn_logits.npy", 1e-4, 1e-4); }

/* y = sum(x) > 0 ? relu(x A) + c : x B, with A, c, B read from the model */
static void if_model_both_branches(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(MODELS "if_model.onnx", &m, &err), LT_OK);
    const lt_tensor *A = NULL, *B = NULL, *c = NULL;
    for (int i = 0; i < m->nparams; i++) {
        if (!strcmp(m->params[i].name, "A")) A = &m->params[i].data;
        if (!strcmp(m->params[i].name, "B")) B = &m->params[i].data;
        if (!strcmp(m->params[i].name, "c")) c = &m->params[i].data;
    }
    assert_true(A && B && c);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    for (int trial = 0; trial < 2; trial++) {
        int64_t d[2] = {3, 8};
        /* trial 0: positive sum (then), trial 1: negative sum (else) */
        lt_value *x = trial == 0 ? tu_rand(LT_F32, 2, d, 0.1, 1.0, 7) : tu_rand(LT_F32, 2, d, -1.0, -0.1, 8);
        lt_value *y = NULL;
        const char *name = "x";
        if (lt_session_run(s, 1, &name, &x, &y, &err) != LT_OK)
            fail_msg("%s", err.msg);
        double want[12];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double acc = 0;
                for (int k = 0; k < 8; k++)
                    acc += tu_get(x, i * 8 + k) * ((const float *)(trial == 0 ? A : B)->data)[k * 4 + j];
                want[i * 4 + j] = trial == 0 ? fmax(acc, 0) + ((const float *)c->data)[j] : acc;
            }
        tu_assert_close(y, want, 12, 1e-5, 1e-6, 7 + trial);
        lt_value_free(x);
        lt_value_free(y);
    }
    lt_session_free(s);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_matches_pytorch),      cmocka_unit_test(cnn_matches_pytorch),
        cmocka_unit_test(rnn_matches_pytorch),      cmocka_unit_test(lstm_matches_pytorch),
        cmocka_unit_test(loop_rnn_matches_pytorch), cmocka_unit_test(if_model_both_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
