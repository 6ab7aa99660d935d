/* The device options (cli/device.c) without a GPU: run, grad, train, eval
 * and predict take --device, --tf32 and --cudnn-benchmark and the other
 * commands do not; a device that cannot run here (a CUDA device number no
 * machine has, or any cuda device on a build without the backend or a
 * machine without a GPU) and a malformed value are one line and exit 2
 * before anything is written; lantern --help names --device; and the
 * device path (--device cpu-device) gives the host's outputs for run and
 * the host's loss curve for train, so that the flag reaches the sessions. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static char tmp[] = "/tmp/lt_cli_devXXXXXX";

/* Runs lantern with args (a shell fragment); stdout and stderr into the
 * buffers. Returns the exit code. */
static int lantern(const char *args, char *out, size_t nout, char *err, size_t nerr)
{
    char cmd[8192], of[600], ef[600];
    snprintf(of, sizeof of, "%s/stdout", tmp);
    snprintf(ef, sizeof ef, "%s/stderr", tmp);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", LANTERN, args, of, ef);
    int st = system(cmd);
    const char *files[2] = {of, ef};
    char *dst[2] = {out, err};
    size_t cap[2] = {nout, nerr};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "rb");
        assert_non_null(f);
        size_t n = fread(dst[i], 1, cap[i] - 1, f);
        dst[i][n] = 0;
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *const DEVICE_CMDS[] = {"run", "grad", "train", "eval", "predict"};

/* ---- what is refused, and how ---- */

static void refused(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 16];
    for (size_t c = 0; c < sizeof DEVICE_CMDS / sizeof *DEVICE_CMDS; c++) {
        static const struct {
            const char *opts, *want;
        } cases[] = {
            /* no machine has device 1023: the open fails whatever the build */
            {"--device cuda:1023", "--device cuda:1023: "},
            {"--device gpu", "unknown device 'gpu'"},
            {"--device cuda:", "unknown device 'cuda:'"},
            {"--device cuda:-1", "unknown device 'cuda:-1'"},
            {"--device cuda:1x", "unknown device 'cuda:1x'"},
            {"--cudnn-benchmark maybe", "--cudnn-benchmark: unknown value 'maybe'"},
            {"--device", "--device needs a value"},
            {"--tf32=1", "--tf32 takes no value"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            char args[1024];
            snprintf(args, sizeof args, "%s " MODELS "mlp.onnx -o %s/never.onnx %s", DEVICE_CMDS[c], tmp,
                     cases[i].opts);
            if (!strcmp(DEVICE_CMDS[c], "run") || !strcmp(DEVICE_CMDS[c], "grad") ||
                !strcmp(DEVICE_CMDS[c], "eval") || !strcmp(DEVICE_CMDS[c], "predict"))
                snprintf(args, sizeof args, "%s " MODELS "mlp.onnx %s", DEVICE_CMDS[c], cases[i].opts);
            int rc = lantern(args, out, sizeof out, err, sizeof err);
            if (rc != 2 || count_lines(err) != 1 || !strstr(err, cases[i].want))
                fail_msg("lantern %s: exit %d, stderr '%s' (want 2 and one line with '%s')", args, rc, err,
                         cases[i].want);
        }
        char never[700];
        snprintf(never, sizeof never, "%s/never.onnx", tmp);
        assert_int_not_equal(access(never, F_OK), 0);
    }
    /* the commands that run nothing have no device */
    static const char *const others[] = {"import " MODELS "mlp.onnx --device cpu", "export " MODELS
                                         "mlp.onnx --tf32 -o /tmp/lt_never.onnx",
                                         "check " MODELS "mlp.onnx --cudnn-benchmark on"};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        int rc = lantern(others[i], out, sizeof out, err, sizeof err);
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, "unknown option"))
            fail_msg("lantern %s: exit %d, stderr '%s'", others[i], rc, err);
    }
    /* a CUDA device without the cuda backend built or without a GPU: one
     * line saying which of the two; with both, the open succeeds and the
     * command goes on (and fails on the missing input instead) */
    int rc = lantern("run " MODELS "mlp.onnx --device cuda", out, sizeof out, err, sizeof err);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
#ifndef LANTERN_HAVE_CUDA
    assert_non_null(strstr(err, "lantern run: --device cuda: this lantern was built without the cuda backend"));
