/* Shape inference of the nn family: output types from input types,
 * symbolic batch dims carried through, definite errors refused. */
#include "testutil.h"
#include "ir/infer.h"
#include <string.h>

/* sets input i's type; dims < 0 are unknown, -2 is the symbol N */
static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type *t = &g->m->main->params[i]->type;
    lt_type_tensor(t, dt, rank, dims);
    for (int d = 0; d < rank; d++)
        if (dims[d] == -2)
            t->dims[d].sym = lt_module_sym(g->m, "N");
}

static const lt_type *infer(tu_graph *g, int out, lt_status want)
{
    lt_err err;
    lt_status s = lt_infer_module(g->m, &err);
    if (s != want)
        fail_msg("status %d (%s)", s, s ? err.msg : "ok");
    return &g->node->out[out]->type;
}

static void expect(const lt_type *t, lt_dtype dt, int rank, const int64_t *dims)
{
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

static void conv_shapes(void **state)
{
    (void)state;
    int64_t x[4] = {-2, 3, 28, 28}, w[4] = {8, 3, 5, 5}, pads[4] = {2, 2, 2, 2}, y[4] = {-2, 8, 28, 28};
    tu_graph g = tu_single(LT_OP_CONV, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 4, w);
    tu_attr_ints(&g, "pads", 4, pads);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y);
    tu_free(&g);

    /* unknown height stays unknown; strides apply to the rest */
    int64_t x2[4] = {1, 3, -1, 28}, st[2] = {1, 2}, y2[4] = {1, 8, -1, 12};
    g = tu_single(LT_OP_CONV, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, x2);
    set_in(&g, 1, LT_F32, 4, w);
    tu_attr_ints(&g, "strides", 2, st);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y2);
    tu_free(&g);

    /* ConvInteger gives int32 */
    int64_t y3[4] = {-2, 8, 24, 24};
    g = tu_single(LT_OP_CONV_INTEGER, 10, 2, 1);
    set_in(&g, 0, LT_U8, 4, x);
    set_in(&g, 1, LT_U8, 4, w);
    expect(infer(&g, 0, LT_OK), LT_I32, 4, y3);
    tu_free(&g);

    /* channels that cannot match */
    int64_t w4[4] = {8, 2, 5, 5};
    g = tu_single(LT_OP_CONV, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 4, w4);
    infer(&g, 0, LT_ERR_INVALID);
    tu_free(&g);
}

static void conv_transpose_shapes(void **state)
{
    (void)state;
    int64_t x[4] = {1, 1, 3, 3}, w[4] = {1, 2, 3, 3}, st[2] = {3, 2}, os[2] = {10, 8}, y[4] = {1, 2, 10, 8};
    tu_graph g = tu_single(LT_OP_CONV_TRANSPOSE, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 4, w);
    tu_attr_ints(&g, "strides", 2, st);
    tu_attr_ints(&g, "output_shape", 2, os);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y);
    tu_free(&g);

    int64_t pads[4] = {1, 0, 1, 1}, op[2] = {1, 0}, y2[4] = {1, 2, 3 * 2 + 3 + 1 - 2, 2 * 2 + 3 - 1};
    g = tu_single(LT_OP_CONV_TRANSPOSE, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 4, w);
    tu_attr_ints(&g, "strides", 2, st);
    tu_attr_ints(&g, "pads", 4, pads);
    tu_attr_ints(&g, "output_padding", 2, op);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y2);
    tu_free(&g);
}

static void pool_shapes(void **state)
{
    (void)state;
    int64_t x[4] = {-2, 2, 4, 5}, k[2] = {3, 3}, s[2] = {2, 2}, y[4] = {-2, 2, 2, 2};
    tu_graph g = tu_single(LT_OP_MAX_POOL, 12, 1, 2);
    set_in(&g, 0, LT_F16, 4, x);
    tu_attr_ints(&g, "kernel_shape", 2, k);
    tu_attr_ints(&g, "strides", 2, s);
    tu_attr_int(&g, "ceil_mode", 1);
    expect(infer(&g, 0, LT_OK), LT_F16, 4, y);
    expect(&g.node->out[1]->type, LT_I64, 4, y);
    tu_free(&g);

    /* no kernel_shape: a definite error */
    g = tu_single(LT_OP_AVERAGE_POOL, 11, 1, 1);
    set_in(&g, 0, LT_F32, 4, x);
    infer(&g, 0, LT_ERR_INVALID);
    tu_free(&g);

    int64_t yg[4] = {-2, 2, 1, 1};
    g = tu_single(LT_OP_GLOBAL_AVERAGE_POOL, 1, 1, 1);
    set_in(&g, 0, LT_F32, 4, x);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, yg);
    tu_free(&g);

    int64_t xu[4] = {1, 1, 2, 2}, ku[2] = {2, 2}, yu[4] = {1, 1, 4, 4};
    g = tu_single(LT_OP_MAX_UNPOOL, 11, 2, 1);
    set_in(&g, 0, LT_F32, 4, xu);
    set_in(&g, 1, LT_I64, 4, xu);
    tu_attr_ints(&g, "kernel_shape", 2, ku);
    tu_attr_ints(&g, "strides", 2, ku);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, yu);
    tu_free(&g);
}

static void roi_shapes(void **state)
{
    (void)state;
    int64_t x[4] = {1, 4, 10, 10}, r[2] = {5, 4}, b[1] = {5}, y[4] = {5, 4, 3, 2};
    tu_graph g = tu_single(LT_OP_ROI_ALIGN, 16, 3, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 2, r);
    set_in(&g, 2, LT_I64, 1, b);
    tu_attr_int(&g, "output_height", 3);
    tu_attr_int(&g, "output_width", 2);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y);
    tu_free(&g);

    int64_t r5[2] = {5, 5}, ps[2] = {2, 2}, y5[4] = {5, 4, 2, 2};
    g = tu_single(LT_OP_MAX_ROI_POOL, 1, 2, 1);
    set_in(&g, 0, LT_F32, 4, x);
    set_in(&g, 1, LT_F32, 2, r5);
    tu_attr_ints(&g, "pooled_shape", 2, ps);
    expect(infer(&g, 0, LT_OK), LT_F32, 4, y5);
    tu_free(&g);

    /* Col2Im with a non-constant image_shape of 2 values: rank 4 */
    int64_t xc[3] = {1, 12, 20}, two[1] = {2};
    g = tu_single(LT_OP_COL2_IM, 18, 3, 1);
    set_in(&g, 0, LT_F32, 3, xc);
    set_in(&g, 1, LT_I64, 1, two);
    set_in(&g, 2, LT_I64, 1, two);
    const lt_type *t = infer(&g, 0, LT_OK);
    assert_int_equal(t->rank, 4);
    assert_int_equal(t->dims[0].v, 1);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_shapes),
        cmocka_unit_test(conv_transpose_shapes),
        cmocka_unit_test(pool_shapes),
        cmocka_unit_test(roi_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
