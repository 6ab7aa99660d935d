/* The shipped CNN (models/cnn.onnx: Conv, MaxPool, Relu, Gemm, softmax
 * cross-entropy) trained by `lantern train` for 20 steps on the host and on
 * cuda from the same seed and data: the per-step losses of the two runs
 * (--log CSV) agree within a relative 1e-3 (TF32 off; sums run in another
 * order on the GPU). Skipped (exit 77) without a CUDA device (failed under
 * LANTERN_CUDA_REQUIRED=1, cuda_suite.h). */
#include "testutil.h"
#include "cuda_suite.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"
#define STEPS 20

static char dir[] = "/tmp/lt_cuda_train_XXXXXX";

/* Trains on backend be; losses[] gets the train loss of each step. */
static int train(const char *be, double *losses)
{
    char cmd[4096], log[512];
    snprintf(log, sizeof log, "%s/%s.csv", dir, be);
    snprintf(cmd, sizeof cmd,
             "LANTERN_BACKEND=%s LANTERN_TF32=0 %s train %scnn.onnx --data mnist=%s/data --optimizer momentum "
             "--lr 0.05 --batch 16 --epochs 1 --limit %d --test-limit 16 --seed 7 --log %s -o %s/%s.onnx >%s/%s.out "
             "2>&1",
             be, LANTERN, MODELS, dir, 16 * STEPS, log, dir, be, dir, be);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/%s.out", dir, be);
        if (system(cmd) != 0)
            fprintf(stderr, "(no output)\n");
        return -1;
    }
    FILE *f = fopen(log, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < STEPS) {
        int epoch;
        long long step, global;
        double lr, loss;
        if (sscanf(line, "%d,%lld,%lld,%lf,%lf", &epoch, &step, &global, &lr, &loss) == 5)
            losses[n++] = loss;
    }
    fclose(f);
    return n;
}

static void test_cnn_curve(void **state)
{
    (void)state;
    double cpu[STEPS], gpu[STEPS];
    int nc = train("cpu", cpu), ng = train("cuda", gpu);
    assert_int_equal(nc, STEPS);
    assert_int_equal(ng, STEPS);
    double worst = 0;
    for (int i = 0; i < STEPS; i++) {
        double e = fabs(cpu[i] - gpu[i]) / fabs(cpu[i]);
        printf("step %2d: cpu %.7f cuda %.7f rel %.2e\n", i + 1, cpu[i], gpu[i], e);
        worst = e > worst ? e : worst;
    }
    if (worst > 1e-3)
        fail_msg("the cuda loss curve leaves the CPU's by a relative %.3g", worst);
    assert_true(gpu[STEPS - 1] < gpu[0]);
}

int main(void)
{
    lt_err err;
    if (!lt_backend_open("cuda", &err))
        return cuda_suite_unopened(err.msg);
    if (!mkdtemp(dir))
        return 1;
    char data[600];
    snprintf(data, sizeof data, "%s/data", dir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", data);
    if (system(cmd) != 0 || tu_write_idx_split(data, "train", 16 * STEPS, 31) ||
        tu_write_idx_split(data, "t10k", 16, 32))
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cnn_curve)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
