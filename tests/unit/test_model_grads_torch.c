/* Whole-model gradients of the shipped models against PyTorch autograd
 * (models/make_grad_refs.py): the batch-mean softmax cross-entropy of 8
 * Fashion-MNIST test images; every parameter's gradient must agree to a
 * relative error of 1e-3 (max-norm, float32). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"

static void check(const char *model, const char *input)
{
    char path[512];
    lt_err err;
    lt_model *m;
    snprintf(path, sizeof path, MODELS "%s.onnx", model);
    assert_int_equal(lt_model_load(path, &m, &err), LT_OK);
    lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, MODELS "ref/%s.npy", input);
    lt_value *ins[2] = {tu_load(path), tu_load(MODELS "ref/y8.npy")};
    const char *names[2] = {lt_model_input_name(m, 0), "labels"};
    int nout = lt_model_num_outputs(m);
    lt_value *outs[64] = {0};
    assert_true(nout <= 64);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 2, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, MODELS "ref/grads/%s/loss.npy", model);
    lt_value *loss = tu_load(path);
    double lw = lt_tensor_get_f64(&loss->t, 0), lg = lt_tensor_get_f64(&outs[0]->t, 0);
    if (fabs(lw - lg) > 1e-4 * fmax(1, fabs(lw)))
        fail_msg("%s: loss %.7g, PyTorch %.7g", model, lg, lw);
    double worst = 0;
    for (int i = 1; i < nout; i++) {
        char pname[256], fn[256];
        snprintf(pname, sizeof pname, "%s", lt_model_output_name(m, i));
        pname[strlen(pname) - 5] = 0; /* "_grad" */
        size_t k = 0;
        for (; pname[k]; k++) {
            char c = pname[k];
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
            fn[k] = ok ? c : '_';
        }
        fn[k] = 0;
        snprintf(path, sizeof path, MODELS "ref/grads/%s/%s.npy", model, fn);
        lt_value *want = tu_load(path);
        const lt_tensor *g = lt_value_tensor(outs[i]);
        assert_int_equal(g->numel, want->t.numel);
        double maxd = 0, maxw = 0;
        for (int64_t e = 0; e < g->numel; e++) {
            maxd = fmax(maxd, fabs(lt_tensor_get_f64(g, e) - lt_tensor_get_f64(&want->t, e)));
            maxw = fmax(maxw, fabs(lt_tensor_get_f64(&want->t, e)));
        }
        double rel = maxd / fmax(maxw, 1e-12);
        if (rel > 1e-3)
            fail_msg("%s: gradient of %s differs from PyTorch by %.3g (relative)", model, pname, rel);
        worst = fmax(worst, rel);
        lt_value_free(want);
    }
    printf("%s: %d gradients match PyTorch, worst relative error %.3g\n", model, nout - 1, worst);
    for (int i = 0; i < nout; i++)
        lt_value_free(outs[i]);
    lt_value_free(ins[0]);
    lt_value_free(ins[1]);
    lt_value_free(loss);
    lt_session_free(s);
    lt_model_free(m);
}

static void mlp(void **s) { (void)s; check("mlp", "x8_flat"); }
static void cnn(void **s) { (void)s; check("cnn", "x8_img"); }
static void rnn(void **s) { (void)s; check("rnn", "x8_seq"); }
static void lstm(void **s) { (void)s; check("lstm", "x8_seq"); }
static void rnn_loop(void **s) { (void)s; check("rnn_loop", "x8_seq"); }
static void squeezenet(void **s) { (void)s; check("squeezenet", "x8_img"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp),  cmocka_unit_test(cnn),      cmocka_unit_test(rnn),
        cmocka_unit_test(lstm), cmocka_unit_test(rnn_loop), cmocka_unit_test(squeezenet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
