/* Checked memory mode (LANTERN_CHECKED_MEMORY=1): a fresh buffer holds NaN
 * bytes, a read of a released buffer ends the process with a message, and
 * a kernel that writes into a value that is still alive is caught with a
 * status naming the node. */
#include "testutil.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void fresh_buffers_are_poisoned(void **state)
{
    (void)state;
    assert_true(lt_checked_memory());
    lt_buf *b = lt_buf_alloc(100);
    assert_non_null(b);
    for (int i = 0; i < 25; i++)
        assert_true(isnan(((float *)b->data)[i]));
    lt_buf_release(b);
}

static void read_after_release_faults(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        signal(SIGSEGV, SIG_DFL); /* not the test runner's handler */
        lt_buf *b = lt_buf_alloc(4096);
        volatile float *p = b->data;
        p[7] = 1.5f;
        lt_buf_release(b);
        float x = p[7]; /* must fault */
        _exit(x == 1.5f ? 3 : 4);
    }
    close(fd[1]);
    char msg[512] = {0};
    ssize_t n, got = 0;
    while ((n = read(fd[0], msg + got, sizeof msg - 1 - (size_t)got)) > 0)
        got += n;
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    assert_non_null(strstr(msg, "checked memory: a released buffer was read or written"));
}

/* main: t = Identity(in0); AccAdd(t, in1) adds into t in place, which only
 * a cell may take */
static void write_into_live_value_is_caught(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_IDENTITY, 17, 1, 1);
    lt_module *m = g.m;
    lt_block *b = m->main;
    lt_block_set_params(m, b, 2);
    b->params[0] = g.node->in[0];
    b->params[1] = lt_ival_new(m, b, "in1");
    m->input_default = lt_ir_alloc(m, sizeof(int) * 2);
    m->input_default[0] = m->input_default[1] = -1;
    lt_node *acc = lt_node_new(m, b, LT_OP_ACC_ADD, 2, 0);
    acc->opset = 17;
    acc->name = "bad_acc";
    acc->in[0] = g.node->out[0];
    acc->in[1] = b->params[1];
    int64_t dims[1] = {6};
    lt_value *in[2] = {tu_rand(LT_F32, 1, dims, -1, 1, 1), tu_rand(LT_F32, 1, dims, -1, 1, 2)};
    lt_value *out[1] = {0};
    lt_err err;
    lt_status s = tu_run(&g, in, out, &err);
    assert_int_not_equal(s, LT_OK);
    assert_non_null(strstr(err.msg, "bad_acc"));
    assert_non_null(strstr(err.msg, "checked memory: the kernel wrote into its input 0"));
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

int main(void)
{
    setenv("LANTERN_CHECKED_MEMORY", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fresh_buffers_are_poisoned),
        cmocka_unit_test(read_after_release_faults),
        cmocka_unit_test(write_into_live_value_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
