/* mse and bce-logits targets for an output whose dims shape inference
 * cannot tell (tests/data/ad_loop_out_unknown.onnx: a Loop's per-step
 * states, [N, 8] only when run):
 * - targets of the output's size, [N, 8] or [N, 2, 4], give the loss of
 *   each element against its own target, computed here in double from the
 *   model's weights;
 * - targets of another size ([N, 1], which a broadcast in the loss would
 *   have compared with every column, or [N, 3]) are refused with one line
 *   naming the targets and the output, exit 2, nothing written. */
#include "test_dataset.h"
#include <math.h>
#include <sys/wait.h>

#define MODEL LT_SOURCE_DIR "/tests/data/ad_loop_out_unknown.onnx"
#define LANTERN LT_BINARY_DIR "/lantern"
#define N 32

static float xs[N * 4], ys[N * 8];

static void write_npz(const char *path, int yrank, const int64_t *ydims)
{
    int64_t xd[2] = {N, 4}, yn = 1;
    for (int d = 0; d < yrank; d++)
        yn *= ydims[d];
    td_array a[2] = {{"x.npy", "<f4", 2, xd, xs, sizeof xs}, {"y.npy", "<f4", yrank, ydims, ys, sizeof(float) * (size_t)yn}};
    td_write_npz(path, a, 2);
}

/* lantern train at lr 1e-12 (the weights stay): the step losses of --log */
static int train(const char *dir, const char *data, const char *loss, double *losses, char *msg, size_t len)
{
    char cmd[1024], ef[256], log[256];
    snprintf(ef, sizeof ef, "%s/err.txt", dir);
    snprintf(log, sizeof log, "%s/log.csv", dir);
    unlink(log);
    snprintf(cmd, sizeof cmd,
             "%s train %s --data npz=%s --loss %s --epochs 1 --batch 8 --lr 1e-12 --shuffle off --log %s "
             "-o %s/out.onnx >/dev/null 2>%s",
             LANTERN, MODEL, data, loss, log, dir, ef);
    int st = system(cmd);
    size_t got;
    uint8_t *e = td_read(ef, &got);
    snprintf(msg, len, "%.*s", (int)got, e ? (const char *)e : "");
    free(e);
    FILE *f = fopen(log, "r");
    char line[256];
    int k = 0;
    while (f && fgets(line, sizeof line, f) && k < 4) {
        int ep, step;
        double lr, l;
        if (sscanf(line, "%d,%d,%*d,%lf,%lf", &ep, &step, &lr, &l) == 4)
            losses[k++] = l;
    }
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The model's output for sample i: tanh(x W), then tanh of that times W. */
static void forward(const float *W, int i, double *out)
{
    double h[4], t[4];
    for (int c = 0; c < 4; c++)
        h[c] = xs[i * 4 + c];
    for (int s = 0; s < 2; s++) {
        for (int c = 0; c < 4; c++) {
            double a = 0;
            for (int r = 0; r < 4; r++)
                a += h[r] * W[r * 4 + c];
            t[c] = tanh(a);
        }
        for (int c = 0; c < 4; c++)
            h[c] = out[s * 4 + c] = t[c];
    }
}

static double reference(const float *W, int batch, bool mse)
{
    double sum = 0;
    for (int i = batch * 8; i < batch * 8 + 8; i++) {
        double z[8];
        forward(W, i, z);
        for (int k = 0; k < 8; k++) {
            double y = ys[i * 8 + k];
            sum += mse ? (z[k] - y) * (z[k] - y) : fmax(z[k], 0) - z[k] * y + log1p(exp(-fabs(z[k])));
        }
    }
    return sum / 64;
}

static void targets_follow_the_output(void **state)
{
    (void)state;
    uint64_t s = 34;
    for (int i = 0; i < N * 4; i++)
        xs[i] = (float)td_uniform(&s, -1.5, 1.5);
    for (int i = 0; i < N * 8; i++)
        ys[i] = (float)td_uniform(&s, 0, 1);
    lt_err err;
    lt_model *m = NULL;
    assert_int_equal(lt_model_load(MODEL, &m, &err), LT_OK);
    const float *W = NULL;
    for (int p = 0; p < lt_model_num_params(m); p++)
        if (!strcmp(lt_model_param_name(m, p), "W"))
            W = lt_model_param(m, p)->data;
    assert_non_null(W);

    char dir[64], path[128], msg[2048];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/d.npz", dir);
    const char *losses[2] = {"mse", "bce-logits"};
    const int64_t flat[2] = {N, 8}, grid[3] = {N, 2, 4};
    for (int l = 0; l < 2; l++) {
        for (int shape = 0; shape < 2; shape++) {
            write_npz(path, shape ? 3 : 2, shape ? grid : flat);
            double got[4] = {NAN, NAN, NAN, NAN};
            int rc = train(dir, path, losses[l], got, msg, sizeof msg);
            if (rc != 0)
                fail_msg("%s, targets of rank %d: exit %d: %s", losses[l], shape ? 3 : 2, rc, msg);
            for (int b = 0; b < 4; b++) {
                double want = reference(W, b, l == 0);
                if (!(fabs(got[b] - want) <= 1e-6 * fabs(want)))
                    fail_msg("%s, rank %d, step %d: loss %.9g, want %.9g", losses[l], shape ? 3 : 2, b + 1, got[b],
                             want);
            }
        }
        /* [N, 1] broadcast against every column before; [N, 3] failed in
         * the loss node without naming the data */
        const int64_t one[2] = {N, 1}, three[2] = {N, 3};
        for (int bad = 0; bad < 2; bad++) {
            char out[160];
            snprintf(out, sizeof out, "%s/out.onnx", dir);
            unlink(out);
            write_npz(path, 2, bad ? three : one);
            double got[4];
            int rc = train(dir, path, losses[l], got, msg, sizeof msg);
            assert_int_equal(rc, 2);
            char *nl = strchr(msg, '\n');
            if (!nl || nl[1])
                fail_msg("not one line: '%s'", msg);
            const char *want = bad ? "the targets, [8,3] in this batch" : "the targets, [8,1] in this batch";
            if (!strstr(msg, want) || !strstr(msg, "output 'y'") || !strstr(msg, "element by element"))
                fail_msg("%s: '%s' lacks '%s'", losses[l], msg, want);
            assert_int_equal(access(out, F_OK), -1);
        }
    }
    lt_model_free(m);
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(targets_follow_the_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
