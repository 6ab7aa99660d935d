/* Cast and CastLike between all numeric dtypes (truncation, saturation,
 * wrapping, bool, float16/bfloat16 rounding incl. the double-rounding
 * trap), string round trips, and the elementwise shape-inference rules. */
#include "test_elementwise.h"
#include "ir/infer.h"
#include <stdint.h>

static const lt_dtype all[] = {LT_F32, LT_F64, LT_F16, LT_BF16, LT_I8, LT_I16, LT_I32,
                               LT_I64, LT_U8,  LT_U16, LT_U32,  LT_U64, LT_BOOL};
#define NALL (int)(sizeof all / sizeof *all)

static lt_value *cast(lt_value *x, lt_dtype to, int opset, lt_status want)
{
    tu_graph g = tu_single(LT_OP_CAST, opset, 1, 1);
    tu_attr_int(&g, "to", to);
    lt_value *in[1] = {x};
    lt_value *r = ew_exec(&g, 1, in, want);
    tu_free(&g);
    return r;
}

/* Small integers are exact in every type: every pair must round-trip. */
static void matrix_exact_values(void **state)
{
    (void)state;
    int64_t d[1] = {6};
    double v[6] = {0, 1, 2, 7, 100, 64};
    for (int s = 0; s < NALL; s++)
        for (int t = 0; t < NALL; t++) {
            double want[6];
            for (int i = 0; i < 6; i++)
                want[i] = all[t] == LT_BOOL || all[s] == LT_BOOL ? v[i] != 0 : v[i];
            lt_value *out = cast(tu_from(all[s], 1, d, v), all[t], 13, LT_OK);
            assert_int_equal(out->t.dtype, all[t]);
            tu_assert_close(out, want, 6, 0, 0, (uint64_t)(s * 100 + t));
            lt_value_free(out);
        }
}

