/* Planned memory (runtime/memplan.h) on the shipped models: whole training
 * steps with the plan on give the same loss and parameters, bit for bit,
 * as the caching pool alone (LANTERN_MEMPLAN=0), outputs written over their
 * dying inputs included; the checker (LANTERN_MEMPLAN_CHECK=1, set for
 * the whole suite) finds no two values alive at once sharing a byte, in any
 * layout made or any slice handed out; a new batch size makes a new layout
 * and going back to the first size reuses it; a steady-state step serves
 * its outputs from the arena, not the pool; a buffer that outlives the
 * node its layout has it die at (an If branch returning an outer value as
 * it is, tests/data/memplan/make_if_alias.py) is caught as the frame runs,
 * the results stay right and the layout is planned again. */
#include "testutil.h"
#include "runtime/memplan.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"
#define MAXP 256

typedef struct run {
    double loss[8];
    int np;
    float *params[MAXP];
    int64_t numel[MAXP];
    lt_run_stats st;
    lt_mplan_stats ms;
} run;

static void run_free(run *r)
{
    for (int p = 0; p < r->np; p++)
        free(r->params[p]);
}

/* The first b samples of v (a batch of 8). */
static lt_value *head(const lt_value *v, int64_t b)
{
    const lt_tensor *t = lt_value_tensor(v);
    lt_tensor h = *t;
    h.dims[0] = b;
    h.numel = t->numel / t->dims[0] * b;
    h.buf = NULL;
    lt_value *out;
    lt_err err;
    assert_int_equal(lt_value_from_tensor(&h, &out, &err), LT_OK);
    return out;
}

/* Training steps of model on the batch sizes in sizes[] with the plan on
 * or off; the losses, the parameters after them and the trainer's stats. */
