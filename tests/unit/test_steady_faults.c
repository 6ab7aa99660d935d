/* After warm-up a training step asks the system for no memory: the
 * process's minor page faults do not grow over later steps (getrusage).
 * On two threads the trainer's governor switches between one thread and
 * two while it probes, and the kernels hand tasks to whichever thread is
 * free, so a thread may reach a page of its scratch slice or of its
 * packing buffer for the first time many steps in; the workspaces are
 * faulted in when they are made (runtime/exec.c, runtime/cpu/thread_buf.c).
 * Models: the shipped CNN and SqueezeNet at batch 64, and the Loop-RNN
 * (its program runs on the runner thread, with loop-carried values from
 * the caching pool). */
#include "testutil.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MODELS LT_SOURCE_DIR "/models/"
#define WARM 30
#define STEPS 30

static long faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static void steady(const char *model, int rank, const int64_t *dims)
{
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.onnx", model);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    lt_trainer *t;
    lt_err err;
    if (lt_trainer_new(path, &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *x = tu_rand(LT_F32, rank, dims, -1, 1, 3);
    double labels[64];
    for (int i = 0; i < 64; i++)
        labels[i] = (i * 7) % 10;
    int64_t n = dims[0];
    lt_value *y = tu_from(LT_I64, 1, &n, labels);
    const char *names[2] = {lt_model_input_name(lt_trainer_model(t), 0), "labels"};
    lt_value *in[2] = {x, y};
    long before = 0;
    for (int s = 0; s < WARM + STEPS; s++) {
        if (s == WARM)
            before = faults();
        if (lt_trainer_step(t, 0.01, 2, names, in, NULL, &err) != LT_OK)
            fail_msg("%s: step %d: %s", model, s, err.msg);
    }
    long grew = faults() - before;
    if (grew != 0)
        fail_msg("%s: %ld minor page faults in %d steps after warm-up", model, grew, STEPS);
    lt_value_free(x);
    lt_value_free(y);
    lt_trainer_free(t);
}

static void cnn(void **s)
{
    (void)s;
    int64_t d[4] = {64, 1, 28, 28};
    steady("cnn", 4, d);
}

static void squeezenet(void **s)
{
    (void)s;
    int64_t d[4] = {64, 1, 28, 28};
    steady("squeezenet", 4, d);
}

static void rnn_loop(void **s)
{
    (void)s;
    int64_t d[3] = {64, 28, 28};
    steady("rnn_loop", 3, d);
}

int main(void)
{
    if (omp_get_max_threads() < 2)
        omp_set_num_threads(2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cnn),
        cmocka_unit_test(squeezenet),
        cmocka_unit_test(rnn_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
