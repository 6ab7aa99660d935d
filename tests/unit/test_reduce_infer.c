/* Shape inference rules of the reduce family: axes from attributes and from
 * constant inputs, keepdims, unknown axes, arg ops, TopK, the losses, and
 * definite errors. */
#include "testutil.h"
#include "ir/infer.h"
#include <stdlib.h>
#include <string.h>

/* Input i gets a known type. */
static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type_tensor(&g->m->main->params[i]->type, dt, rank, dims);
}

/* Input i becomes a constant int64 vector (an initializer). */
static void set_const(tu_graph *g, int i, int n, const int64_t *vals)
{
    int p = lt_module_add_param(g->m, g->m->main->params[i]->name);
    assert_true(p >= 0);
    lt_tensor *t = &g->m->params[p].data;
    t->dtype = LT_I64;
    t->rank = 1;
    t->dims[0] = n;
    t->numel = n;
    t->data = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (n > 0)
        memcpy(t->data, vals, sizeof(int64_t) * (size_t)n);
    g->m->params[p].value = g->m->main->params[i];
    g->m->main->params[i]->param = p;
    int64_t d = n;
    set_in(g, i, LT_I64, 1, &d);
}

static const lt_type *infer(tu_graph *g, int out)
{
    lt_err err;
    lt_status s = lt_infer_module(g->m, &err);
    if (s != LT_OK)
        fail_msg("%s", err.msg);
    return &g->node->out[out]->type;
}

static void expect(const lt_type *t, lt_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        if (dims)
            assert_int_equal(t->dims[i].v, dims[i]);
}

static void reduce_rules(void **state)
{
    (void)state;
    int64_t d[3] = {2, 3, 4};
    /* constant axes input */
    tu_graph g = tu_single(LT_OP_REDUCE_SUM, 13, 2, 1);
    set_in(&g, 0, LT_F32, 3, d);
    int64_t a1[1] = {1};
    set_const(&g, 1, 1, a1);
    tu_attr_int(&g, "keepdims", 0);
    expect(infer(&g, 0), LT_F32, 2, (int64_t[]){2, 4});
    tu_free(&g);
    /* attribute axes, negative, keepdims default */
    g = tu_single(LT_OP_REDUCE_MEAN, 11, 1, 1);
    set_in(&g, 0, LT_F64, 3, d);
    tu_attr_ints(&g, "axes", 2, (int64_t[]){0, -1});
    expect(infer(&g, 0), LT_F64, 3, (int64_t[]){1, 3, 1});
    tu_free(&g);
    /* no axes: everything */
    g = tu_single(LT_OP_REDUCE_L2, 13, 1, 1);
    set_in(&g, 0, LT_F32, 3, d);
    tu_attr_int(&g, "keepdims", 0);
    expect(infer(&g, 0), LT_F32, 0, NULL);
    tu_free(&g);
    /* empty constant axes with noop: unchanged */
    g = tu_single(LT_OP_REDUCE_MAX, 18, 2, 1);
    set_in(&g, 0, LT_I32, 3, d);
    set_const(&g, 1, 0, NULL);
    tu_attr_int(&g, "noop_with_empty_axes", 1);
    tu_attr_int(&g, "keepdims", 0);
    expect(infer(&g, 0), LT_I32, 3, d);
    tu_free(&g);
    /* axes only known at run time: rank kept with keepdims, else unknown */
    g = tu_single(LT_OP_REDUCE_PROD, 18, 2, 1);
    set_in(&g, 0, LT_F32, 3, d);
    expect(infer(&g, 0), LT_F32, 3, (int64_t[]){-1, -1, -1});
    tu_free(&g);
    g = tu_single(LT_OP_REDUCE_PROD, 18, 2, 1);
    set_in(&g, 0, LT_F32, 3, d);
    tu_attr_int(&g, "keepdims", 0);
    expect(infer(&g, 0), LT_F32, -1, NULL);
    tu_free(&g);
    /* a definite error: axis out of range */
    g = tu_single(LT_OP_REDUCE_SUM_SQUARE, 13, 1, 1);
    set_in(&g, 0, LT_F32, 3, d);
    tu_attr_ints(&g, "axes", 1, (int64_t[]){3});
    lt_err err;
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
}