static void train(const char *model, const char *input, bool plan, int nsteps, const int *sizes, run *r)
{
    setenv("LANTERN_MEMPLAN", plan ? "1" : "0", 1);
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.onnx", model);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.optim.momentum = 0.9;
    lt_trainer *t;
    lt_err err;
    if (lt_trainer_new(path, &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, MODELS "ref/%s.npy", input);
    lt_value *x = tu_load(path), *y = tu_load(MODELS "ref/y8.npy");
    const char *names[2] = {lt_model_input_name(lt_trainer_model(t), 0), "labels"};
    memset(r, 0, sizeof *r);
    for (int s = 0; s < nsteps; s++) {
        lt_value *in[2] = {head(x, sizes[s]), head(y, sizes[s])};
        if (lt_trainer_step(t, 0.01, 2, names, in, &r->loss[s], &err) != LT_OK)
            fail_msg("%s (plan %s): step %d: %s", model, plan ? "on" : "off", s, err.msg);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
    }
    lt_trainer_stats(t, &r->st);
    lt_mplan_stats_get(&r->ms);
    const lt_model *m = lt_trainer_model(t);
    r->np = lt_model_num_params(m);
    assert_true(r->np <= MAXP);
    for (int p = 0; p < r->np; p++) {
        const lt_tensor *pt = lt_model_param(m, p);
        r->numel[p] = pt->numel;
        r->params[p] = malloc(sizeof(float) * (size_t)(pt->numel ? pt->numel : 1));
        assert_non_null(r->params[p]);
        for (int64_t e = 0; e < pt->numel; e++)
            r->params[p][e] = (float)lt_tensor_get_f64(pt, e);
    }
    lt_value_free(x);
    lt_value_free(y);
    lt_trainer_free(t);
    unsetenv("LANTERN_MEMPLAN");
}

static void same(const char *model, const run *on, const run *off, int nsteps)
{
    for (int s = 0; s < nsteps; s++)
        if (on->loss[s] != off->loss[s])
            fail_msg("%s: step %d: loss %.9g with the plan, %.9g without", model, s, on->loss[s], off->loss[s]);
    assert_int_equal(on->np, off->np);
    for (int p = 0; p < on->np; p++) {
        assert_int_equal(on->numel[p], off->numel[p]);
        if (memcmp(on->params[p], off->params[p], sizeof(float) * (size_t)on->numel[p]) != 0)
            fail_msg("%s: parameter %d differs with the plan on and off", model, p);
    }
}

static void check_model(const char *model, const char *input, bool expect_inplace)
{
    int sizes[4] = {8, 8, 8, 8};
    run on, off;
    train(model, input, true, 4, sizes, &on);
    train(model, input, false, 4, sizes, &off);
    same(model, &on, &off, 4);
    assert_int_equal(on.ms.check_failures, 0);
    /* one layout per block at least; the steps after the first are served
     * from the arena (what stays on the pool: the step's outputs, values
     * that outlive their frame) */
    assert_true(on.st.layouts >= 1);
    assert_true(on.st.planned > 0);
    assert_true(on.st.arena_peak_bytes > 0);
    if (expect_inplace)
        assert_true(on.st.inplace > 0);
    assert_true(off.st.planned == 0 && off.st.layouts == 0);
    printf("%s: %lld layouts, per step %.1f outputs from the arena (%.1f in place), %.1f from the pool, arena %.2f MB\n",
           model, (long long)on.st.layouts, on.st.planned, on.st.inplace, on.st.pooled,
           (double)on.st.arena_peak_bytes / 1048576.0);
    run_free(&on);
    run_free(&off);
}

static void mlp(void **s) { (void)s; check_model("mlp", "x8_flat", false); }
static void cnn(void **s) { (void)s; check_model("cnn", "x8_img", false); }
static void rnn(void **s) { (void)s; check_model("rnn", "x8_seq", false); }
static void lstm(void **s) { (void)s; check_model("lstm", "x8_seq", false); }
static void rnn_loop(void **s) { (void)s; check_model("rnn_loop", "x8_seq", true); }
static void squeezenet(void **s) { (void)s; check_model("squeezenet", "x8_img", true); }

/* Batch 8, 4, 8, 4, 8: the second size makes a layout of its own (a
 * replan), the later steps find theirs cached; the results match the pool
 * alone bit for bit. */
static void new_shape_replans(void **s)
{
    (void)s;
    int sizes[5] = {8, 4, 8, 4, 8};
    run on, off, first;
    train("cnn", "x8_img", true, 1, sizes, &first);
    train("cnn", "x8_img", true, 5, sizes, &on);
    train("cnn", "x8_img", false, 5, sizes, &off);
    same("cnn", &on, &off, 5);
    /* two signatures: twice the layouts of one, and no more */
    assert_int_equal(on.st.layouts, 2 * first.st.layouts);
    assert_int_equal(on.ms.check_failures, 0);
    run_free(&on);
    run_free(&off);
    run_free(&first);
}

/* Runs if_alias.onnx on x with each flag in turn, in one session. */
static void run_alias(bool plan, const lt_value *x, int n, const int *flags, lt_value **outs)
{
    setenv("LANTERN_MEMPLAN", plan ? "1" : "0", 1);
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/memplan/if_alias.onnx", &m, &err), LT_OK);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    const char *names[2] = {"x", "flag"};
    for (int i = 0; i < n; i++) {
        double f = flags[i];
        lt_value *in[2] = {(lt_value *)x, tu_from(LT_BOOL, 0, NULL, &f)};
        if (lt_session_run(s, 2, names, in, &outs[i], &err) != LT_OK)
            fail_msg("run %d: %s", i, err.msg);
        lt_value_free(in[1]);
    }
    lt_session_free(s);
    lt_model_free(m);
    unsetenv("LANTERN_MEMPLAN");
}

static void outlived_buffer_replans(void **st)
{
    (void)st;
    int64_t d[2] = {16, 8};
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 11);
    int flags[5] = {0, 1, 1, 0, 1};
    lt_value *on[5], *off[5];
    lt_mplan_stats_reset();
    run_alias(true, x, 5, flags, on);
    lt_mplan_stats ms;
    lt_mplan_stats_get(&ms);
    run_alias(false, x, 5, flags, off);
    for (int i = 0; i < 5; i++) {
        const lt_tensor *a = lt_value_tensor(on[i]), *b = lt_value_tensor(off[i]);
        assert_int_equal(a->numel, b->numel);
        if (memcmp(a->data, b->data, sizeof(float) * (size_t)a->numel) != 0)
            fail_msg("run %d (flag %d): the output differs with the plan on and off", i, flags[i]);
        lt_value_free(on[i]);
        lt_value_free(off[i]);
    }
    /* planned with the flag off, the first run with it on finds a's buffer
     * alive after the If: the layout is planned again without it (behind
     * the device path the host's If gets a copy of a, which lives apart) */
    if (!tu_device_path())
        assert_true(ms.replans >= 1);
    assert_true(ms.planned > 0);
    assert_int_equal(ms.check_failures, 0);
    lt_value_free(x);
}

int main(void)
{
    setenv("LANTERN_MEMPLAN_CHECK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp),      cmocka_unit_test(cnn),        cmocka_unit_test(rnn),
        cmocka_unit_test(lstm),     cmocka_unit_test(rnn_loop),   cmocka_unit_test(squeezenet),
        cmocka_unit_test(new_shape_replans), cmocka_unit_test(outlived_buffer_replans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
