/* Optimizer updates against hand-computed values (three steps with weight
 * decay, the same numbers PyTorch's optimizers give), learning-rate
 * schedules, the global gradient norm, and rejected settings. */
#include "testutil.h"
#include <math.h>
#include <string.h>

static const double p0[3] = {0.5, -1.0, 2.0};
static const double g_steps[3][3] = {{0.1, -0.2, 0.3}, {-0.4, 0.05, 0.2}, {0.25, 0.3, -0.1}};

/* Three steps at lr 0.1, weight decay 0.01 (momentum 0.9, betas 0.9/0.999,
 * eps 1e-10 for Adagrad and 1e-8 for Adam). SGD by hand:
 *   g' = 0.1 + 0.01*0.5 = 0.105           p = 0.5 - 0.0105       = 0.4895
 *   g' = -0.4 + 0.01*0.4895 = -0.395105   p = 0.4895 + 0.0395105 = 0.5290105
 *   g' = 0.25 + 0.005290105 = 0.255290105 p = 0.5034814895 */
static const struct {
    lt_optim_kind kind;
    double want[3];
} cases[] = {
    {LT_OPTIM_SGD, {0.5034814895, -1.012037979, 1.954085968}},
    {LT_OPTIM_MOMENTUM, {0.5210953895, -0.979765779, 1.879623568}},
    {LT_OPTIM_NESTEROV, {0.5224509619805, -0.993922673961, 1.845940736512}},
    {LT_OPTIM_ADAGRAD, {0.443821887856278, -0.999709234597421, 1.86410655082934}},
    {LT_OPTIM_ADAM, {0.45699153778487, -0.876480324085221, 1.74228847576247}},
    {LT_OPTIM_ADAMW, {0.458439323796324, -0.882428726912529, 1.74207854041366}},
};

static void run_case(lt_optim_kind kind, lt_dtype dt, const double *want, double tol)
{
    int64_t n = 3;
    lt_value *p = tu_from(dt, 1, &n, p0), *g[3];
    for (int s = 0; s < 3; s++)
        g[s] = tu_from(dt, 1, &n, g_steps[s]);
    lt_optim_opts o;
    lt_optim_defaults(kind, &o);
    o.weight_decay = 0.01;
    lt_optim *opt;
    lt_err err;
    lt_tensor *pt = &p->t;
    assert_int_equal(lt_optim_new(&o, 1, (const lt_tensor *const *)&pt, &opt, &err), LT_OK);
    for (int s = 0; s < 3; s++) {
        const lt_tensor *gt = &g[s]->t;
        assert_int_equal(lt_optim_step(opt, 0.1, 1.0, &pt, &gt, &err), LT_OK);
    }
    for (int i = 0; i < 3; i++)
        if (fabs(tu_get(p, i) - want[i]) > tol)
            fail_msg("optimizer %d (%s): element %d is %.12g, want %.12g", (int)kind, lt_dtype_name(dt), i,
                     tu_get(p, i), want[i]);
    lt_optim_free(opt);
    lt_value_free(p);
    for (int s = 0; s < 3; s++)
        lt_value_free(g[s]);
}

static void updates_match_hand_values(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        run_case(cases[c].kind, LT_F64, cases[c].want, 1e-12);
        run_case(cases[c].kind, LT_F32, cases[c].want, 2e-6);
    }
}