static void symbolic_dims_pass(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_REDUCE_SUM, 11, 1, 1);
    lt_type *t = &g.m->main->params[0]->type;
    lt_type_tensor(t, LT_F32, 3, (int64_t[]){-1, 5, 6});
    t->dims[0].sym = lt_module_sym(g.m, "N");
    tu_attr_ints(&g, "axes", 1, (int64_t[]){2});
    const lt_type *y = infer(&g, 0);
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[0].sym, t->dims[0].sym);
    assert_int_equal(y->dims[1].v, 5);
    assert_int_equal(y->dims[2].v, 1);
    tu_free(&g);
}

static void arg_topk_rules(void **state)
{
    (void)state;
    int64_t d[3] = {2, 3, 4};
    tu_graph g = tu_single(LT_OP_ARG_MAX, 13, 1, 1);
    set_in(&g, 0, LT_F16, 3, d);
    tu_attr_int(&g, "axis", -1);
    tu_attr_int(&g, "keepdims", 0);
    expect(infer(&g, 0), LT_I64, 2, (int64_t[]){2, 3});
    tu_free(&g);
    g = tu_single(LT_OP_ARG_MIN, 11, 1, 1);
    set_in(&g, 0, LT_F32, 3, d);
    tu_attr_int(&g, "axis", 1);
    expect(infer(&g, 0), LT_I64, 3, (int64_t[]){2, 1, 4});
    tu_free(&g);
    /* TopK-1: k attribute */
    g = tu_single(LT_OP_TOP_K, 1, 1, 2);
    set_in(&g, 0, LT_F32, 3, d);
    tu_attr_int(&g, "k", 2);
    tu_attr_int(&g, "axis", 1);
    expect(infer(&g, 0), LT_F32, 3, (int64_t[]){2, 2, 4});
    expect(&g.node->out[1]->type, LT_I64, 3, (int64_t[]){2, 2, 4});
    tu_free(&g);
    /* TopK-11: constant k input, default axis -1 */
    g = tu_single(LT_OP_TOP_K, 11, 2, 2);
    set_in(&g, 0, LT_F32, 3, d);
    set_const(&g, 1, 1, (int64_t[]){3});
    expect(infer(&g, 0), LT_F32, 3, (int64_t[]){2, 3, 3});
    tu_free(&g);
    /* K larger than the axis is a definite error */
    g = tu_single(LT_OP_TOP_K, 11, 2, 2);
    set_in(&g, 0, LT_F32, 3, d);
    set_const(&g, 1, 1, (int64_t[]){5});
    lt_err err;
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
}

static void softmax_and_loss_rules(void **state)
{
    (void)state;
    int64_t d[4] = {2, 5, 3, 4};
    tu_graph g = tu_single(LT_OP_SOFTMAX, 11, 1, 1);
    set_in(&g, 0, LT_F32, 4, d);
    tu_attr_int(&g, "axis", 4); /* coerced form allows axis == rank */
    expect(infer(&g, 0), LT_F32, 4, d);
    tu_free(&g);
    g = tu_single(LT_OP_LOG_SOFTMAX, 13, 1, 1);
    set_in(&g, 0, LT_F32, 4, d);
    tu_attr_int(&g, "axis", 4);
    lt_err err;
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
    /* SCE: none keeps (N, d1, d2), mean is a scalar; log_prob like scores */
    g = tu_single(LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS, 13, 2, 2);
    set_in(&g, 0, LT_F32, 4, d);
    set_in(&g, 1, LT_I64, 3, (int64_t[]){2, 3, 4});
    tu_attr_str(&g, "reduction", "none");
    expect(infer(&g, 0), LT_F32, 3, (int64_t[]){2, 3, 4});
    expect(&g.node->out[1]->type, LT_F32, 4, d);
    tu_free(&g);
    g = tu_single(LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13, 2, 1);
    set_in(&g, 0, LT_F64, 4, d);
    expect(infer(&g, 0), LT_F64, 0, NULL);
    tu_free(&g);
    g = tu_single(LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13, 2, 1);
    set_in(&g, 0, LT_F64, 4, d);
    tu_attr_str(&g, "reduction", "average");
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
    /* same-shape ops */
    static const lt_op same[] = {LT_OP_HARDMAX, LT_OP_LP_NORMALIZATION, LT_OP_MEAN_VARIANCE_NORMALIZATION,
                                 LT_OP_CUM_SUM};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        g = tu_single(same[i], 13, same[i] == LT_OP_CUM_SUM ? 2 : 1, 1);
        set_in(&g, 0, LT_F32, 4, d);
        expect(infer(&g, 0), LT_F32, 4, d);
        tu_free(&g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reduce_rules),
        cmocka_unit_test(symbolic_dims_pass),
        cmocka_unit_test(arg_topk_rules),
        cmocka_unit_test(softmax_and_loss_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
