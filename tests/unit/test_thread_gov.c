/* The trainer's thread governor (train/thread_gov.c) on scripted run times
 * (3 warm-up runs, then probes of 3 runs per setting in turn): an idle
 * machine keeps every thread, a machine where one thread is clearly
 * faster gets one (a lucky fast run on all threads in the probe does not
 * hide it: medians are compared, nor does the first run after each change
 * of setting, which is not counted), a near tie either way takes one
 * thread (all threads are kept only when clearly faster), runs
 * turning slow start a probe before the regular one, all threads kept
 * whose recent runs cost clearly more than one thread did are given up,
 * costs are per input
 * element (a large sample is not mistaken for a slow setting), and the
 * pool's size is given back at the end. Plus a training run with the governor on (the default) and off
 * reaching the same parameters bit for bit: it only changes how many
 * threads run a step, and the kernels' sums do not depend on that. */
#include "testutil.h"
#include "train/thread_gov.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* runs n steps whose time is ms_all with the governed pool at max threads
 * and ms_one at one thread; returns the thread count after them */
static int drive(lt_thread_gov *g, int n, double ms_all, double ms_one, double work)
{
    for (int i = 0; i < n; i++) {
        lt_thread_gov_before(g);
        if (g->max > 1)
            assert_int_equal(omp_get_max_threads(), g->cur);
        lt_thread_gov_after(g, (g->cur == 1 ? ms_one : ms_all) * 1e-3 * work, work);
    }
    return g->cur;
}

static void choices(void **state)
{
    (void)state;
    lt_set_num_threads(4);
    lt_thread_gov g;
    /* idle: all threads twice as fast */
    lt_thread_gov_init(&g, 0);
    assert_int_equal(g.max, 4);
    assert_int_equal(drive(&g, 20, 1.0, 2.0, 100), 4);
    assert_int_equal(g.one, 0);
    assert_true(g.probes >= 1);
    lt_thread_gov_fini(&g);
    /* loaded: one thread 30 % faster */
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 20, 1.3, 1.0, 100), 1);
    assert_int_equal(g.one, 1);
    lt_thread_gov_fini(&g);
    assert_int_equal(omp_get_max_threads(), 4);
    /* near ties take one thread: one thread 2 % faster, or all threads
     * 2 % faster; all threads 10 % faster are kept */
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 1.02, 1.0, 100), 1);
    lt_thread_gov_fini(&g);
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 0.98, 1.0, 100), 1);
    lt_thread_gov_fini(&g);
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 0.9, 1.0, 100), 4);
    /* load arrives: all threads now twice as slow, so slow runs start a probe
     * at once and one thread is chosen; when it goes away, the regular probe
     * (every 100 runs) goes back to all threads */
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 2.0, 1.0, 100), 1);
    int64_t p = g.probes;
    assert_int_equal(drive(&g, 120, 0.5, 1.0, 100), 4);
    assert_true(g.probes > p);
    lt_thread_gov_fini(&g);
    assert_int_equal(omp_get_max_threads(), 4);
}

static void slow_runs_probe_early(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 1.0, 2.0, 10), 2);
    int64_t p = g.probes;
    /* every run now twice as slow with both threads, one thread unaffected */
    assert_int_equal(drive(&g, 3, 2.5, 2.0, 10), 2);
    assert_int_equal(g.probes, p + 1); /* three slow runs in a row: a probe at once */
    assert_int_equal(drive(&g, 4 * LT_GOV_PROBE, 2.5, 2.0, 10), 1);
    lt_thread_gov_fini(&g);
    assert_int_equal(omp_get_max_threads(), 2);
}

static void drift_changes_over(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 0);
    /* the probe finds both threads faster (1.0 against one thread's 1.2) */
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 1.0, 1.2, 10), 2);
    int64_t p = g.probes;
    /* then runs on both threads cost 1.4: not slow against their own 1.0
     * (under LT_GOV_SLOW), but over 1.05 times one thread's 1.2. Once the
     * median of the last LT_GOV_RECENT runs shows it, one thread is taken,
     * without a probe; not before */
    assert_int_equal(drive(&g, LT_GOV_RECENT - 1, 1.4, 1.2, 10), 2);
    assert_int_equal(drive(&g, 1, 1.4, 1.2, 10), 1);
    assert_int_equal(g.probes, p);
    assert_int_equal(g.one, 1);
    /* one thread's runs slowing down to 1.6, over 1.05 times both threads'
     * recent 1.4, do not change back (only a probe may: the regular one,
     * or one started by slow runs) */
    assert_int_equal(drive(&g, 10, 1.4, 1.6, 10), 1);
    assert_int_equal(g.probes, p);
    /* runs at 1.03 on both threads, within 1.05 times one thread's 1.0:
     * both kept (the next probe is 12 runs on); then runs at
     * 1.08 give them up without a probe */
    lt_thread_gov_fini(&g);
    lt_thread_gov_init(&g, 0);
    assert_int_equal(drive(&g, 3 + 4 * LT_GOV_PROBE, 0.9, 1.0, 10), 2);
    p = g.probes;
    assert_int_equal(drive(&g, 6, 1.03, 1.0, 10), 2);
    assert_int_equal(drive(&g, LT_GOV_RECENT, 1.08, 1.0, 10), 1);
    assert_int_equal(g.probes, p);
    lt_thread_gov_fini(&g);
    assert_int_equal(omp_get_max_threads(), 2);
}

