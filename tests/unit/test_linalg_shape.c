/* Shape rules of the linalg and rnn families: output types from typed
 * inputs, unknowns kept unknown, definite mismatches rejected. */
#include "testutil.h"
#include "ir/infer.h"
#include <string.h>

static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type_tensor(&g->m->main->params[i]->type, dt, rank, dims);
}

static const lt_type *infer(tu_graph *g, int out, lt_status want)
{
    lt_err err;
    /* forget the last answer: inference refines what outputs already say */
    for (int i = 0; i < g->node->nout; i++)
        lt_type_unknown(&g->node->out[i]->type, LT_UNDEFINED, -1);
    lt_status s = lt_infer_module(g->m, &err);
    if (s != want)
        fail_msg("inference status %d: %s", s, s ? err.msg : "ok");
    return &g->node->out[out]->type;
}

static void expect_dims(const lt_type *t, lt_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        if (t->dims[i].sym >= 0 || t->dims[i].v != dims[i])
            fail_msg("dim %d is %lld (sym %d), expected %lld", i, (long long)t->dims[i].v, t->dims[i].sym,
                     (long long)dims[i]);
}

static void matmul_gemm(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_MAT_MUL, 13, 2, 1);
    set_in(&g, 0, LT_F32, 4, (int64_t[]){2, 1, 3, 4});
    set_in(&g, 1, LT_F32, 3, (int64_t[]){5, 4, 6});
    expect_dims(infer(&g, 0, LT_OK), LT_F32, 4, (int64_t[]){2, 5, 3, 6});
    set_in(&g, 0, LT_F32, 1, (int64_t[]){4});
    expect_dims(infer(&g, 0, LT_OK), LT_F32, 2, (int64_t[]){5, 6});
    set_in(&g, 1, LT_F32, 2, (int64_t[]){3, 6});
    infer(&g, 0, LT_ERR_INVALID);
    tu_free(&g);

    g = tu_single(LT_OP_GEMM, 13, 3, 1);
    tu_attr_int(&g, "transA", 1);
    set_in(&g, 0, LT_F64, 2, (int64_t[]){3, 5});
    set_in(&g, 1, LT_F64, 2, (int64_t[]){3, 7});
    set_in(&g, 2, LT_F64, 1, (int64_t[]){7});
    expect_dims(infer(&g, 0, LT_OK), LT_F64, 2, (int64_t[]){5, 7});
    tu_free(&g);

    g = tu_single(LT_OP_Q_LINEAR_MAT_MUL, 10, 8, 1);
    set_in(&g, 0, LT_U8, 2, (int64_t[]){2, 4});
    set_in(&g, 3, LT_U8, 2, (int64_t[]){4, 3});
    set_in(&g, 7, LT_I8, 0, NULL);
    expect_dims(infer(&g, 0, LT_OK), LT_I8, 2, (int64_t[]){2, 3});
    tu_free(&g);
}

static void einsum_rule(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_EINSUM, 12, 2, 1);
    tu_attr_str(&g, "equation", "...ij, ...jk");
    set_in(&g, 0, LT_F32, 4, (int64_t[]){2, 1, 3, 4});
    set_in(&g, 1, LT_F32, 3, (int64_t[]){5, 4, 6});
    expect_dims(infer(&g, 0, LT_OK), LT_F32, 4, (int64_t[]){2, 5, 3, 6});
    tu_free(&g);
    g = tu_single(LT_OP_EINSUM, 12, 1, 1);
    tu_attr_str(&g, "equation", "kij->jk");
    set_in(&g, 0, LT_F64, 3, (int64_t[]){2, 3, 4});
    expect_dims(infer(&g, 0, LT_OK), LT_F64, 2, (int64_t[]){4, 2});
    tu_free(&g);
}

static void rnn_signal_rules(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_LSTM, 14, 3, 3);
    tu_attr_int(&g, "hidden_size", 5);
    tu_attr_int(&g, "layout", 1);
    tu_attr_str(&g, "direction", "bidirectional");
    set_in(&g, 0, LT_F32, 3, (int64_t[]){4, 7, 3});
    set_in(&g, 1, LT_F32, 3, (int64_t[]){2, 20, 3});
    expect_dims(infer(&g, 0, LT_OK), LT_F32, 4, (int64_t[]){4, 7, 2, 5});
    expect_dims(&g.node->out[2]->type, LT_F32, 3, (int64_t[]){4, 2, 5});
    set_in(&g, 1, LT_F32, 3, (int64_t[]){1, 20, 3});
    infer(&g, 0, LT_ERR_INVALID);
    tu_free(&g);

    g = tu_single(LT_OP_DFT, 17, 1, 1);
    tu_attr_int(&g, "axis", 2);
    tu_attr_int(&g, "onesided", 1);
    set_in(&g, 0, LT_F32, 4, (int64_t[]){1, 10, 10, 1});
    expect_dims(infer(&g, 0, LT_OK), LT_F32, 4, (int64_t[]){1, 10, 6, 2});
    tu_free(&g);
    g = tu_single(LT_OP_DFT, 17, 1, 1);
    tu_attr_int(&g, "axis", 3);
    set_in(&g, 0, LT_F32, 4, (int64_t[]){1, 10, 10, 1});
    infer(&g, 0, LT_ERR_INVALID);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_gemm),
        cmocka_unit_test(einsum_rule),
        cmocka_unit_test(rnn_signal_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
