/* The lantern command end to end: run writes .npy outputs that match
 * PyTorch, import reports unsupported ops with exit 2, bad input gets one
 * line and exit 2, grad ties a folded transposed copy to its weight (one
 * note; --no-tie keeps the copy's gradient). */
#include "testutil.h"
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

/* Runs cmd; returns the exit code and the captured stderr's line count. */
static int sh(const char *cmd, int *err_lines, char *err_text, size_t len)
{
    char full[4096], errf[] = "/tmp/lt_cli_errXXXXXX";
    int fd = mkstemp(errf);
    close(fd);
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, errf);
    int st = system(full);
    FILE *f = fopen(errf, "r");
    int lines = 0;
    size_t got = f ? fread(err_text, 1, len - 1, f) : 0;
    err_text[got] = 0;
    for (size_t i = 0; i < got; i++)
        lines += err_text[i] == '\n';
    if (f)
        fclose(f);
    unlink(errf);
    *err_lines = lines;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void run_writes_outputs(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_cli_outXXXXXX", cmd[2048], text[4096];
    assert_non_null(mkdtemp(dir));
    int lines;
    snprintf(cmd, sizeof cmd, "%s run %smlp.onnx --input x=%sref/x8_flat.npy --output-dir %s", LANTERN, MODELS,
             MODELS, dir);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 0);
    char out[256];
    snprintf(out, sizeof out, "%s/logits.npy", dir);
    lt_err err;
    lt_value *got, *want;
    assert_int_equal(lt_value_load(out, &got, &err), LT_OK);
    assert_int_equal(lt_value_load(MODELS "ref/mlp_logits.npy", &want, &err), LT_OK);
    char why[256];
    if (!lt_value_close(got, want, 1e-4, 1e-4, why, sizeof why))
        fail_msg("%s", why);
    lt_value_free(got);
    lt_value_free(want);
    unlink(out);
    rmdir(dir);
}

static void bad_input_one_line(void **state)
{
    (void)state;
    char cmd[2048], text[4096];
    int lines;
    /* a file that is not a model */
    snprintf(cmd, sizeof cmd, "%s import %sref/x8_flat.npy", LANTERN, MODELS);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(text, "x8_flat.npy"));
    /* an input of the wrong shape */
    snprintf(cmd, sizeof cmd, "%s run %smlp.onnx --input x=%sref/x8_img.npy", LANTERN, MODELS, MODELS);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(text, "input 'x'"));
    /* a missing file */
    snprintf(cmd, sizeof cmd, "%s run %smlp.onnx --input x=/nonexistent.npy", LANTERN, MODELS);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
    assert_int_equal(lines, 1);
    /* an unknown subcommand */
    snprintf(cmd, sizeof cmd, "%s frobnicate", LANTERN);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
}

static void import_reports(void **state)
{
    (void)state;
    char cmd[2048], text[4096];
    int lines;
    snprintf(cmd, sizeof cmd, "%s import --print %srnn_loop.onnx", LANTERN, MODELS);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 0);
    assert_int_equal(lines, 0);
}

