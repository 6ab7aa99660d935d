/* Elementwise fusion (ir/fuse_elementwise.c and the FusedElementwise
 * kernel): the combined forward/backward program of a model made of
 * elementwise chains (tests/data/fuse_chain.onnx: a GELU spelled out, row
 * and scalar operands, Sub, Tanh, Sigmoid, Neg, Exp, Sqrt, Reciprocal, a
 * chain value that is also a model output) gives the same loss, outputs
 * and gradients fused as unfused; the fused program has fewer nodes, and
 * fused nodes with several outputs; so does Mish spelled out with Softplus
 * (tests/data/fuse_mish.onnx). Kernel errors on malformed programs. */
#include "testutil.h"
#include "ir/fuse_elementwise.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/fuse_chain.onnx"

static int count_nodes(const lt_block *b, lt_op op, int *multi_out)
{
    int c = 0;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (op == LT_OP_COUNT || n->op == op)
            c++;
        if (n->op == LT_OP_FUSED_ELEMENTWISE && n->nout > 1 && multi_out)
            (*multi_out)++;
        for (int r = 0; r < n->nregions; r++)
            c += count_nodes(n->regions[r], op, multi_out);
    }
    return c;
}

/* the combined program of model, fused or not, run on x: its outputs */
static int run_program(const char *model, bool fuse, const lt_value *x, lt_value **outs, int *nodes, int *fused,
                       int *multi)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(model, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (fuse && lt_ir_fuse_elementwise(m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_ir_verify(m, &err) != LT_OK)
        fail_msg("verify after fusion: %s", err.msg);
    *multi = 0;
    *nodes = count_nodes(m->main, LT_OP_COUNT, NULL);
    *fused = count_nodes(m->main, LT_OP_FUSED_ELEMENTWISE, multi);
    if (fuse)
        *multi += 1000 * count_nodes(m->main, LT_OP_SOFTPLUS, NULL); /* Softplus left unfused */
    int nout = lt_model_num_outputs(m);
    assert_true(nout <= 64);
    const char *names[1] = {"x"};
    lt_value *ins[1] = {lt_value_ref(x)};
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    lt_value_free(ins[0]);
    lt_model_free(m);
    return nout;
}

static void check_model(const char *model, int64_t batch, uint64_t seed, bool chain)
{
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){batch, 5, 24}, -2, 2, seed);
    lt_value *a[64] = {0}, *b[64] = {0};
    int na, nb, fa, fb, ma, mb;
    int n = run_program(model, false, x, a, &na, &fa, &ma);
    assert_int_equal(run_program(model, true, x, b, &nb, &fb, &mb), n);
    /* the chains did fuse, into fewer nodes (for MODEL, some with several
     * outputs); no Softplus is left alone */
    assert_int_equal(fa, 0);
    assert_true(fb >= (chain ? 2 : 1));
    assert_true(chain ? mb >= 1 && mb < 1000 : mb < 1000);
    assert_true(nb < na);
    assert_true(n >= (chain ? 3 : 2));
    for (int i = 0; i < n; i++) {
        const lt_tensor *ta = lt_value_tensor(a[i]), *tb = lt_value_tensor(b[i]);
        assert_int_equal(ta->rank, tb->rank);
        assert_int_equal(ta->numel, tb->numel);
        double scale = 0, maxd = 0;
        for (int64_t e = 0; e < ta->numel; e++) {
            double u = lt_tensor_get_f64(ta, e), v = lt_tensor_get_f64(tb, e);
            assert_false(isnan(u));
            scale = fmax(scale, fabs(u));
            maxd = fmax(maxd, fabs(u - v));
        }
        /* the same float operations element for element: equal up to the
         * order gradients are summed in */
        if (maxd > 1e-6 * fmax(scale, 1))
            fail_msg("output %d differs fused: %.3g (scale %.3g)", i, maxd, scale);
        lt_value_free(a[i]);
        lt_value_free(b[i]);
    }
    lt_value_free(x);
}

static void fused_matches_unfused(void **state)
{
    (void)state;
    check_model(MODEL, 3, 1, true);   /* one partial tile */
    check_model(MODEL, 700, 2, true); /* many tiles, threaded, a partial last tile */
}

/* Mish as TorchScript writes it (Softplus, Tanh, Mul after an affine row):
 * forward and gradient chains fuse, Softplus included */
static void softplus_fuses(void **state)
{
    (void)state;
    check_model(LT_SOURCE_DIR "/tests/data/fuse_mish.onnx", 3, 5, false);
    check_model(LT_SOURCE_DIR "/tests/data/fuse_mish.onnx", 700, 6, false);
}

/* a malformed program is refused with a message, not run */
static void malformed_program(void **state)
{
    (void)state;
    static const int64_t bad[][3] = {{LT_FE_ADD, 0, 5}, {LT_FE_COUNT, 0, -1}, {LT_FE_EXP, 0, 0}, {LT_FE_MUL, -1, 0}};
    for (size_t c = 0; c <= sizeof bad / sizeof bad[0]; c++) {
        tu_graph g = tu_single(LT_OP_FUSED_ELEMENTWISE, 1, 1, 1);
        int64_t good[3] = {LT_FE_NEG, 0, -1};
        tu_attr_ints(&g, "program", 3, c < sizeof bad / sizeof bad[0] ? bad[c] : good);
        tu_attr_ints(&g, "outputs", 1, (int64_t[]){c == sizeof bad / sizeof bad[0] ? 0 : 1});
        lt_value *in[1] = {tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 7)}, *out[1] = {NULL};
        lt_err err;
        assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
        assert_non_null(strstr(err.msg, "FusedElementwise"));
        lt_value_free(in[0]);
        lt_value_free(out[0]);
        tu_free(&g);
    }
}

/* a row operand repeats along the last axis; a single element everywhere */
static void row_and_scalar_operands(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_FUSED_ELEMENTWISE, 1, 3, 2);
    /* r3 = x + row, r4 = r3 * s, outputs r4 and r3 */
    int64_t prog[6] = {LT_FE_ADD, 0, 1, LT_FE_MUL, 3, 2};
    tu_attr_ints(&g, "program", 6, prog);
    tu_attr_ints(&g, "outputs", 2, (int64_t[]){4, 3});
    int64_t d[3] = {37, 3, 11};
    lt_value *in[3] = {tu_rand(LT_F32, 3, d, -1, 1, 8), tu_rand(LT_F32, 2, (int64_t[]){1, 11}, -1, 1, 9),
                       tu_rand(LT_F32, 0, NULL, 0.5, 2, 10)};
    lt_value *out[2] = {NULL, NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int64_t n = 37 * 3 * 11;
    double *w0 = malloc(sizeof *w0 * (size_t)n), *w1 = malloc(sizeof *w1 * (size_t)n);
    double s = tu_get(in[2], 0);
    for (int64_t i = 0; i < n; i++) {
        float r = (float)tu_get(in[0], i) + (float)tu_get(in[1], i % 11);
        w1[i] = r;
        w0[i] = r * (float)s;
    }
    tu_assert_close(out[0], w0, n, 0, 0, 8);
    tu_assert_close(out[1], w1, n, 0, 0, 8);
    free(w0);
    free(w1);
    for (int i = 0; i < 3; i++)
        lt_value_free(in[i]);
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fused_matches_unfused),
        cmocka_unit_test(softplus_fuses),
        cmocka_unit_test(malformed_program),
        cmocka_unit_test(row_and_scalar_operands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
