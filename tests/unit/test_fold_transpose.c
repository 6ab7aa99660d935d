/* Transposes folded into matrix products (ir/fold_transpose.c and the
 * MatMulTrans kernel). The kernel against sums in double for every pair of
 * flags, batch broadcasting both ways, odd sizes and a batch of 17 (float32
 * and float64), and its refusals. The pass on an attention block
 * (tests/data/attn_fold.onnx: weights used through W^T, k^T, the transpose
 * of a product, a rank-2 Transpose without perm, head permutes that must
 * stay): no product reads a last-two-axes Transpose afterwards, the head
 * permutes are still there, the float64 program agrees with the unfolded
 * one and its parameter gradients match central finite differences. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fold_transpose.h"
#include "ir/fuse_elementwise.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/attn_fold.onnx"

/* ---- the kernel ---- */

/* element (i, j) of op(X) for the matrix of X starting at x, stored rows x cols */
static double at(const lt_value *v, int64_t base, int64_t rows, int64_t cols, bool t, int64_t i, int64_t j)
{
    (void)rows;
    return tu_get(v, base + (t ? j * cols + i : i * cols + j));
}

static void product_case(lt_dtype dt, bool ta, bool tb, int ra, const int64_t *da, int rb, const int64_t *db,
                         uint64_t seed)
{
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_int(&g, "transA", ta);
    tu_attr_int(&g, "transB", tb);
    lt_value *in[2] = {tu_rand(dt, ra, da, -1, 1, seed), tu_rand(dt, rb, db, -1, 1, seed + 1)}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* the shapes: op(A) is [M, K], op(B) [K, N]; batch dims broadcast */
    int64_t M = ta ? da[ra - 1] : da[ra - 2], K = ta ? da[ra - 2] : da[ra - 1];
    int64_t N = tb ? db[rb - 2] : db[rb - 1];
    assert_int_equal(tb ? db[rb - 1] : db[rb - 2], K);
    const lt_tensor *y = lt_value_tensor(out[0]);
    int orank = ra > rb ? ra : rb;
    assert_int_equal(y->rank, orank);
    assert_int_equal(y->dims[orank - 2], M);
    assert_int_equal(y->dims[orank - 1], N);
    int64_t nb = y->numel / (M * N);
    double *want = malloc(sizeof *want * (size_t)y->numel);
    assert_non_null(want);
    for (int64_t bi = 0; bi < nb; bi++) {
        /* the batch index of each operand: y's batch coordinates, 0 where the operand has 1 */
        int64_t rem = bi, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = orank - 3; d >= 0; d--) {
            int64_t yd = y->dims[d], c = rem % yd;
            rem /= yd;
            int a = d - (orank - ra), b = d - (orank - rb);
            if (a >= 0) {
                ia += (da[a] == 1 ? 0 : c) * sa;
                sa *= da[a];
            }
            if (b >= 0) {
                ib += (db[b] == 1 ? 0 : c) * sb;
                sb *= db[b];
            }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t x = 0; x < K; x++)
                    s += at(in[0], ia * M * K, ta ? K : M, ta ? M : K, ta, i, x) *
                         at(in[1], ib * K * N, tb ? N : K, tb ? K : N, tb, x, j);
                want[(bi * M + i) * N + j] = s;
            }
    }
    tu_assert_close(out[0], want, y->numel, dt == LT_F32 ? 1e-5 : 1e-12, dt == LT_F32 ? 1e-5 : 1e-12, seed);
    free(want);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void kernel_against_sums(void **state)
{
    (void)state;
    for (int f = 0; f < 4; f++) {
        bool ta = f & 1, tb = f & 2;
        uint64_t seed = 100 + 10 * (uint64_t)f;
        /* attention shapes: [17, 3, 7, 5] with [17, 3, 5, 9] (stored per flag) */
        product_case(LT_F32, ta, tb, 4, ta ? (int64_t[]){17, 3, 5, 7} : (int64_t[]){17, 3, 7, 5}, 4,
                     tb ? (int64_t[]){17, 3, 9, 5} : (int64_t[]){17, 3, 5, 9}, seed);
        /* one weight matrix for a batch of 17 x 11 rows (the tall product when A is not transposed) */
        product_case(LT_F32, ta, tb, 3, ta ? (int64_t[]){17, 6, 11} : (int64_t[]){17, 11, 6}, 2,
                     tb ? (int64_t[]){13, 6} : (int64_t[]){6, 13}, seed + 1);
        /* broadcasting both ways, float64, wide enough for the large kernels */
        product_case(LT_F64, ta, tb, 4, ta ? (int64_t[]){2, 1, 40, 33} : (int64_t[]){2, 1, 33, 40}, 3,
                     tb ? (int64_t[]){3, 37, 40} : (int64_t[]){3, 40, 37}, seed + 2);
        product_case(LT_F32, ta, tb, 2, ta ? (int64_t[]){70, 65} : (int64_t[]){65, 70}, 2,
                     tb ? (int64_t[]){67, 70} : (int64_t[]){70, 67}, seed + 3);
    }
}