static void cost_is_per_element(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 0);
    /* the one-thread probe happens to get large samples: its total time is
     * larger, its time per element smaller, so one thread wins */
    for (int i = 0; i < 3 + 4 * LT_GOV_PROBE; i++) {
        lt_thread_gov_before(&g);
        double work = g.cur == 1 ? 1000 : 100;
        lt_thread_gov_after(&g, (g.cur == 1 ? 0.8 : 1.0) * 1e-3 * work, work);
    }
    assert_int_equal(g.cur, 1);
    lt_thread_gov_fini(&g);
}

static void lucky_run_ignored(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 0);
    /* another process on a core: runs on both threads cost 1.5, but the
     * probe's first counted one (after the uncounted first) finds the core
     * free (0.8); one thread costs 1.0. The medians (1.5 against 1.0)
     * choose one thread, where the least costs (0.8 against 1.0) would keep
     * both */
    int all_runs = 0;
    for (int i = 0; i < 3 + 4 * LT_GOV_PROBE; i++) {
        lt_thread_gov_before(&g);
        double ms = g.cur == 1 ? 1.0 : i < 3 ? 1.5 : all_runs++ == 1 ? 0.8 : 1.5;
        lt_thread_gov_after(&g, ms * 1e-3, 1);
    }
    assert_int_equal(g.cur, 1);
    assert_int_equal(g.one, 1);
    lt_thread_gov_fini(&g);
}

static void switch_run_ignored(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 0);
    /* a loaded machine: both threads cost 1.3, one thread 1.0, except the
     * first run after each change to one thread (3.0: the threads finding
     * their CPUs again). The probe counts only the second run of each
     * pair, so one thread is chosen; counting the first would have kept
     * both (a median of 3.0 against 1.3). */
    int prev = g.cur;
    for (int i = 0; i < 3 + 4 * LT_GOV_PROBE; i++) {
        lt_thread_gov_before(&g);
        double ms = g.cur == 1 ? (prev != 1 ? 3.0 : 1.0) : 1.3;
        prev = g.cur;
        lt_thread_gov_after(&g, ms * 1e-3, 1);
    }
    assert_int_equal(g.cur, 1);
    assert_int_equal(g.one, 1);
    assert_int_equal(g.probes, 1);
    lt_thread_gov_fini(&g);
}

static void off_with_one_thread(void **state)
{
    (void)state;
    lt_set_num_threads(3);
    lt_thread_gov g;
    lt_thread_gov_init(&g, 1);
    assert_int_equal(drive(&g, 30, 5.0, 1.0, 1), 1 /* cur stays max = 1 */);
    assert_int_equal(g.probes, 0);
    assert_int_equal(omp_get_max_threads(), 3);
    lt_thread_gov_fini(&g);
    assert_int_equal(omp_get_max_threads(), 3);
}

/* the shipped MLP trained 12 steps with the governor and without: the same
 * parameters bit for bit (the thread count changes only who computes what) */
static void training_unchanged(void **state)
{
    (void)state;
    lt_set_num_threads(2);
    float *p[2] = {NULL, NULL};
    int64_t np = 0;
    for (int run = 0; run < 2; run++) {
        if (run)
            setenv("LANTERN_THREAD_GOV", "0", 1); /* on (the default), then off */
        else
            unsetenv("LANTERN_THREAD_GOV");
        lt_train_opts o;
        lt_train_defaults(&o);
        o.seed = 7;
        lt_trainer *t = NULL;
        lt_err err;
        if (lt_trainer_new(LT_SOURCE_DIR "/models/mlp.onnx", &o, &t, &err) != LT_OK)
            fail_msg("%s", err.msg);
        int64_t xd[2] = {32, 784};
        const char *names[2] = {lt_model_input_name(lt_trainer_model(t), 0), "labels"};
        for (int s = 0; s < 12; s++) {
            int64_t lab[32];
            for (int i = 0; i < 32; i++)
                lab[i] = (i * 7 + s * 3) % 10;
            lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {32}, .numel = 32, .data = lab};
            lt_value *x = tu_rand(LT_F32, 2, xd, 0, 1, 100 + s), *y = NULL;
            assert_int_equal(lt_value_from_tensor(&yt, &y, &err), LT_OK);
            lt_value *in[2] = {x, y};
            double loss;
            if (lt_trainer_step(t, 0.05, 2, names, in, &loss, &err) != LT_OK)
                fail_msg("%s", err.msg);
            lt_value_free(x);
            lt_value_free(y);
        }
        lt_model *m = lt_trainer_model(t);
        const lt_tensor *w = lt_model_param(m, 0);
        np = w->numel;
        p[run] = malloc(sizeof(float) * np);
        memcpy(p[run], w->data, sizeof(float) * np);
        lt_trainer_free(t);
        assert_int_equal(omp_get_max_threads(), 2);
    }
    assert_memory_equal(p[0], p[1], sizeof(float) * (size_t)np);
    free(p[0]);
    free(p[1]);
    unsetenv("LANTERN_THREAD_GOV");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(choices),           cmocka_unit_test(slow_runs_probe_early),
        cmocka_unit_test(cost_is_per_element), cmocka_unit_test(lucky_run_ignored),
        cmocka_unit_test(switch_run_ignored), cmocka_unit_test(drift_changes_over),
        cmocka_unit_test(off_with_one_thread),
        cmocka_unit_test(training_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
