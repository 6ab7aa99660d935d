/* The lantern command end to end: run writes .npy outputs that match
 * PyTorch, import reports unsupported ops with exit 2, bad input gets one
 * line and exit 2. */
#include "testutil.h"
#include <stdio.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_writes_outputs),
        cmocka_unit_test(bad_input_one_line),
        cmocka_unit_test(import_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
