/* SoftmaxGrad and LogSoftmaxGrad: finite differences through the forward
 * Softmax / LogSoftmax in float64 for every axis form (opset 13 single
 * axis, opset 1/11 coerce-to-2-D, axis == rank), float32 and float16
 * against the float64 kernel at sizes that run in parallel, bad input, and
 * the shape rule. */
#include "test_grad_misc.h"

typedef struct {
    int opset;
    bool has_axis;
    int64_t axis;
    int rank;
    int64_t dims[4];
} smx_case;

static void smx_attrs(tu_graph *g, const void *ctx)
{
    const smx_case *c = ctx;
    if (c->has_axis)
        tu_attr_int(g, "axis", c->axis);
}

static const smx_case smx_cases[] = {
    {13, false, 0, 3, {3, 4, 5}}, {13, true, 0, 3, {3, 4, 5}},    {13, true, 1, 3, {3, 4, 5}},
    {13, true, -2, 4, {2, 3, 4, 2}}, {11, false, 0, 3, {3, 4, 5}}, {11, true, 2, 3, {3, 4, 5}},
    {1, false, 0, 3, {2, 3, 4}},  {11, true, 3, 3, {2, 3, 4}},    {11, true, 0, 2, {3, 4}},
    {11, true, -1, 3, {2, 3, 4}}, {13, true, 0, 1, {7}},
};

static void fd_cases(void **state)
{
    (void)state;
    for (int logsm = 0; logsm < 2; logsm++)
        for (size_t i = 0; i < sizeof smx_cases / sizeof *smx_cases; i++) {
            const smx_case *c = &smx_cases[i];
            uint64_t seed = 300 + i + 50 * logsm;
            lt_op fwd = logsm ? LT_OP_LOG_SOFTMAX : LT_OP_SOFTMAX;
            lt_op op = logsm ? LT_OP_LOG_SOFTMAX_GRAD : LT_OP_SOFTMAX_GRAD;
            lt_value *x = tu_rand(LT_F64, c->rank, c->dims, -3, 3, seed);
            lt_value *y = gm_run(fwd, c->opset, 1, (lt_value *[]){x}, smx_attrs, c, NULL);
            lt_value *dy = tu_rand(LT_F64, c->rank, c->dims, -1, 1, seed + 1);
            lt_value *grad = gm_run(op, c->opset, 2, (lt_value *[]){dy, y}, smx_attrs, c, NULL);
            char name[80], ax[24] = "default";
            if (c->has_axis)
                snprintf(ax, sizeof ax, "%lld", (long long)c->axis);
            snprintf(name, sizeof name, "%s opset %d axis %s rank %d", lt_op_names[op], c->opset, ax, c->rank);
            gm_fd f = {name, fwd, c->opset, 1, 0, (lt_value *[]){x}, smx_attrs, c};
            gm_fd_check(&f, dy, grad, 60, 1e-6, seed);
            lt_value_free(grad);
            lt_value_free(dy);
            lt_value_free(y);
            lt_value_free(x);
        }
}

/* float32 (and float16) kernels against the float64 one on the same data,
 * at sizes above the parallel threshold, rows contiguous or strided. */
static void float32_matches_float64(void **state)
{
    (void)state;
    static const smx_case cases[] = {
        {13, true, -1, 2, {64, 1000}}, {13, true, 1, 3, {8, 300, 40}}, {11, true, 1, 3, {16, 30, 100}},
        {13, true, 0, 2, {500, 3}},    {13, true, 1, 3, {2, 50, 700}},
        /* rows along the last axis: attention's 28 keys, and rows of 80
         * over the threads */
        {13, true, -1, 4, {16, 4, 28, 28}}, {13, true, 3, 4, {64, 4, 28, 80}},
    };
    for (int logsm = 0; logsm < 2; logsm++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            const smx_case *c = &cases[i];
            uint64_t seed = 400 + i;
            lt_op fwd = logsm ? LT_OP_LOG_SOFTMAX : LT_OP_SOFTMAX;
            lt_op op = logsm ? LT_OP_LOG_SOFTMAX_GRAD : LT_OP_SOFTMAX_GRAD;
            lt_value *x = tu_rand(LT_F32, c->rank, c->dims, -4, 4, seed);
            lt_value *y = gm_run(fwd, c->opset, 1, (lt_value *[]){x}, smx_attrs, c, NULL);
            lt_value *dy = tu_rand(LT_F32, c->rank, c->dims, -1, 1, seed + 1);
            lt_value *got = gm_run(op, c->opset, 2, (lt_value *[]){dy, y}, smx_attrs, c, NULL);
            /* the same float32 values, widened */
            lt_value *y64 = tu_rand(LT_F64, c->rank, c->dims, 0, 1, 0);
            lt_value *dy64 = tu_rand(LT_F64, c->rank, c->dims, 0, 1, 0);
            for (int64_t j = 0; j < y->t.numel; j++) {
                lt_tensor_set_f64(&y64->t, j, tu_get(y, j));
                lt_tensor_set_f64(&dy64->t, j, tu_get(dy, j));
            }
            lt_value *want = gm_run(op, c->opset, 2, (lt_value *[]){dy64, y64}, smx_attrs, c, NULL);
            assert_int_equal(got->t.dtype, LT_F32);
            gm_assert_same(got, want, 1e-4, 1e-6, lt_op_names[op]);
            lt_value_free(want);
            lt_value_free(dy64);
            lt_value_free(y64);
            lt_value_free(got);
            lt_value_free(dy);
            lt_value_free(y);
            lt_value_free(x);
        }
    /* float16 through float32 */
    const smx_case *c = &smx_cases[2];
    lt_value *x = tu_rand(LT_F16, c->rank, c->dims, -2, 2, 9);
    lt_value *y = gm_run(LT_OP_SOFTMAX, 13, 1, (lt_value *[]){x}, smx_attrs, c, NULL);
    lt_value *dy = tu_rand(LT_F16, c->rank, c->dims, -1, 1, 10);
    lt_value *got = gm_run(LT_OP_SOFTMAX_GRAD, 13, 2, (lt_value *[]){dy, y}, smx_attrs, c, NULL);
    assert_int_equal(got->t.dtype, LT_F16);
    lt_value *y64 = tu_rand(LT_F64, c->rank, c->dims, 0, 1, 0), *dy64 = tu_rand(LT_F64, c->rank, c->dims, 0, 1, 0);
    for (int64_t j = 0; j < y->t.numel; j++) {
        lt_tensor_set_f64(&y64->t, j, tu_get(y, j));
        lt_tensor_set_f64(&dy64->t, j, tu_get(dy, j));
    }
    lt_value *want = gm_run(LT_OP_SOFTMAX_GRAD, 13, 2, (lt_value *[]){dy64, y64}, smx_attrs, c, NULL);
    gm_assert_same(got, want, 5e-3, 2e-3, "SoftmaxGrad float16");
    lt_value_free(want);
    lt_value_free(dy64);
    lt_value_free(y64);
    lt_value_free(got);
    lt_value_free(dy);
    lt_value_free(y);
    lt_value_free(x);
}

