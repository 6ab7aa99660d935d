/* `lantern train` checkpoints: a run killed (SIGKILL) after a checkpoint or
 * stopped with Ctrl-C (SIGINT, exit 130) and then resumed ends with the same
 * bytes (weights, optimizer state, counters) as an uninterrupted run; a
 * corrupted, truncated or foreign checkpoint gets one line and exit 2. */
#include "testutil.h"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"
#define CKPT "checkpoint.ltck"

/* Adam (it has state), a step schedule and 2 epochs of 20 steps of 8. */
#define TRAIN_ARGS                                                                                          \
    "train", MODELS "mlp.onnx", "--data", data_spec, "--optimizer", "adam", "--lr", "0.002", "--batch", \
        "8", "--epochs", "2", "--limit", "160", "--test-limit", "50", "--seed", "7", "--schedule", "step",  \
        "--step-size", "15", "--checkpoint-every", "4"

static char dir[] = "/tmp/lt_resumeXXXXXX";
static char data_spec[600]; /* fashion-mnist=<a small made-up dataset in dir> */

static void path_in(char *out, size_t len, const char *sub, const char *name)
{
    snprintf(out, len, "%s/%s/%s", dir, sub, name);
}

/* Starts lantern with the common arguments, checkpoints in dir/sub, output
 * dir/sub/out.onnx and `resume`; stdout and stderr go to dir/sub/{out,err}. */
static pid_t start(const char *sub, int resume)
{
    char folder[512], out[600], so[600], se[600];
    snprintf(folder, sizeof folder, "%s/%s", dir, sub);
    mkdir(folder, 0700);
    path_in(out, sizeof out, sub, "out.onnx");
    path_in(so, sizeof so, sub, "stdout");
    path_in(se, sizeof se, sub, "stderr");
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[] = {LANTERN, TRAIN_ARGS, "--checkpoint-dir", folder, "-o", out, resume ? "--resume" : NULL, NULL};
        execv(LANTERN, argv);
        _exit(127);
    }
    return pid;
}

