/* Times `lantern run`-style inference: median wall time per batch for a model
 * on random inputs (fixed seed) after warm-up. Not a test.
 *   bench_run MODEL BATCH [REPS] */
#include "lantern.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>




static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_run MODEL BATCH [REPS]\n");
        return 2;
    }
    int batch = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 50;
    const char *threads = getenv("LANTERN_THREADS");
    lt_set_num_threads(threads ? atoi(threads) : 0);
    lt_err err;
    lt_model *m;
    if (lt_model_load(argv[1], &m, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_model_input_shape(m, 0, &rank, dims);
    dims[0] = batch;
    for (int i = 1; i < rank; i++)
        if (dims[i] < 1)
            dims[i] = 1;
    lt_tensor t = {.dtype = LT_F32, .rank = rank};
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        n *= dims[i];
    }
    t.numel = n;
    float *data = malloc(sizeof(float) * n);
    uint64_t s = 42;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = (float)(s >> 40) / (float)(1 << 24);
    }
    t.data = data;
    lt_value *x;
    lt_session *sess;
    if (lt_value_from_tensor(&t, &x, &err) != LT_OK || lt_session_new(m, &sess, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const char *name = lt_model_input_name(m, 0);
    int nout = lt_model_num_outputs(m);
    lt_value **outs = calloc(nout, sizeof *outs);
    double *times = malloc(sizeof(double) * reps);
    for (int r = -5; r < reps; r++) {
        double t0 = now();
        if (lt_session_run(sess, 1, &name, &x, outs, &err) != LT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        double dt = now() - t0;
        if (r >= 0)
            times[r] = dt;
        for (int i = 0; i < nout; i++)
            lt_value_free(outs[i]);
    }
    qsort(times, reps, sizeof *times, cmp);
    printf("%s batch %d: median %.3f ms, min %.3f ms over %d runs (%.0f samples/s)\n", argv[1], batch,
           times[reps / 2] * 1e3, times[0] * 1e3, reps, batch / times[reps / 2]);
    free(times);
    free(outs);
    free(data);
    lt_value_free(x);
    lt_session_free(sess);
    lt_model_free(m);
    return 0;
}
