/* Shape inference of the grad_nn family: each gradient takes the type of
 * the forward input it belongs to (symbolic dims included), the dtype of dy
 * where that input is untyped, and definite rank or shape clashes fail. */
#include "testutil.h"
#include "ir/infer.h"

/* sets input i's type; dims < 0 are unknown, -2 is the symbol N */
static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type *t = &g->m->main->params[i]->type;
    lt_type_tensor(t, dt, rank, dims);
    for (int d = 0; d < rank; d++)
        if (dims[d] == -2)
            t->dims[d].sym = lt_module_sym(g->m, "N");
}

static void infer(tu_graph *g, lt_status want)
{
    lt_err err;
    lt_status s = lt_infer_module(g->m, &err);
    if (s != want)
        fail_msg("status %d (%s)", s, s ? err.msg : "ok");
}

static void expect(const tu_graph *g, int out, lt_dtype dt, int rank, const int64_t *dims)
{
    const lt_type *t = &g->node->out[out]->type;
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int d = 0; d < rank; d++) {
        if (dims[d] == -2) {
            assert_true(t->dims[d].sym >= 0);
            continue;
        }
        assert_int_equal(t->dims[d].sym, -1);
        assert_int_equal(t->dims[d].v, dims[d]);
    }
}

static void conv_grad_shapes(void **state)
{
    (void)state;
    int64_t dy[4] = {-2, 8, 14, 14}, x[4] = {-2, 3, 28, 28}, w[4] = {8, 3, 5, 5};
    tu_graph g = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1);
    set_in(&g, 0, LT_F32, 4, dy);
    set_in(&g, 1, LT_F32, 4, w);
    set_in(&g, 2, LT_F32, 4, x);
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 4, x);
    tu_free(&g);

    g = tu_single(LT_OP_CONV_TRANSPOSE_GRAD_FILTER, 11, 3, 1);
    set_in(&g, 0, LT_F64, 4, dy);
    set_in(&g, 1, LT_F64, 4, x);
    set_in(&g, 2, LT_F64, 4, w);
    infer(&g, LT_OK);
    expect(&g, 0, LT_F64, 4, w);
    tu_free(&g);

    /* x untyped: dx gets dy's dtype, rank unknown */
    g = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1);
    set_in(&g, 0, LT_F32, 4, dy);
    set_in(&g, 1, LT_F32, 4, w);
    infer(&g, LT_OK);
    assert_int_equal(g.node->out[0]->type.dtype, LT_F32);
    assert_int_equal(g.node->out[0]->type.rank, -1);
    tu_free(&g);

    /* dy of another rank than x */
    int64_t dy3[3] = {1, 8, 14};
    g = tu_single(LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
    set_in(&g, 0, LT_F32, 3, dy3);
    set_in(&g, 1, LT_F32, 4, x);
    set_in(&g, 2, LT_F32, 4, w);
    infer(&g, LT_ERR_INVALID);
    tu_free(&g);
}

static void pool_resize_grad_shapes(void **state)
{
    (void)state;
    int64_t dy[4] = {-2, 3, 7, 7}, x[4] = {-2, 3, 14, 15};
    const lt_op ops[] = {LT_OP_MAX_POOL_GRAD, LT_OP_AVERAGE_POOL_GRAD, LT_OP_LP_POOL_GRAD, LT_OP_RESIZE_GRAD};
    for (int i = 0; i < 4; i++) {
        tu_graph g = tu_single(ops[i], 13, 2, 1);
        set_in(&g, 0, LT_F16, 4, dy);
        set_in(&g, 1, LT_F16, 4, x);
        infer(&g, LT_OK);
        expect(&g, 0, LT_F16, 4, x);
        tu_free(&g);
    }
}

static void norm_grad_shapes(void **state)
{
    (void)state;
    int64_t x[4] = {-2, 6, 5, 5}, c[1] = {6}, g3[1] = {3};
    tu_graph g = tu_single(LT_OP_BATCH_NORM_GRAD, 15, 6, 3);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 4, x);
    for (int i = 2; i < 6; i++)
        set_in(&g, i, LT_F32, 1, c);
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 4, x);
    expect(&g, 1, LT_F32, 1, c);
    expect(&g, 2, LT_F32, 1, c);
    tu_free(&g);

    /* GroupNormalization-18: parameters per group */
    g = tu_single(LT_OP_GROUP_NORM_GRAD, 18, 4, 3);
    set_in(&g, 0, LT_F64, 4, x);
    set_in(&g, 1, LT_F64, 4, x);
    set_in(&g, 2, LT_F64, 1, g3);
    set_in(&g, 3, LT_F64, 1, g3);
    infer(&g, LT_OK);
    expect(&g, 1, LT_F64, 1, g3);
    expect(&g, 2, LT_F64, 1, g3);
    tu_free(&g);

    /* LayerNormalization without B: dbias like scale */
    int64_t x3[3] = {-2, 4, 16}, s[1] = {16};
    g = tu_single(LT_OP_LAYER_NORM_GRAD, 17, 3, 3);
    set_in(&g, 0, LT_F32, 3, x3);
    set_in(&g, 1, LT_F32, 3, x3);
    set_in(&g, 2, LT_F32, 1, s);
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 3, x3);
    expect(&g, 2, LT_F32, 1, s);
    tu_free(&g);

    /* dy and x of definitely different shapes */
    int64_t bad[4] = {-2, 6, 5, 4};
    g = tu_single(LT_OP_LRN_GRAD, 13, 2, 1);
    set_in(&g, 0, LT_F32, 4, bad);
    set_in(&g, 1, LT_F32, 4, x);
    infer(&g, LT_ERR_INVALID);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_grad_shapes),
        cmocka_unit_test(pool_resize_grad_shapes),
        cmocka_unit_test(norm_grad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
