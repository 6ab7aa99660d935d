/* A program with functions (the AD of a Loop makes its continuations
 * functions) runs on a thread of its own with a deep stack
 * (runtime/session.c). OpenMP keeps a thread count per thread, so the
 * count the caller set (lt_set_num_threads: --threads, the trainer's
 * thread governor) must reach that thread: with one thread set, running
 * the Loop-RNN's gradient at batch 128 starts no thread beyond the
 * caller's and the runner; with two it does (so the check can tell). */
#include "testutil.h"
#include <dirent.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void lt_set_num_threads(int n);

/* the process's threads now */
static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void run_grad(lt_session *s, lt_model *m, lt_value *x)
{
    lt_err err;
    const char *name = "x";
    int nout = lt_model_num_outputs(m);
    lt_value **outs = calloc((size_t)nout, sizeof *outs);
    assert_non_null(outs);
    if (lt_session_run(s, 1, &name, &x, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int i = 0; i < nout; i++)
        lt_value_free(outs[i]);
    free(outs);
}

static void runner_takes_the_count(void **state)
{
    (void)state;
    if (threads_now() < 0)
        skip();
    omp_set_num_threads(2);
    lt_set_num_threads(1);
    lt_err err;
    lt_model *m;
    lt_session *s;
    lt_grad_opts o = {.loss = LT_LOSS_SUM};
    if (lt_model_load(LT_SOURCE_DIR "/models/rnn_loop.onnx", &m, &err) != LT_OK || lt_model_grad(m, &o, &err) != LT_OK ||
        lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int64_t dims[3] = {128, 28, 28};
    lt_value *x = tu_rand(LT_F32, 3, dims, -1, 1, 7);
    int before = threads_now();
    run_grad(s, m, x);
    run_grad(s, m, x);
    /* the runner only */
    assert_int_equal(threads_now(), before + 1);
    lt_set_num_threads(2);
    run_grad(s, m, x);
    assert_true(threads_now() > before + 1);
    lt_value_free(x);
    lt_session_free(s);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runner_takes_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