/* Exit code, or 1000 + signal. */
static int finish(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static int run(const char *sub, int resume) { return finish(start(sub, resume)); }

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: missing", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void same_file(const char *a_sub, const char *b_sub, const char *name)
{
    char a[600], b[600];
    path_in(a, sizeof a, a_sub, name);
    path_in(b, sizeof b, b_sub, name);
    size_t la, lb;
    char *da = slurp(a, &la), *db = slurp(b, &lb);
    if (la != lb || memcmp(da, db, la) != 0)
        fail_msg("%s and %s differ", a, b);
    free(da);
    free(db);
}

static void expect_ok(const char *sub, int rc)
{
    if (rc != 0) {
        char e[600];
        size_t l;
        path_in(e, sizeof e, sub, "stderr");
        char *t = slurp(e, &l);
        fail_msg("%s: exit %d: %s", sub, rc, t);
    }
}

/* Waits (at most 60 s) until sub's checkpoint exists. */
static void wait_for_checkpoint(const char *sub, pid_t pid)
{
    char f[600];
    path_in(f, sizeof f, sub, CKPT);
    for (int i = 0; i < 60000; i++) {
        if (access(f, F_OK) == 0)
            return;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            fail_msg("%s: lantern ended before its first checkpoint", sub);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("%s: no checkpoint after 60 s", sub);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    char d[64];
    snprintf(d, sizeof d, "%s/data", dir);
    mkdir(d, 0700);
    snprintf(data_spec, sizeof data_spec, "fashion-mnist=%s", d);
    char data[600];
    snprintf(data, sizeof data, "%s/data", dir);
    return tu_write_idx_split(data, "train", 160, 1) || tu_write_idx_split(data, "t10k", 50, 2) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* (a) the reference: one uninterrupted run */
static void uninterrupted(void **state)
{
    (void)state;
    expect_ok("a", run("a", 0));
}

/* (b) SIGKILL once a checkpoint exists, then --resume */
static void killed_then_resumed(void **state)
{
    (void)state;
    pid_t pid = start("b", 0);
    wait_for_checkpoint("b", pid);
    kill(pid, SIGKILL);
    int rc = finish(pid);
    if (rc != 1000 + SIGKILL)
        print_message("note: the run ended (%d) before SIGKILL landed\n", rc);
    expect_ok("b", run("b", 1));
    same_file("a", "b", "out.onnx");
    same_file("a", "b", CKPT);
}

/* (c) SIGINT: a checkpoint, one line on stderr, exit 130; then --resume */
static void interrupted_then_resumed(void **state)
{
    (void)state;
    pid_t pid = start("c", 0);
    wait_for_checkpoint("c", pid);
    kill(pid, SIGINT);
    int rc = finish(pid);
    char e[600], o[600];
    path_in(e, sizeof e, "c", "stderr");
    path_in(o, sizeof o, "c", "out.onnx");
    size_t l;
    char *t = slurp(e, &l);
    if (rc == 130) {
        assert_int_equal(count_lines(t), 1);
        assert_non_null(strstr(t, "interrupted"));
        assert_int_equal(access(o, F_OK), -1); /* no model from an interrupted run */
    } else {
        /* the run was over before the signal came */
        expect_ok("c", rc);
        print_message("note: the run ended before SIGINT landed\n");
    }
    free(t);
    expect_ok("c", run("c", 1));
    same_file("a", "c", "out.onnx");
    same_file("a", "c", CKPT);
}

/* Runs `lantern train ... --resume` in dir/sub; expects exit 2, one line
 * containing `want`. */
static void bad_resume(const char *sub, const char *want)
{
    assert_int_equal(run(sub, 1), 2);
    char e[600];
    path_in(e, sizeof e, sub, "stderr");
    size_t l;
    char *t = slurp(e, &l);
    if (count_lines(t) != 1 || !strstr(t, want))
        fail_msg("%s: expected one line with '%s', got: %s", sub, want, t);
    free(t);
}

static void write_variant(const char *sub, const char *data, size_t len)
{
    char folder[512], f[600];
    snprintf(folder, sizeof folder, "%s/%s", dir, sub);
    mkdir(folder, 0700);
    path_in(f, sizeof f, sub, CKPT);
    FILE *fp = fopen(f, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

static void bad_checkpoints(void **state)
{
    (void)state;
    char f[600];
    path_in(f, sizeof f, "a", CKPT);
    size_t len;
    char *good = slurp(f, &len);
    assert_true(len > 1000);
    char *b = malloc(len);
    assert_non_null(b);
    /* one flipped bit in the weights */
    memcpy(b, good, len);
    b[len / 2] ^= 4;
    write_variant("flip", b, len);
    bad_resume("flip", "checksum");
    /* cut short */
    write_variant("cut", good, len - 100);
    bad_resume("cut", "truncated");
    write_variant("tiny", good, 20);
    bad_resume("tiny", "truncated");
    /* not a checkpoint at all */
    memcpy(b, good, len);
    memcpy(b, "PK\3\4", 4);
    write_variant("magic", b, len);
    bad_resume("magic", "bad magic");
    /* a future version */
    memcpy(b, good, len);
    b[8] = 9;
    write_variant("version", b, len);
    bad_resume("version", "version");
    /* another model's parameters */
    memcpy(b, good, len);
    b[16] ^= 1;
    write_variant("model", b, len);
    bad_resume("model", "different model");
    /* no checkpoint there */
    char folder[512];
    snprintf(folder, sizeof folder, "%s/none", dir);
    mkdir(folder, 0700);
    bad_resume("none", CKPT);
    free(b);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uninterrupted),
        cmocka_unit_test(killed_then_resumed),
        cmocka_unit_test(interrupted_then_resumed),
        cmocka_unit_test(bad_checkpoints),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
