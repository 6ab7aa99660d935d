/* The shipped CNN (models/cnn.onnx: Conv, MaxPool, Relu, Gemm, softmax
 * cross-entropy) trained by `lantern train` for 20 steps on the host and on
 * cuda from the same seed and data: the per-step losses of the two runs
 * (--log CSV) agree within a relative 1e-5 (TF32 off; sums run in another
 * order on the GPU: 1.1e-7 at most in 40 runs on an H200). Skipped (exit 77) without a CUDA device (failed under
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
#define CURVE_TOL 1e-5

static char dir[] = "/tmp/lt_cuda_train_XXXXXX";

/* Trains on backend be, with LANTERN_CUDNN_ALGO=algos where algos is not
 * NULL; losses[] gets the train loss of each step. -2: cuDNN cannot run the
 * algorithms named on these convolutions. */
static int train_with(const char *be, const char *algos, double *losses)
{
    char cmd[4096], log[512], out[512];
    snprintf(log, sizeof log, "%s/%s.csv", dir, be);
    snprintf(out, sizeof out, "%s/%s.out", dir, be);
    snprintf(cmd, sizeof cmd,
             "LANTERN_BACKEND=%s LANTERN_TF32=0 LANTERN_CUDNN_ALGO=%s %s train %scnn.onnx --data mnist=%s/data "
             "--optimizer momentum --lr 0.05 --batch 16 --epochs 1 --limit %d --test-limit 16 --seed 7 --log %s "
             "-o %s/%s.onnx >%s 2>&1",
             be, algos ? algos : "", LANTERN, MODELS, dir, 16 * STEPS, log, dir, be, out);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "grep -q 'cannot run algorithm' %s", out);
        if (system(cmd) == 0)
            return -2;
        snprintf(cmd, sizeof cmd, "cat %s", out);
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

static int train(const char *be, double *losses) { return train_with(be, NULL, losses); }

/* The largest relative difference of two loss curves */
static double curve_gap(const double *a, const double *b)
{
    double worst = 0;
    for (int i = 0; i < STEPS; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / fabs(a[i]));
    return worst;
}

static void test_cnn_curve(void **state)
{
    (void)state;
    double cpu[STEPS], gpu[STEPS];
    int nc = train("cpu", cpu), ng = train("cuda", gpu);
    assert_int_equal(nc, STEPS);
    assert_int_equal(ng, STEPS);
    for (int i = 0; i < STEPS; i++)
        printf("step %2d: cpu %.7f cuda %.7f rel %.2e\n", i + 1, cpu[i], gpu[i], fabs(cpu[i] - gpu[i]) / fabs(cpu[i]));
    double worst = curve_gap(cpu, gpu);
    if (worst > CURVE_TOL)
        fail_msg("the cuda loss curve leaves the CPU's by a relative %.3g", worst);
    assert_true(gpu[STEPS - 1] < gpu[0]);
}

/* Every cuDNN algorithm the backend may choose in full float32, forced in
 * turn for one direction (the others on algorithm 0), trains the CNN on
 * the CPU's loss curve: cudnnFind takes whichever ran fastest, so any of
 * them can be the one a run gets. The non-fused Winograd algorithms (forward
 * 7, backward data 5, backward filter 5) are left out by the backend; forced
 * here, the forward one must still leave the curve (2.3e-5 at the first
 * step on an H200), or the reason for leaving it out has gone. */
static void test_every_algorithm(void **state)
{
    (void)state;
    static const struct {
        const char *dir;
        int count, winograd_nonfused;
    } dirs[] = {{"fwd", 8, 7}, {"data", 6, 5}, {"filter", 7, 5}};
    double cpu[STEPS], gpu[STEPS];
    assert_int_equal(train("cpu", cpu), STEPS);
    int ran = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
        for (int a = 0; a < dirs[d].count; a++) {
            char algos[96];
            snprintf(algos, sizeof algos, "fwd:%d,data:%d,filter:%d", d == 0 ? a : 0, d == 1 ? a : 0, d == 2 ? a : 0);
            int n = train_with("cuda", algos, gpu);
            if (n == -2)
                continue; /* cuDNN has no such kernel for these shapes */
            assert_int_equal(n, STEPS);
            double gap = curve_gap(cpu, gpu);
            printf("%-6s algorithm %d: curve %.2e from the CPU's\n", dirs[d].dir, a, gap);
            if (a == dirs[d].winograd_nonfused) {
                if (d == 0 && gap < 1e-4)
                    fail_msg("the forward non-fused Winograd algorithm now keeps the curve (%.2e): allow it again",
                             gap);
                continue;
            }
            ran++;
            if (gap > CURVE_TOL)
                fail_msg("%s algorithm %d leaves the CPU's curve by %.3g", dirs[d].dir, a, gap);
        }
    assert_true(ran >= 9);
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cnn_curve), cmocka_unit_test(test_every_algorithm)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