static lt_value *load(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    lt_err err;
    lt_value *v = NULL;
    if (lt_value_load(path, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return v;
}

/* grad: sum loss, the same loss as a vector-Jacobian product with a seed of
 * ones, and gradients with respect to inputs */
static void grad_outputs(void **state)
{
    (void)state;
    char d1[] = "/tmp/lt_cli_g1XXXXXX", d2[] = "/tmp/lt_cli_g2XXXXXX", cmd[2048], text[4096], seedf[300];
    assert_non_null(mkdtemp(d1));
    assert_non_null(mkdtemp(d2));
    int lines;
    snprintf(cmd, sizeof cmd, "%s grad %sif_model.onnx --input x=%sref/if_x.npy --wrt-inputs --output-dir %s", LANTERN,
             MODELS, MODELS, d1);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 0);
    int64_t dims[2] = {3, 4};
    double ones[12];
    for (int i = 0; i < 12; i++)
        ones[i] = 1;
    lt_value *seed = tu_from(LT_F32, 2, dims, ones);
    snprintf(seedf, sizeof seedf, "%s/seed.npy", d2);
    lt_err err;
    assert_int_equal(lt_value_save_npy(seed, seedf, &err), LT_OK);
    snprintf(cmd, sizeof cmd, "%s grad %sif_model.onnx --input x=%sref/if_x.npy --seed y=%s --output-dir %s", LANTERN,
             MODELS, MODELS, seedf, d2);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 0);
    const char *names[] = {"A", "B", "c"};
    for (int i = 0; i < 3; i++) {
        lt_value *a = load(d1, names[i]), *b = load(d2, names[i]);
        char why[256];
        if (!lt_value_close(a, b, 1e-6, 1e-7, why, sizeof why))
            fail_msg("%s: %s", names[i], why);
        lt_value_free(a);
        lt_value_free(b);
    }
    lt_value *gx = load(d1, "x");
    assert_int_equal(gx->t.numel, 24);
    lt_value_free(gx);
    lt_value_free(seed);
    /* softmax cross-entropy without labels is a usage error */
    snprintf(cmd, sizeof cmd, "%s grad %smlp.onnx --input x=%sref/x8_flat.npy --loss softmax-cross-entropy", LANTERN,
             MODELS, MODELS);
    assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
    assert_int_equal(lines, 1);
    /* a seed not shaped like its output: one line naming the option and
     * the file (rank) or the seed's product with the output (batch) */
    int64_t bad[2][2] = {{3, 7}, {5, 4}};
    for (int b = 0; b < 2; b++) {
        lt_value *sb = tu_from(LT_F32, 2, bad[b], ones);
        assert_int_equal(lt_value_save_npy(sb, seedf, &err), LT_OK);
        lt_value_free(sb);
        snprintf(cmd, sizeof cmd, "%s grad %sif_model.onnx --input x=%sref/if_x.npy --seed y=%s", LANTERN, MODELS,
                 MODELS, seedf);
        assert_int_equal(sh(cmd, &lines, text, sizeof text), 2);
        assert_int_equal(lines, 1);
        if (b == 0) {
            char want[400];
            snprintf(want, sizeof want, "--seed y=%s expects float32[", seedf);
            if (!strstr(text, want))
                fail_msg("%s", text);
        } else if (!strstr(text, "'y_seed * y'")) {
            fail_msg("%s", text);
        }
    }
    /* a float16 loss is printed as its value (it was read as a float32's
     * bytes): the same as the float64 run's to float16 rounding */
    int64_t xd[2] = {5, 4};
    lt_value *xh = tu_rand(LT_F32, 2, xd, -1, 1, 9);
    char xf[300];
    snprintf(xf, sizeof xf, "%s/xh.npy", d2);
    assert_int_equal(lt_value_save_npy(xh, xf, &err), LT_OK);
    lt_value_free(xh);
    double printed[2];
    for (int w = 0; w < 2; w++) {
        snprintf(cmd, sizeof cmd, "%s grad " LT_SOURCE_DIR "/tests/data/autocast_mlp.onnx --input x=%s%s", LANTERN, xf,
                 w ? " --f64" : "");
        char out[4096];
        if (tu_sh(cmd, out, sizeof out, text, sizeof text) != 0)
            fail_msg("%s: %s", cmd, text);
        const char *at = strstr(out, "loss: ");
        assert_non_null(at);
        printed[w] = atof(at + 6);
    }
    if (!(fabs(printed[0] - printed[1]) <= 2e-3 * fabs(printed[1]) + 1e-3))
        fail_msg("float16 loss printed %g, float64 %g", printed[0], printed[1]);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", d1, d2);
    assert_int_equal(system(cmd), 0);
}

static bool exists(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    return access(path, F_OK) == 0;
}

static void grad_ties(void **state)
{
    (void)state;
    const char *tied = LT_SOURCE_DIR "/tests/data/tied/";
    for (int no_tie = 0; no_tie < 2; no_tie++) {
        char d[] = "/tmp/lt_cli_tieXXXXXX", cmd[2048], text[4096];
        assert_non_null(mkdtemp(d));
        int lines;
        snprintf(cmd, sizeof cmd,
                 "%s grad %stied.onnx --input ids=%ssgd/ids0.npy --loss softmax-cross-entropy --labels %ssgd/y0.npy "
                 "--output-dir %s%s",
                 LANTERN, tied, tied, tied, d, no_tie ? " --no-tie" : "");
        assert_int_equal(sh(cmd, &lines, text, sizeof text), 0);
        assert_int_equal(lines, no_tie ? 0 : 1);
        assert_int_equal(strstr(text, "val_2 = transpose of out.weight") != NULL, !no_tie);
        assert_true(exists(d, "out.weight"));
        assert_int_equal(exists(d, "val_2"), no_tie);
        snprintf(cmd, sizeof cmd, "rm -rf %s", d);
        assert_int_equal(system(cmd), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_writes_outputs),
        cmocka_unit_test(bad_input_one_line),
        cmocka_unit_test(import_reports),
        cmocka_unit_test(grad_outputs),
        cmocka_unit_test(grad_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
