/* ReluGrad (dy, y) -> dx, the one-pass ReLU gradient the AD emits: against
 * the direct formula dx = (x > 0 ? dy : 0) read off Relu's input x, at a
 * realistic size (batch 17, odd spatial sizes) with zeros, signed zeros,
 * infinities and NaNs in x and NaNs in dy, for every type Relu takes; the
 * AD's graph of a Relu uses it (and reads no Greater or Where). */
#include "rule_fd.h"
#include "ad/ad.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* x with every special value at seeded places between uniform ones */
static lt_value *special_x(lt_dtype dt, int rank, const int64_t *dims, uint64_t seed, bool floats)
{
    lt_value *x = tu_rand(LT_F64, rank, dims, -3, 3, seed);
    int64_t n = x->t.numel;
    double *v = malloc(sizeof(double) * (size_t)n);
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-30, -1e-30};
    for (int64_t i = 0; i < n; i++) {
        v[i] = tu_get(x, i);
        if (!floats)
            v[i] = round(v[i] * 10);
        else if (i % 7 == 3)
            v[i] = special[(i / 7) % 7];
    }
    lt_value *r = tu_from(dt, rank, dims, v);
    free(v);
    lt_value_free(x);
    return r;
}

static void check_type(lt_dtype dt, uint64_t seed)
{
    bool floats = lt_dtype_is_float(dt);
    int64_t dims[4] = {17, 5, 9, 11};
    lt_value *x = special_x(dt, 4, dims, seed, floats);
    lt_value *dy = tu_rand(dt, 4, dims, -2, 2, seed + 1);
    if (floats)
        for (int64_t i = 5; i < dy->t.numel; i += 13)
            lt_tensor_set_f64(&dy->t, i, NAN);
    tu_graph fwd = tu_single(LT_OP_RELU, 14, 1, 1);
    lt_value *fin[1] = {x}, *fout[1] = {NULL};
    lt_err err;
    if (tu_run(&fwd, fin, fout, &err) != LT_OK)
        fail_msg("Relu: %s", err.msg);
    tu_graph g = tu_single(LT_OP_RELU_GRAD, 14, 2, 1);
    lt_value *in[2] = {dy, fout[0]}, *out[1] = {NULL};
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("ReluGrad on %s: %s", lt_dtype_name(dt), err.msg);
    lt_value *dx = out[0];
    assert_int_equal(dx->t.dtype, dt);
    assert_int_equal(dx->t.rank, 4);
    assert_memory_equal(dx->t.dims, dims, sizeof dims);
    int64_t nan_kept = 0, nan_dropped = 0;
    for (int64_t i = 0; i < x->t.numel; i++) {
        double xv = tu_get(x, i), g0 = tu_get(dy, i), got = tu_get(dx, i);
        double want = xv > 0 ? g0 : 0;
        if (isnan(want)) {
            nan_kept++;
            if (!isnan(got))
                fail_msg("%s element %lld: x %g dy NaN gave %g, not NaN", lt_dtype_name(dt), (long long)i, xv, got);
            continue;
        }
        nan_dropped += isnan(g0) || isnan(xv);
        if (got != want || signbit(got) != signbit(want))
            fail_msg("%s element %lld: x %g dy %g gave %g, want %g", lt_dtype_name(dt), (long long)i, xv, g0, got,
                     want);
    }
    if (floats)
        assert_true(nan_kept > 0 && nan_dropped > 0); /* both NaN cases were met */
    lt_value_free(dx);
    lt_value_free(fout[0]);
    lt_value_free(dy);
    lt_value_free(x);
    tu_free(&fwd);
    tu_free(&g);
}

static void relu_grad_types(void **state)
{
    (void)state;
    static const lt_dtype types[] = {LT_F32, LT_F64, LT_F16, LT_BF16, LT_I8, LT_I32, LT_I64};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        check_type(types[i], 100 + 10 * i);
}

/* dy broadcast against y (numpy rules, as the other binary kernels) */
static void relu_grad_broadcast(void **state)
{
    (void)state;
    int64_t yd[3] = {16, 3, 7}, gd[2] = {3, 7};
    lt_value *y = tu_rand(LT_F32, 3, yd, -1, 1, 7), *dy = tu_rand(LT_F32, 2, gd, -1, 1, 8);
    tu_graph g = tu_single(LT_OP_RELU_GRAD, 14, 2, 1);
    lt_value *in[2] = {dy, y}, *out[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    double *want = malloc(sizeof(double) * (size_t)y->t.numel);
    for (int64_t i = 0; i < y->t.numel; i++)
        want[i] = tu_get(y, i) > 0 ? tu_get(dy, i % 21) : 0;
    tu_assert_close(out[0], want, y->t.numel, 0, 0, 0);
    free(want);
    lt_value_free(out[0]);
    lt_value_free(y);
    lt_value_free(dy);
    tu_free(&g);
}

/* dy and y of different types, or strings: one clear failure */
static void relu_grad_bad_types(void **state)
{
    (void)state;
    int64_t d[2] = {4, 5};
    lt_value *y = tu_rand(LT_F32, 2, d, -1, 1, 9), *dy = tu_rand(LT_F64, 2, d, -1, 1, 10);
    tu_graph g = tu_single(LT_OP_RELU_GRAD, 14, 2, 1);
    lt_value *in[2] = {dy, y}, *out[1] = {NULL};
    lt_err err;
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "ReluGrad"));
    lt_value_free(y);
    lt_value_free(dy);
    tu_free(&g);
}

static int count_op(const lt_block *b, lt_op op)
{
    int c = 0;
    for (int i = 0; i < b->nnodes; i++) {
        c += b->nodes[i]->op == op;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            c += count_op(b->nodes[i]->regions[r], op);
    }
    return c;
}

/* the AD's rule: one ReluGrad reading Relu's output, no mask tensor */
static void relu_rule_graph(void **state)
{
    (void)state;
    const tu_fd_in in[1] = {{4, {16, 3, 5, 7}, LT_F32, -1, 1}};
    const tu_fd_model fm = {"Relu", LT_OP_RELU, 14, 1, 1, in, NULL, 5};
    lt_model *m;
    lt_err err;
    assert_int_equal(tu_fd_build(&fm, &m, &err), LT_OK);
    lt_grad_opts o = {0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_block *b = m->main;
    assert_int_equal(count_op(b, LT_OP_RELU_GRAD), 1);
    assert_int_equal(count_op(b, LT_OP_GREATER), 0);
    assert_int_equal(count_op(b, LT_OP_WHERE), 0);
    for (int i = 0; i < b->nnodes; i++)
        if (b->nodes[i]->op == LT_OP_RELU_GRAD) {
            const lt_ival *y = b->nodes[i]->in[1];
            assert_non_null(y->def);
            assert_int_equal(y->def->op, LT_OP_RELU);
            assert_int_equal(b->nodes[i]->out[0]->type.dtype, LT_F32);
            assert_int_equal(b->nodes[i]->out[0]->type.rank, 4);
        }
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(relu_grad_types),
        cmocka_unit_test(relu_grad_broadcast),
        cmocka_unit_test(relu_grad_bad_types),
        cmocka_unit_test(relu_rule_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
