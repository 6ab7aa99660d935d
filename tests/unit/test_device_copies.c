/* What crosses the edges of a device backend in a training step, on the
 * device-path CPU backend (cpu-device): after the warm-up, a step of the
 * shipped Loop-RNN (an ONNX Loop, trained through the recursion the AD
 * makes of it), TreeLSTM (a Loop over tree nodes with gathers and scatters)
 * and LSTM brings back only the loss, and uploads only the batch and the
 * loop counters and indices the host keeps (integer scalars and short
 * vectors): accumulation cells stay in device memory, a call's arguments
 * are handed on where they are, loop conditions are computed on the host.
 * The losses are those of the host backend, step for step. */
#include "testutil.h"
#include "runtime/backend.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"
#define WARMUP 2
#define STEPS 3

typedef struct run_out {
    double loss[WARMUP + STEPS];
    double uploads, downloads, upload_bytes, download_bytes; /* per steady step */
} run_out;

static void train(const char *model, const char *backend, int nin, const char *const *names, lt_value *const *in,
                  run_out *out)
{
    setenv("LANTERN_BACKEND", backend, 1);
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.onnx", model);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.optim.momentum = 0.9;
    lt_trainer *t;
    lt_err err;
    if (lt_trainer_new(path, &o, &t, &err) != LT_OK)
        fail_msg("%s on %s: %s", model, backend, err.msg);
    lt_run_stats s0 = {0}, s1;
    for (int s = 0; s < WARMUP + STEPS; s++) {
        if (s == WARMUP)
            lt_trainer_stats(t, &s0);
        if (lt_trainer_step(t, 0.01, nin, names, in, &out->loss[s], &err) != LT_OK)
            fail_msg("%s on %s: step %d: %s", model, backend, s, err.msg);
    }
    lt_trainer_stats(t, &s1);
    /* the stats are averages over the runs so far: back to totals */
    double r0 = (double)s0.runs, r1 = (double)s1.runs, n = r1 - r0;
    assert_true(n > 0);
    out->uploads = (s1.uploads * r1 - s0.uploads * r0) / n;
    out->downloads = (s1.downloads * r1 - s0.downloads * r0) / n;
    out->upload_bytes = (s1.upload_bytes * r1 - s0.upload_bytes * r0) / n;
    out->download_bytes = (s1.download_bytes * r1 - s0.download_bytes * r0) / n;
    lt_trainer_free(t);
    unsetenv("LANTERN_BACKEND");
}

static size_t value_bytes(const lt_value *v) { return lt_tensor_nbytes(&v->t); }

static void check(const char *model, int nin, const char *const *names, lt_value *const *in)
{
    run_out host, dev;
    memset(&host, 0, sizeof host);
    memset(&dev, 0, sizeof dev);
    train(model, "cpu", nin, names, in, &host);
    train(model, "cpu-device", nin, names, in, &dev);
    size_t batch = 0;
    for (int i = 0; i < nin; i++)
        batch += value_bytes(in[i]);
    printf("%s on cpu-device, per step: %.1f uploads (%.0f bytes; the batch is %zu), %.1f downloads (%.0f bytes)\n",
           model, dev.uploads, dev.upload_bytes, batch, dev.downloads, dev.download_bytes);
    for (int s = 0; s < WARMUP + STEPS; s++) {
        printf("  step %d: loss %.9g (host %.9g)\n", s, dev.loss[s], host.loss[s]);
        assert_true(isfinite(host.loss[s]));
        if (fabs(dev.loss[s] - host.loss[s]) > 1e-6 * fmax(1.0, fabs(host.loss[s])))
            fail_msg("%s: step %d: loss %.9g on cpu-device, %.9g on the host", model, s, dev.loss[s], host.loss[s]);
    }
    /* only the loss comes back */
    if (dev.downloads > 1.0 || dev.download_bytes > 8.0)
        fail_msg("%s: %.1f downloads (%.0f bytes) per step; only the loss should come back", model, dev.downloads,
                 dev.download_bytes);
    /* the batch goes up, plus integer scalars and short index vectors */
    if (dev.upload_bytes > (double)batch + 8192.0)
        fail_msg("%s: %.0f bytes uploaded per step for a %zu-byte batch", model, dev.upload_bytes, batch);
}

static void rnn_loop(void **state)
{
    (void)state;
    lt_value *x = tu_load(MODELS "ref/x8_seq.npy"), *y = tu_load(MODELS "ref/y8.npy");
    const char *names[2] = {"x", "labels"};
    lt_value *in[2] = {x, y};
    check("rnn_loop", 2, names, in);
    lt_value_free(x);
    lt_value_free(y);
}

static void lstm(void **state)
{
    (void)state;
    lt_value *x = tu_load(MODELS "ref/x8_seq.npy"), *y = tu_load(MODELS "ref/y8.npy");
    const char *names[2] = {"x", "labels"};
    lt_value *in[2] = {x, y};
    check("lstm", 2, names, in);
    lt_value_free(x);
    lt_value_free(y);
}

/* One tree of 11 nodes in post-order: 6 leaves with word ids, internal
 * nodes with their two children, a sentiment class per node. */
static void treelstm(void **state)
{
    (void)state;
    const double words[11] = {17, 3, -1, 150, 42, -1, -1, 9, 199, -1, -1};
    const double children[22] = {-1, -1, -1, -1, 0, 1, -1, -1, -1, -1, 3, 4, 2, 5, -1, -1, -1, -1, 7, 8, 6, 9};
    const double labels[11] = {1, 4, 2, 0, 3, 3, 1, 2, 4, 0, 2};
    int64_t m = 11, cd[2] = {11, 2};
    lt_value *w = tu_from(LT_I64, 1, &m, words), *c = tu_from(LT_I64, 2, cd, children),
             *y = tu_from(LT_I64, 1, &m, labels);
    const char *names[3] = {"words", "children", "labels"};
    lt_value *in[3] = {w, c, y};
    check("treelstm", 3, names, in);
    lt_value_free(w);
    lt_value_free(c);
    lt_value_free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_loop),
        cmocka_unit_test(lstm),
        cmocka_unit_test(treelstm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