static void float_to_int_rules(void **state)
{
    (void)state;
    int64_t d[8] = {8};
    double x[8] = {2.7, -2.7, 300, -300, NAN, 1e20, -1.0, 0.999};
    struct {
        lt_dtype to;
        double want[8];
    } c[] = {
        {LT_I8, {2, -2, 127, -128, 0, 127, -1, 0}},
        {LT_U8, {2, 0, 255, 0, 0, 255, 0, 0}},
        {LT_I32, {2, -2, 300, -300, 0, INT32_MAX, -1, 0}},
        {LT_I64, {2, -2, 300, -300, 0, (double)INT64_MAX, -1, 0}},
        {LT_U64, {2, 0, 300, 0, 0, (double)UINT64_MAX, 0, 0}},
        {LT_BOOL, {1, 1, 1, 1, 1, 1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        lt_value *out = cast(tu_from(LT_F64, 1, d, x), c[i].to, 13, LT_OK);
        tu_assert_close(out, c[i].want, 8, 0, 0, i);
        lt_value_free(out);
        out = cast(tu_from(LT_F32, 1, d, x), c[i].to, 13, LT_OK);
        tu_assert_close(out, c[i].want, 8, 0, 0, 10 + i);
        lt_value_free(out);
    }
    /* narrowing between ints wraps; bool takes any nonzero */
    int64_t d4[1] = {4};
    double xi[4] = {300, -1, 65536 + 5, 0}, wi8[4] = {44, -1, 5, 0}, wu8[4] = {44, 255, 5, 0}, wb[4] = {1, 1, 1, 0};
    lt_value *out = cast(tu_from(LT_I32, 1, d4, xi), LT_I8, 13, LT_OK);
    tu_assert_close(out, wi8, 4, 0, 0, 0);
    lt_value_free(out);
    out = cast(tu_from(LT_I64, 1, d4, xi), LT_U8, 13, LT_OK);
    tu_assert_close(out, wu8, 4, 0, 0, 0);
    lt_value_free(out);
    out = cast(tu_from(LT_I16, 1, d4, xi), LT_BOOL, 13, LT_OK);
    tu_assert_close(out, wb, 4, 0, 0, 0);
    lt_value_free(out);
}

static void half_rounding(void **state)
{
    (void)state;
    int64_t d[1] = {1};
    /* just above the halfway point between 1 and the next half: rounding
     * through float first would land on the tie and round to even (1.0) */
    double x = 1 + ldexp(1, -11) + ldexp(1, -30);
    lt_value *out = cast(tu_from(LT_F64, 1, d, &x), LT_F16, 13, LT_OK);
    assert_int_equal(((uint16_t *)out->t.data)[0], 0x3c01);
    lt_value_free(out);
    double y = 1 + ldexp(1, -8) + ldexp(1, -40); /* the same trap for bfloat16 */
    out = cast(tu_from(LT_F64, 1, d, &y), LT_BF16, 19, LT_OK);
    assert_int_equal(((uint16_t *)out->t.data)[0], 0x3f81);
    lt_value_free(out);
    /* float -> bfloat16: truncation before opset 19, nearest-even after */
    float f;
    uint32_t bits = 0x3ef5eeb0;
    memcpy(&f, &bits, 4);
    double fv = f;
    out = cast(tu_from(LT_F32, 1, d, &fv), LT_BF16, 13, LT_OK);
    assert_int_equal(((uint16_t *)out->t.data)[0], 0x3ef5);
    lt_value_free(out);
    out = cast(tu_from(LT_F32, 1, d, &fv), LT_BF16, 19, LT_OK);
    assert_int_equal(((uint16_t *)out->t.data)[0], 0x3ef6);
    lt_value_free(out);
    /* ... but a model torch exported rounds to nearest even at every
     * opset, as PyTorch and onnxruntime do (autocast exports at opset 17) */
    tu_graph g = tu_single(LT_OP_CAST, 17, 1, 1);
    tu_attr_int(&g, "to", LT_BF16);
    g.m->producer_name = "pytorch";
    lt_value *in[1] = {tu_from(LT_F32, 1, d, &fv)};
    out = ew_exec(&g, 1, in, LT_OK);
    assert_int_equal(((uint16_t *)out->t.data)[0], 0x3ef6);
    lt_value_free(out);
    tu_free(&g);
    /* a large random float32 <-> float16 round trip, threaded sizes */
    int64_t dn[1] = {50000};
    lt_value *h = tu_rand(LT_F16, 1, dn, -60000, 60000, 3);
    lt_value *hcopy = cast(lt_value_ref(h), LT_F16, 13, LT_OK); /* same type: a view */
    lt_value *f32 = cast(h, LT_F32, 13, LT_OK);
    lt_value *back = cast(f32, LT_F16, 13, LT_OK);
    assert_memory_equal(back->t.data, hcopy->t.data, 50000 * 2);
    lt_value_free(back);
    lt_value_free(hcopy);
}

static void strings_and_forms(void **state)
{
    (void)state;
    int64_t d[1] = {3};
    double x[3] = {1.5, -2.5, 7};
    /* numbers to strings go through the string helper: numpy's formatting */
    lt_value *sv = cast(tu_from(LT_F32, 1, d, x), LT_STRING, 13, LT_OK);
    assert_int_equal(sv->t.dtype, LT_STRING);
    assert_string_equal(((const char **)sv->t.data)[0], "1.5");
    assert_string_equal(((const char **)sv->t.data)[1], "-2.5");
    lt_value *back = cast(sv, LT_F32, 13, LT_OK);
    tu_assert_close(back, x, 3, 0, 0, 0);
    lt_value_free(back);
    /* Cast-1 names the type */
    tu_graph g = tu_single(LT_OP_CAST, 1, 1, 1);
    tu_attr_str(&g, "to", "INT32");
    lt_value *in[1] = {tu_from(LT_F32, 1, d, x)};
    lt_value *out = ew_exec(&g, 1, in, LT_OK);
    double w[3] = {1, -2, 7};
    assert_int_equal(out->t.dtype, LT_I32);
    tu_assert_close(out, w, 3, 0, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    /* CastLike takes the type of its second input */
    int64_t d1[1] = {1};
    double z = 0;
    lt_value *in2[2] = {tu_from(LT_F64, 1, d, x), tu_from(LT_I8, 1, d1, &z)};
    out = ew_run(LT_OP_CAST_LIKE, 15, 2, in2, LT_OK);
    assert_int_equal(out->t.dtype, LT_I8);
    tu_assert_close(out, w, 3, 0, 0, 0);
    lt_value_free(out);
}

/* ---- shape inference ---- */
static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type_tensor(&g->m->main->params[i]->type, dt, rank, dims);
}

static void infer_rules(void **state)
{
    (void)state;
    lt_err err;
    int64_t a[3] = {2, 1, 4}, b[2] = {3, 1}, r[3] = {2, 3, 4}, bad[1] = {5};
    tu_graph g = tu_single(LT_OP_ADD, 14, 2, 1);
    set_in(&g, 0, LT_F32, 3, a);
    set_in(&g, 1, LT_F32, 2, b);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_F32);
    assert_int_equal(t->rank, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(t->dims[i].v, r[i]);
    tu_free(&g);

    g = tu_single(LT_OP_LESS, 13, 2, 1);
    set_in(&g, 0, LT_I64, 3, a);
    set_in(&g, 1, LT_I64, 1, bad);
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);

    g = tu_single(LT_OP_GREATER, 13, 2, 1);
    set_in(&g, 0, LT_F16, 3, a);
    set_in(&g, 1, LT_F16, -1, NULL);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    assert_int_equal(g.node->out[0]->type.dtype, LT_BOOL);
    assert_int_equal(g.node->out[0]->type.rank, -1);
    tu_free(&g);

    g = tu_single(LT_OP_WHERE, 16, 3, 1);
    set_in(&g, 0, LT_BOOL, 2, b);
    set_in(&g, 1, LT_I32, 3, a);
    set_in(&g, 2, LT_I32, 0, NULL);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_I32);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->dims[1].v, 3);
    tu_free(&g);

    g = tu_single(LT_OP_CAST, 13, 1, 1);
    tu_attr_int(&g, "to", LT_F16);
    set_in(&g, 0, LT_I32, 3, a);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    assert_int_equal(g.node->out[0]->type.dtype, LT_F16);
    assert_int_equal(g.node->out[0]->type.dims[2].v, 4);
    tu_free(&g);

    g = tu_single(LT_OP_IS_NA_N, 13, 1, 1);
    set_in(&g, 0, LT_F32, 2, b);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    assert_int_equal(g.node->out[0]->type.dtype, LT_BOOL);
    assert_int_equal(g.node->out[0]->type.dims[0].v, 3);
    tu_free(&g);

    g = tu_single(LT_OP_SUM, 13, 3, 1);
    set_in(&g, 0, LT_F32, 3, a);
    set_in(&g, 1, LT_F32, 2, b);
    set_in(&g, 2, LT_F32, 0, NULL);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    assert_int_equal(g.node->out[0]->type.rank, 3);
    assert_int_equal(g.node->out[0]->type.dims[1].v, 3);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matrix_exact_values), cmocka_unit_test(float_to_int_rules),
        cmocka_unit_test(half_rounding),       cmocka_unit_test(strings_and_forms),
        cmocka_unit_test(infer_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