static void kernel_refusals(void **state)
{
    (void)state;
    struct {
        lt_dtype dt;
        int ra;
        int64_t da[2];
        bool ta;
        const char *says;
    } bad[] = {
        {LT_F32, 1, {5, 0}, true, "rank 2 or more"},
        {LT_I32, 2, {5, 5}, true, "not supported"},
        {LT_F32, 2, {4, 6}, false, "MatMulTrans"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
        tu_attr_int(&g, "transA", bad[c].ta);
        lt_value *in[2] = {tu_rand(bad[c].dt, bad[c].ra, bad[c].da, -1, 1, 7),
                           tu_rand(bad[c].dt, 2, (int64_t[]){5, 3}, -1, 1, 8)},
                 *out[1] = {NULL};
        lt_err err;
        assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
        if (!strstr(err.msg, bad[c].says))
            fail_msg("case %zu: '%s' does not say '%s'", c, err.msg, bad[c].says);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
        lt_value_free(out[0]);
        tu_free(&g);
    }
}

/* ---- the pass ---- */

static bool swaps_last_two(const lt_node *t)
{
    if (!t || t->op != LT_OP_TRANSPOSE)
        return false;
    int len = 0, r = t->in[0]->type.rank;
    const int64_t *p = lt_attr_ints(t, "perm", &len);
    if (!p)
        return r == 2;
    bool keep = len == r && r >= 2 && p[r - 2] == r - 1 && p[r - 1] == r - 2;
    for (int i = 0; keep && i < r - 2; i++)
        keep = p[i] == i;
    return keep;
}

static lt_model *program(bool fold, int *nfolded)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(MODEL, &m, &err) != LT_OK || lt_model_to_f64(m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    *nfolded = 0;
    if (fold && (lt_ir_acc_to_add(m, NULL, &err) != LT_OK || lt_ir_fold_transpose(m, nfolded, &err) != LT_OK ||
                 lt_ir_fuse_elementwise(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    if (lt_ir_verify(m, &err) != LT_OK)
        fail_msg("verify: %s", err.msg);
    return m;
}

static int run(lt_model *m, const lt_value *x, lt_value **outs)
{
    lt_err err;
    const char *names[1] = {"x"};
    lt_value *ins[1] = {lt_value_ref((lt_value *)x)};
    lt_session *s;
    if (lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_session_run(s, 1, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    lt_value_free(ins[0]);
    return lt_model_num_outputs(m);
}

static double loss_of(lt_model *m, const lt_value *x)
{
    lt_value *o[16] = {0};
    int n = run(m, x, o);
    double l = tu_get(o[0], 0);
    for (int i = 0; i < n; i++)
        lt_value_free(o[i]);
    return l;
}

static void attention_block(void **state)
{
    (void)state;
    lt_value *x32 = tu_rand(LT_F32, 3, (int64_t[]){16, 5, 8}, -1.5, 1.5, 21);
    lt_value *x = lt_value_to_f64(x32);
    int nf;
    lt_model *plain = program(false, &nf), *folded = program(true, &nf);
    assert_true(nf >= 10);
    int heads = 0, trans = 0;
    for (int i = 0; i < folded->main->nnodes; i++) {
        const lt_node *n = folded->main->nodes[i];
        if (n->op == LT_OP_MAT_MUL || n->op == LT_OP_MAT_MUL_TRANS)
            for (int j = 0; j < 2; j++)
                if (swaps_last_two(n->in[j]->def))
                    fail_msg("%s reads a transpose of its last two axes", n->out[0]->name);
        trans += n->op == LT_OP_MAT_MUL_TRANS;
        int len = 0;
        const int64_t *p = n->op == LT_OP_TRANSPOSE ? lt_attr_ints(n, "perm", &len) : NULL;
        heads += p && len == 4 && p[1] == 2 && p[2] == 1;
    }
    assert_true(trans >= 8);
    assert_true(heads >= 6); /* split and merge, forward and backward */
    lt_value *a[16] = {0}, *b[16] = {0};
    int n = run(plain, x, a);
    assert_int_equal(run(folded, x, b), n);
    assert_int_equal(n, 7);
    for (int i = 0; i < n; i++) {
        const lt_tensor *ta = lt_value_tensor(a[i]), *tb = lt_value_tensor(b[i]);
        assert_int_equal(ta->numel, tb->numel);
        for (int64_t e = 0; e < ta->numel; e++) {
            double u = lt_tensor_get_f64(ta, e), v = lt_tensor_get_f64(tb, e);
            if (fabs(u - v) > 1e-12 * fmax(1, fabs(u)))
                fail_msg("output %d element %lld: %.17g unfolded, %.17g folded", i, (long long)e, u, v);
        }
    }
    int checked = 0;
    for (int i = 1; i < n; i++) {
        const char *on = lt_model_output_name(folded, i);
        size_t len = strlen(on);
        int p = 0;
        while (p < folded->nparams &&
               (strncmp(folded->params[p].name, on, len - 5) || folded->params[p].name[len - 5]))
            p++;
        assert_true(p < folded->nparams);
        lt_tensor *pt = &folded->params[p].data;
        const lt_tensor *g = lt_value_tensor(b[i]);
        assert_int_equal(g->numel, pt->numel);
        double *w = pt->data;
        for (int64_t e = 0; e < pt->numel; e += 1 + pt->numel / 9) {
            double h = 1e-6, keep = w[e];
            w[e] = keep + h;
            double up = loss_of(folded, x);
            w[e] = keep - h;
            double dn = loss_of(folded, x);
            w[e] = keep;
            double fd = (up - dn) / (2 * h), an = lt_tensor_get_f64(g, e);
            if (fabs(fd - an) > 1e-5 * fmax(1, fabs(fd)))
                fail_msg("%s[%lld]: analytic %.9g, differences %.9g", on, (long long)e, an, fd);
            checked++;
        }
    }
    assert_true(checked >= 40);
    for (int i = 0; i < n; i++) {
        lt_value_free(a[i]);
        lt_value_free(b[i]);
    }
    lt_model_free(plain);
    lt_model_free(folded);
    lt_value_free(x);
    lt_value_free(x32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_against_sums),
        cmocka_unit_test(kernel_refusals),
        cmocka_unit_test(attention_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
