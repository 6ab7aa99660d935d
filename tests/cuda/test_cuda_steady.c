/* Device memory in a steady-state training step on the cuda backend: the
 * shipped CNN, LSTM, Loop-RNN and SqueezeNet each take training steps
 * through lt_trainer_step (as `lantern train --device cuda` does); after
 * three warm-up steps the backend makes no cudaMalloc (lt_cuda_mallocs
 * stays put), the device memory in use after each step is back at what it
 * was after the warm-up (nothing leaks from step to step), and the losses
 * stay finite. Skipped (exit 77) without a CUDA device (failed under
 * LANTERN_CUDA_REQUIRED=1, cuda_suite.h). */
#include "testutil.h"
#include "cuda_suite.h"
#include "cuda/cuda_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"
#define WARMUP 3
#define STEPS 6

static const lt_backend *cuda_be;

static void check_model(const char *model, const char *input, bool all_on_device)
{
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.onnx", model);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.optim.momentum = 0.9;
    lt_trainer *t;
    lt_err err;
    if (lt_trainer_new(path, &o, &t, &err) != LT_OK)
        fail_msg("%s: %s", model, err.msg);
    snprintf(path, sizeof path, MODELS "ref/%s.npy", input);
    lt_value *x = tu_load(path), *y = tu_load(MODELS "ref/y8.npy");
    const char *names[2] = {lt_model_input_name(lt_trainer_model(t), 0), "labels"};
    lt_value *in[2] = {x, y};
    size_t mallocs = 0, in_use = 0;
    for (int s = 0; s < WARMUP + STEPS; s++) {
        double loss;
        if (lt_trainer_step(t, 0.01, 2, names, in, &loss, &err) != LT_OK)
            fail_msg("%s: step %d: %s", model, s, err.msg);
        if (!isfinite(loss))
            fail_msg("%s: step %d: loss %g", model, s, loss);
        size_t m = lt_cuda_mallocs(cuda_be), u = cuda_be->bytes_in_use(cuda_be);
        printf("%s step %d: loss %.6f, cudaMalloc calls %zu, device bytes in use %zu\n", model, s, loss, m, u);
        if (s == WARMUP - 1) {
            mallocs = m;
            in_use = u;
        } else if (s >= WARMUP) {
            if (m != mallocs)
                fail_msg("%s: step %d called cudaMalloc %zu times after the warm-up", model, s, m - mallocs);
            if (u != in_use)
                fail_msg("%s: step %d ends with %zu device bytes in use, the warm-up with %zu", model, s, u, in_use);
        }
    }
    lt_run_stats st;
    lt_trainer_stats(t, &st);
    printf("%s: per step %.1f nodes on the device, %.1f on the host, %.1f uploads, %.1f downloads\n", model,
           st.device_nodes, st.host_nodes, st.uploads, st.downloads);
    /* the step ran on the device: nodes there, and (where every op has a
     * cuda kernel: no LSTM, no loop body) most of them */
    assert_true(st.device_nodes > 0);
    if (all_on_device)
        assert_true(st.device_nodes > st.host_nodes);
    lt_value_free(x);
    lt_value_free(y);
    lt_trainer_free(t);
}

static void cnn(void **s) { (void)s; check_model("cnn", "x8_img", true); }
static void lstm(void **s) { (void)s; check_model("lstm", "x8_seq", false); }
static void rnn_loop(void **s) { (void)s; check_model("rnn_loop", "x8_seq", false); }
static void squeezenet(void **s) { (void)s; check_model("squeezenet", "x8_img", true); }

int main(void)
{
    lt_err err;
    cuda_be = lt_backend_open("cuda", &err);
    if (!cuda_be)
        return cuda_suite_unopened(err.msg);
    setenv("LANTERN_BACKEND", "cuda", 1);
    setenv("LANTERN_TF32", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cnn),
        cmocka_unit_test(lstm),
        cmocka_unit_test(rnn_loop),
        cmocka_unit_test(squeezenet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