#else
    if (strstr(err, "--device cuda: "))
        assert_non_null(strstr(err, "the cuda backend cannot run here: "));
#endif
}

/* ---- the help ---- */

static void help(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 16];
    assert_int_equal(lantern("--help", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "--device cpu|cuda[:N]"));
    for (size_t c = 0; c < sizeof DEVICE_CMDS / sizeof *DEVICE_CMDS; c++) {
        char args[256];
        snprintf(args, sizeof args, "help %s", DEVICE_CMDS[c]);
        assert_int_equal(lantern(args, out, sizeof out, err, sizeof err), 0);
        assert_non_null(strstr(out, "\n  --device DEV "));
        assert_non_null(strstr(out, "\n  --tf32 "));
        assert_non_null(strstr(out, "\n  --cudnn-benchmark on|off "));
    }
    assert_int_equal(lantern("help import", out, sizeof out, err, sizeof err), 0);
    assert_null(strstr(out, "--device"));
}

/* ---- the flag reaches the sessions ---- */

/* run: the device path prints the host's outputs, to the digit */
static void run_same(void **state)
{
    (void)state;
    static char out1[1 << 16], out2[1 << 16], err[1 << 16];
    char x[700], args[2048];
    snprintf(x, sizeof x, "%s/x.npy", tmp);
    const int64_t dims[2] = {3, 784};
    lt_value *xv = tu_rand(LT_F32, 2, dims, -1, 1, 31);
    lt_err e;
    assert_int_equal(lt_value_save_npy(xv, x, &e), LT_OK);
    lt_value_free(xv);
    snprintf(args, sizeof args, "run " MODELS "mlp.onnx --input x=%s --device cpu", x);
    int rc = lantern(args, out1, sizeof out1, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    snprintf(args, sizeof args, "run " MODELS "mlp.onnx --input x=%s --device cpu-device --cudnn-benchmark off", x);
    rc = lantern(args, out2, sizeof out2, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_true(strlen(out1) > 20);
    assert_string_equal(out1, out2);
}

/* train --stats on the device path: the backend ran nodes (the flag reached
 * the trainer's sessions) and the losses are the host's */
static void train_same(void **state)
{
    (void)state;
    static char out[2][1 << 16], err[1 << 16];
    char args[2048], data[700];
    snprintf(data, sizeof data, "%s/data", tmp);
    char mk[800];
    snprintf(mk, sizeof mk, "mkdir -p %s", data);
    assert_int_equal(system(mk), 0);
    assert_int_equal(tu_write_idx_split(data, "train", 256, 5), 0);
    assert_int_equal(tu_write_idx_split(data, "t10k", 64, 6), 0);
    static const char *const devs[2] = {"cpu", "cpu-device"};
    static const char *const optims[] = {"sgd --momentum 0.5", "adam --weight-decay 0.01", "nesterov --clip-norm 0.5"};
    for (size_t o = 0; o < sizeof optims / sizeof *optims; o++) {
        for (int d = 0; d < 2; d++) {
            snprintf(args, sizeof args,
                     "train " MODELS "mlp.onnx --data mnist=%s --batch 32 --epochs 2 --optimizer %s --seed 3 --stats "
                     "--device %s -o %s/m%d.onnx",
                     data, optims[o], devs[d], tmp, d);
            int rc = lantern(args, out[d], sizeof out[d], err, sizeof err);
            if (rc != 0)
                fail_msg("lantern %s: exit %d: %s", args, rc, err);
        }
        /* the device path ran nodes on its backend; the host never does */
        assert_non_null(strstr(out[1], "nodes on the backend"));
        assert_null(strstr(out[1], " 0.0 nodes on the backend"));
        /* the loss lines agree */
        const char *a = out[0], *b = out[1];
        int nloss = 0;
        while ((a = strstr(a, "loss ")) && (b = strstr(b, "loss "))) {
            double la = atof(a + 5), lb = atof(b + 5);
            if (!(fabs(la - lb) <= 1e-5 * (1 + fabs(la))))
                fail_msg("%s: loss %g on the host, %g on the device path", optims[o], la, lb);
            a += 5;
            b += 5;
            nloss++;
        }
        assert_true(nloss >= 2);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused),
        cmocka_unit_test(help),
        cmocka_unit_test(run_same),
        cmocka_unit_test(train_same),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