/* The gradient scale (clipping) multiplies the gradient before anything else. */
static void grad_scale_and_several_tensors(void **state)
{
    (void)state;
    int64_t n2 = 2, n1 = 1;
    double a0[2] = {1.0, -2.0}, b0[1] = {3.0}, ga[2] = {0.4, 0.8}, gb[1] = {-1.0};
    lt_value *a = tu_from(LT_F32, 1, &n2, a0), *b = tu_from(LT_F64, 1, &n1, b0);
    lt_value *va = tu_from(LT_F32, 1, &n2, ga), *vb = tu_from(LT_F64, 1, &n1, gb);
    lt_tensor *ps[2] = {&a->t, &b->t};
    const lt_tensor *gs[2] = {&va->t, &vb->t};
    lt_optim_opts o;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o);
    o.momentum = 0.5;
    lt_optim *opt;
    lt_err err;
    assert_int_equal(lt_optim_new(&o, 2, (const lt_tensor *const *)ps, &opt, &err), LT_OK);
    /* step 1: v = 0.5 g;            p -= 0.2 * 0.5 g
     * step 2: v = 0.5 * 0.5 g + 0.5 g = 0.75 g;  p -= 0.2 * 0.75 g; total p0 - 0.25 g */
    assert_int_equal(lt_optim_step(opt, 0.2, 0.5, ps, gs, &err), LT_OK);
    assert_int_equal(lt_optim_step(opt, 0.2, 0.5, ps, gs, &err), LT_OK);
    assert_true(fabs(tu_get(a, 0) - (1.0 - 0.25 * 0.4)) < 1e-6);
    assert_true(fabs(tu_get(a, 1) - (-2.0 - 0.25 * 0.8)) < 1e-6);
    assert_true(fabs(tu_get(b, 0) - (3.0 + 0.25)) < 1e-12);
    /* the norm of everything: sqrt(0.16 + 0.64 + 1) */
    assert_true(fabs(lt_grad_global_norm(2, gs) - sqrt(1.8)) < 1e-7);
    /* a gradient of another shape is refused */
    const lt_tensor *swapped[2] = {&vb->t, &va->t};
    assert_int_equal(lt_optim_step(opt, 0.2, 1.0, ps, swapped, &err), LT_ERR_INVALID);
    assert_int_equal(lt_optim_step(opt, NAN, 1.0, ps, gs, &err), LT_ERR_INVALID);
    lt_optim_free(opt);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(va);
    lt_value_free(vb);
}

static void bad_settings(void **state)
{
    (void)state;
    int64_t n = 2;
    double v[2] = {1, 2};
    lt_value *f = tu_from(LT_F32, 1, &n, v), *i = tu_from(LT_I64, 1, &n, v);
    lt_tensor *pf = &f->t, *pi = &i->t;
    lt_optim_opts o;
    lt_optim *opt = NULL;
    lt_err err;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o);
    o.momentum = 1.5;
    assert_int_equal(lt_optim_new(&o, 1, (const lt_tensor *const *)&pf, &opt, &err), LT_ERR_INVALID);
    lt_optim_defaults(LT_OPTIM_ADAM, &o);
    o.eps = 0;
    assert_int_equal(lt_optim_new(&o, 1, (const lt_tensor *const *)&pf, &opt, &err), LT_ERR_INVALID);
    o.eps = 1e-8;
    o.weight_decay = -1;
    assert_int_equal(lt_optim_new(&o, 1, (const lt_tensor *const *)&pf, &opt, &err), LT_ERR_INVALID);
    lt_optim_defaults(LT_OPTIM_SGD, &o);
    assert_int_equal(lt_optim_new(&o, 1, (const lt_tensor *const *)&pi, &opt, &err), LT_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "int64"));
    assert_null(opt);
    lt_value_free(f);
    lt_value_free(i);
}

static void schedules(void **state)
{
    (void)state;
    lt_schedule s = {LT_SCHEDULE_CONSTANT, 0.1, 4, 20, 0, 0.5};
    /* linear warmup over 4 steps, then the schedule over the 16 left */
    double warm[4] = {0.025, 0.05, 0.075, 0.1};
    for (int k = 0; k < 4; k++)
        assert_true(fabs(lt_schedule_lr(&s, k) - warm[k]) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 19) - 0.1) < 1e-15);
    s.kind = LT_SCHEDULE_STEP;
    s.step_size = 5;
    assert_true(fabs(lt_schedule_lr(&s, 8) - 0.1) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 9) - 0.05) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 19) - 0.0125) < 1e-15);
    s.step_size = 0; /* a third of the 16 steps after warmup, rounded up: 6 */
    assert_true(fabs(lt_schedule_lr(&s, 9) - 0.1) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 10) - 0.05) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 16) - 0.025) < 1e-15);
    s.kind = LT_SCHEDULE_COSINE;
    assert_true(fabs(lt_schedule_lr(&s, 4) - 0.1) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 8) - 0.05 * (1 + sqrt(0.5))) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 12) - 0.05) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 20)) < 1e-15);
    s.warmup = 0;
    assert_true(fabs(lt_schedule_lr(&s, 0) - 0.1) < 1e-15);
    assert_true(fabs(lt_schedule_lr(&s, 10) - 0.05) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(updates_match_hand_values),
        cmocka_unit_test(grad_scale_and_several_tensors),
        cmocka_unit_test(bad_settings),
        cmocka_unit_test(schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