/* Hand-derived: softmax y = (0.25, 0.75), dy = (1, 0): sum(dy*y) = 0.25,
 * dx = y * (dy - 0.25) = (0.1875, -0.1875). Log-softmax of the same y:
 * dx = dy - y * sum(dy) = (0.75, -0.75). */
static void hand_values(void **state)
{
    (void)state;
    lt_value *y = tu_from(LT_F32, 2, (int64_t[]){1, 2}, (double[]){0.25, 0.75});
    lt_value *ly = tu_from(LT_F32, 2, (int64_t[]){1, 2}, (double[]){log(0.25), log(0.75)});
    lt_value *dy = tu_from(LT_F32, 2, (int64_t[]){1, 2}, (double[]){1, 0});
    lt_value *got = gm_run(LT_OP_SOFTMAX_GRAD, 13, 2, (lt_value *[]){dy, y}, NULL, NULL, NULL);
    tu_assert_close(got, (double[]){0.1875, -0.1875}, 2, 1e-6, 1e-7, 0);
    lt_value_free(got);
    got = gm_run(LT_OP_LOG_SOFTMAX_GRAD, 13, 2, (lt_value *[]){dy, ly}, NULL, NULL, NULL);
    tu_assert_close(got, (double[]){0.75, -0.75}, 2, 1e-6, 1e-7, 0);
    lt_value_free(got);
    lt_value_free(dy);
    lt_value_free(ly);
    lt_value_free(y);
}

static void bad_input(void **state)
{
    (void)state;
    lt_value *y = tu_rand(LT_F32, 2, (int64_t[]){3, 4}, 0, 1, 1), *dy = tu_rand(LT_F32, 2, (int64_t[]){4, 3}, 0, 1, 2);
    char msg[LT_ERR_MSG_MAX];
    assert_int_equal(gm_run_status(LT_OP_SOFTMAX_GRAD, 13, 2, (lt_value *[]){dy, y}, NULL, NULL, msg, sizeof msg),
                     LT_ERR_INVALID);
    assert_non_null(strstr(msg, "dy has shape [4,3], expected [3,4]"));
    smx_case c = {13, true, 2, 2, {3, 4}};
    assert_int_equal(gm_run_status(LT_OP_LOG_SOFTMAX_GRAD, 13, 2, (lt_value *[]){y, y}, smx_attrs, &c, NULL, 0),
                     LT_ERR_INVALID);
    lt_value *yi = tu_rand(LT_I32, 2, (int64_t[]){3, 4}, 0, 5, 3);
    assert_int_equal(gm_run_status(LT_OP_SOFTMAX_GRAD, 13, 2, (lt_value *[]){yi, yi}, NULL, NULL, NULL, 0),
                     LT_ERR_UNSUPPORTED);
    lt_value_free(yi);
    lt_value_free(dy);
    lt_value_free(y);
}

static void shape_rule(void **state)
{
    (void)state;
    lt_type dy = gm_type(LT_F32, 2, (int64_t[]){3, 4}), y = gm_type(LT_F32, 2, (int64_t[]){3, 4});
    lt_type t = gm_infer(LT_OP_SOFTMAX_GRAD, 13, 2, (const lt_type *[]){&dy, &y}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 4});
    lt_type du = gm_type(LT_F32, -1, NULL);
    t = gm_infer(LT_OP_LOG_SOFTMAX_GRAD, 13, 2, (const lt_type *[]){&du, &y}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 4});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_cases),  cmocka_unit_test(float32_matches_float64), cmocka_unit_test(hand_values),
        cmocka_unit_test(bad_input), cmocka_unit_test(shape_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
