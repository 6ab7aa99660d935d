/* Ctrl-C loses nothing without --checkpoint-dir: SIGINT sent to a child
 * `lantern train -o DIR/out.onnx` ends it with exit 130 and one line saying
 * where the checkpoint went (DIR/out.checkpoint/checkpoint.ltck) and that
 * out.onnx was not written; the model that was at -o is untouched. Resumed
 * from that folder, the run says the step it picks up at and ends with the
 * bytes of a run that was never interrupted. */
#include "testutil.h"
#include "train/checkpoint.h"
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

static char dir[] = "/tmp/lt_interruptXXXXXX";
static char data_spec[700];

static void in_dir(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", dir, name); }

/* lantern train with the run's options, -o DIR/<out>, output to
 * DIR/<tag>.stdout and .stderr, then the extra arguments (NULL-ended). */
static pid_t start(const char *out, const char *tag, const char *extra1, const char *extra2, const char *extra3)
{
    char o[600], so[600], se[600], log[600], name[64];
    in_dir(o, sizeof o, out);
    snprintf(name, sizeof name, "%s.stdout", tag);
    in_dir(so, sizeof so, name);
    snprintf(name, sizeof name, "%s.stderr", tag);
    in_dir(se, sizeof se, name);
    snprintf(name, sizeof name, "%s.csv", tag);
    in_dir(log, sizeof log, name);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[] = {LANTERN, "train", MODELS "mlp.onnx", "--data", data_spec, "--optimizer", "momentum", "--lr",
                        "0.01", "--batch", "16", "--epochs", "30", "--test-limit", "20", "--seed", "7", "--log", log,
                        "-o", o, (char *)extra1, (char *)extra2, (char *)extra3, NULL};
        execv(LANTERN, argv);
        _exit(127);
    }
    assert_true(pid > 0);
    return pid;
}

static int finish(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

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

static char *text(const char *name)
{
    char p[600];
    size_t l;
    in_dir(p, sizeof p, name);
    return slurp(p, &l);
}

/* Waits (at most 60 s) until the CSV log holds an epoch row: the run is
 * past its set-up, its handler in place, most of its epochs to come. */
static void wait_for_epoch(const char *csv, pid_t pid)
{
    char p[600];
    in_dir(p, sizeof p, csv);
    for (int i = 0; i < 60000; i++) {
        FILE *f = fopen(p, "r");
        if (f) {
            char buf[4096];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
            if (strstr(buf, "\n1,,,"))
                return;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            fail_msg("lantern ended before its first epoch's end");
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("no epoch after 60 s");
}

static void sigint_writes_beside_output(void **state)
{
    (void)state;
    char out[600], ck[600], want[2400];
    /* a model already at -o, which an interrupted run must leave alone */
    in_dir(out, sizeof out, "out.onnx");
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs("the previous model\n", f);
    fclose(f);
    pid_t pid = start("out.onnx", "a", NULL, NULL, NULL);
    wait_for_epoch("a.csv", pid);
    kill(pid, SIGINT);
    int rc = finish(pid);
    char *err = text("a.stderr");
    in_dir(ck, sizeof ck, "out.checkpoint");
    snprintf(want, sizeof want, "lantern: interrupted; checkpoint written to %s/" LT_CKPT_FILE ", %s not written "
             "(continue with the same options and --checkpoint-dir %s --resume)\n", ck, out, ck);
    if (rc != 130 || strcmp(err, want) != 0)
        fail_msg("exit %d (want 130), stderr:\n%s\nwant:\n%s", rc, err, want);
    free(err);
    char *prev = text("out.onnx");
    assert_string_equal(prev, "the previous model\n");
    free(prev);
    lt_ckpt_info ci;
    lt_err e;
    assert_int_equal(lt_ckpt_read_info(ck, &ci, &e), LT_OK);
    assert_true(ci.global >= 10 && ci.global < 30 * 10);

    /* the log a run killed between flushing its log and writing its next
     * checkpoint leaves: rows after the checkpoint's step, the last cut
     * short; the resumed run drops them and logs each step once */
    char *alog = text("a.csv"), blog[600];
    in_dir(blog, sizeof blog, "b.csv");
    f = fopen(blog, "w");
    assert_non_null(f);
    fprintf(f, "%s99,1,%lld,0.01,9.5,,,\n99,2,%lld,0.01,9.5,,,\n99,3,%lld,0.0", alog, (long long)ci.global + 1,
            (long long)ci.global + 2, (long long)ci.global + 3);
    fclose(f);
    free(alog);

    /* resumed: it says where, and finishes the run */
    pid = start("out.onnx", "b", "--checkpoint-dir", ck, "--resume");
    rc = finish(pid);
    char *so = text("b.stdout");
    char at[200];
    snprintf(at, sizeof at, "resuming at step %lld (epoch %lld, step %lld of 10)", (long long)ci.global,
             (long long)ci.epoch, (long long)ci.step);
    if (rc != 0 || !strstr(so, at) || !strstr(so, "samples/s and ETA count the steps from here"))
        fail_msg("exit %d, stdout lacks '%s':\n%s", rc, at, so);
    free(so);
    char *bl = text("b.csv");
    if (strstr(bl, ",9.5,") || strstr(bl, "\n99,"))
        fail_msg("the killed run's rows after step %lld stayed in the log:\n%s", (long long)ci.global, bl);
    int steps = 0;
    for (const char *l = strchr(bl, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
        steps += l[1] != '\n' && strchr(l + 1, ',') && strchr(l + 1, ',')[1] != ',';
    assert_int_equal(steps, 30 * 10); /* every step once: 30 epochs of 10 */
    free(bl);

    /* the same bytes as a run never interrupted */
    assert_int_equal(finish(start("ref.onnx", "c", NULL, NULL, NULL)), 0);
    size_t la, lb;
    char pa[600], pb[600];
    in_dir(pa, sizeof pa, "out.onnx");
    in_dir(pb, sizeof pb, "ref.onnx");
    char *a = slurp(pa, &la), *b = slurp(pb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    char d[600];
    in_dir(d, sizeof d, "data");
    mkdir(d, 0700);
    snprintf(data_spec, sizeof data_spec, "mnist=%s", d);
    return tu_write_idx_split(d, "train", 160, 21) || tu_write_idx_split(d, "t10k", 20, 22) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(sigint_writes_beside_output)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
