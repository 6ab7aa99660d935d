/* Training-step benchmark (not a test): median wall time of one whole step
 * (forward + backward through the AD program, then an SGD-momentum update of
 * every parameter in place) for the shipped models on real Fashion-MNIST
 * batches, as lt_train does it.
 *
 *   bench_train [MODELS_DIR [WARMUP [ITERS [NAME...]]]]
 *
 * NAME is one of mlp cnn rnn_loop lstm (default: all four). Threads follow
 * OMP_NUM_THREADS. Output: one line "train NAME batch B median_ms X min_ms Y
 * params P minflt_per_step F", F being the minor page faults per timed step
 * (getrusage): a step that allocates nothing new from the system makes 0. */
#include "runtime/runtime.h"
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define NBATCH 8 /* distinct batches cycled through, loaded before timing */

typedef struct bench_model {
    const char *name;
    int64_t batch;
} bench_model;

static const bench_model MODELS[] = {
    {"mlp", 128}, {"cnn", 64}, {"rnn_loop", 128}, {"lstm", 128},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Gradient outputs "<p>_grad" come in module parameter order (as in
 * runtime/train.c): pair each with the parameter tensor it updates. */
static int map_params(lt_model *m, int ngrad, lt_tensor **params)
{
    int p = 0;
    for (int g = 0; g < ngrad; g++) {
        const char *on = lt_model_output_name(m, g + 1);
        size_t l = strlen(on);
        for (; p < m->nparams; p++) {
            const lt_param *pp = &m->params[p];
            if (pp->trainable && l > 5 && strlen(pp->name) + 5 == l && strncmp(pp->name, on, l - 5) == 0 &&
                strcmp(on + l - 5, "_grad") == 0)
                break;
        }
        if (p == m->nparams) {
            fprintf(stderr, "gradient output '%s' matches no parameter\n", on);
            return -1;
        }
        params[g] = &m->params[p].data;
        p++;
    }
    return 0;
}

static int bench_one(const char *dir, const bench_model *bm, lt_dataset *train, int warmup, int iters)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, bm->name);
    lt_err err;
    lt_model *m = NULL;
    lt_session *s = NULL;
    lt_optim *opt = NULL;
    lt_value *xs[NBATCH] = {0}, *ys[NBATCH] = {0};
    lt_tensor **params = NULL;
    const lt_tensor **grads = NULL;
    lt_value **out = NULL;
    double *times = NULL;
    int rc = 1;
    lt_grad_opts go = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    if (lt_model_load(path, &m, &err) != LT_OK)
        goto fail;
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_model_input_shape(m, 0, &rank, dims);
    char xname[256];
    snprintf(xname, sizeof xname, "%s", lt_model_input_name(m, 0));
    if (rank < 1) {
        fprintf(stderr, "%s: input rank unknown\n", path);
        goto out;
    }
    dims[0] = bm->batch;
    int64_t n = lt_dataset_size(train);
    for (int b = 0; b < NBATCH; b++) {
        int64_t start = ((int64_t)b * bm->batch) % (n - bm->batch);
        if (lt_dataset_batch(train, start, bm->batch, rank, dims, &xs[b], &ys[b], &err) != LT_OK)
            goto fail;
    }
    if (lt_model_grad(m, &go, &err) != LT_OK)
        goto fail;
    int ngrad = lt_model_num_outputs(m) - 1;
    params = calloc((size_t)ngrad, sizeof *params);
    grads = calloc((size_t)ngrad, sizeof *grads);
    out = calloc((size_t)ngrad + 1, sizeof *out);
    times = calloc((size_t)iters, sizeof *times);
    if (!params || !grads || !out || !times) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    if (map_params(m, ngrad, params) != 0)
        goto out;
    lt_optim_opts oo;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &oo);
    oo.momentum = 0.9;
    if (lt_optim_new(&oo, ngrad, (const lt_tensor *const *)params, &opt, &err) != LT_OK ||
        lt_session_new(m, &s, &err) != LT_OK)
        goto fail;
    const char *names[2] = {xname, "labels"};
    /* a small learning rate keeps pretrained weights from drifting far over
     * the run; the work done per step does not depend on it */
    const double lr = 0.01;
    long flt0 = 0;
    for (int it = 0; it < warmup + iters; it++) {
        if (it == warmup)
            flt0 = minor_faults();
        lt_value *in[2] = {xs[it % NBATCH], ys[it % NBATCH]};
        double t0 = now();
        if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
            goto fail;
        for (int g = 0; g < ngrad; g++)
            grads[g] = lt_value_tensor(out[g + 1]);
        lt_status st = lt_optim_step(opt, lr, 1.0, params, grads, &err);
        for (int i = 0; i <= ngrad; i++) {
            lt_value_free(out[i]);
            out[i] = NULL;
        }
        if (st != LT_OK)
            goto fail;
        double t1 = now();
        if (it >= warmup)
            times[it - warmup] = (t1 - t0) * 1e3;
    }
    double flt = (double)(minor_faults() - flt0) / iters;
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    double med = iters % 2 ? times[iters / 2] : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
    printf("train %s batch %lld median_ms %.3f min_ms %.3f params %d minflt_per_step %.1f\n", bm->name,
           (long long)bm->batch, med, times[0], ngrad, flt);
    fflush(stdout);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "%s: %s\n", bm->name, err.msg);
out:
    for (int b = 0; b < NBATCH; b++) {
        lt_value_free(xs[b]);
        lt_value_free(ys[b]);
    }
    if (s)
        lt_session_free(s);
    if (opt)
        lt_optim_free(opt);
    if (m)
        lt_model_free(m);
    free(params);
    free(grads);
    free(out);
    free(times);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "models";
    int warmup = argc > 2 ? atoi(argv[2]) : 5;
    int iters = argc > 3 ? atoi(argv[3]) : 30;
    if (warmup < 0 || iters < 1) {
        fprintf(stderr, "usage: bench_train [MODELS_DIR [WARMUP [ITERS [NAME...]]]]\n");
        return 2;
    }
    const char *env = getenv("OMP_NUM_THREADS");
    lt_set_num_threads(env ? atoi(env) : 0);
    lt_err err;
    lt_dataset *train;
    if (lt_dataset_open("fashion-mnist", 0, &train, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
        int want = argc <= 4;
        for (int a = 4; a < argc; a++)
            want |= strcmp(argv[a], MODELS[i].name) == 0;
        if (want)
            rc |= bench_one(dir, &MODELS[i], train, warmup, iters);
    }
    lt_dataset_free(train);
    return rc;
}
