/* Scalar scales folded into matrix products (ir/fold_scale.c and the
 * MatMulTrans kernel's alpha). The kernel against sums in double for every
 * pair of flags on each of its paths: attention's small per-head products
 * (batch 17 x 3, 8 columns or fewer, up to 32), one weight for a tall
 * batch, float64 with broadcasting, and wide products. The pass on
 * tests/data/scale_fold.onnx after the AD: exactly the scalings it lists
 * fold (a Mul and a Div after a product, their gradients' before two
 * products, a Mul read by one product), the others stay; the program
 * computes what the unfolded one does (float64 within 1e-12, float32
 * within 1e-5) and its parameter gradients match central finite
 * differences. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fold_scale.h"
#include "ir/fold_transpose.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/scale_fold.onnx"

/* ---- the kernel ---- */

static double at(const lt_value *v, int64_t base, int64_t cols, bool t, int64_t i, int64_t j)
{
    return tu_get(v, base + (t ? j * cols + i : i * cols + j));
}

static void product_case(lt_dtype dt, bool ta, bool tb, float alpha, int ra, const int64_t *da, int rb,
                         const int64_t *db, uint64_t seed)
{
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_int(&g, "transA", ta);
    tu_attr_int(&g, "transB", tb);
    tu_attr_float(&g, "alpha", alpha);
    lt_value *in[2] = {tu_rand(dt, ra, da, -1, 1, seed), tu_rand(dt, rb, db, -1, 1, seed + 1)}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int64_t M = ta ? da[ra - 1] : da[ra - 2], K = ta ? da[ra - 2] : da[ra - 1];
    int64_t N = tb ? db[rb - 2] : db[rb - 1];
    const lt_tensor *y = lt_value_tensor(out[0]);
    int orank = ra > rb ? ra : rb;
    assert_int_equal(y->rank, orank);
    assert_int_equal(y->dims[orank - 2], M);
    assert_int_equal(y->dims[orank - 1], N);
    int64_t nb = y->numel / (M * N);
    double *want = malloc(sizeof *want * (size_t)y->numel);
    assert_non_null(want);
    for (int64_t bi = 0; bi < nb; bi++) {
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
                    s += at(in[0], ia * M * K, ta ? M : K, ta, i, x) * at(in[1], ib * K * N, tb ? K : N, tb, x, j);
                want[(bi * M + i) * N + j] = (double)alpha * s;
            }
    }
    tu_assert_close(out[0], want, y->numel, dt == LT_F32 ? 1e-5 : 1e-12, dt == LT_F32 ? 1e-5 : 1e-12, seed);
    free(want);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void kernel_alpha(void **state)
{
    (void)state;
    for (int f = 0; f < 4; f++) {
        bool ta = f & 1, tb = f & 2;
        uint64_t seed = 300 + 10 * (uint64_t)f;
        /* per-head products: 8 columns (k in pairs when A is not transposed), 28 columns */
        product_case(LT_F32, ta, tb, 0.35355339f, 4, ta ? (int64_t[]){17, 3, 9, 28} : (int64_t[]){17, 3, 28, 9}, 4,
                     tb ? (int64_t[]){17, 3, 8, 9} : (int64_t[]){17, 3, 9, 8}, seed);
        product_case(LT_F32, ta, tb, -1.5f, 4, ta ? (int64_t[]){17, 3, 7, 28} : (int64_t[]){17, 3, 28, 7}, 4,
                     tb ? (int64_t[]){17, 3, 28, 7} : (int64_t[]){17, 3, 7, 28}, seed + 1);
        /* one weight for a batch of 17 x 11 rows */
        product_case(LT_F32, ta, tb, 0.5f, 3, ta ? (int64_t[]){17, 6, 11} : (int64_t[]){17, 11, 6}, 2,
                     tb ? (int64_t[]){13, 6} : (int64_t[]){6, 13}, seed + 2);
        /* float64, broadcasting both ways */
        product_case(LT_F64, ta, tb, 0.75f, 4, ta ? (int64_t[]){2, 1, 40, 33} : (int64_t[]){2, 1, 33, 40}, 3,
                     tb ? (int64_t[]){3, 37, 40} : (int64_t[]){3, 40, 37}, seed + 3);
        /* wide: the packed kernels */
        product_case(LT_F32, ta, tb, 0.125f, 2, ta ? (int64_t[]){70, 65} : (int64_t[]){65, 70}, 2,
                     tb ? (int64_t[]){97, 70} : (int64_t[]){70, 97}, seed + 4);
    }
}

static void kernel_alpha_refused_for_integers(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_float(&g, "alpha", 2.0f);
    lt_value *in[2] = {tu_rand(LT_I32, 2, (int64_t[]){4, 5}, -3, 3, 5), tu_rand(LT_I32, 2, (int64_t[]){5, 3}, -3, 3, 6)},
             *out[1] = {NULL};
    lt_err err;
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    if (!strstr(err.msg, "alpha"))
        fail_msg("'%s' does not name alpha", err.msg);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

/* ---- the pass ---- */

static lt_model *program(bool f64, bool fold, int *nfolded)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(MODEL, &m, &err) != LT_OK || (f64 && lt_model_to_f64(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    *nfolded = 0;
    if (lt_ir_acc_to_add(m, NULL, &err) != LT_OK || lt_ir_fold_transpose(m, NULL, &err) != LT_OK ||
        (fold && lt_ir_fold_scale(m, nfolded, &err) != LT_OK))
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

/* scalings by a one-element constant or parameter left in m */
static int scalings(const lt_model *m, int *alphas)
{
    int n = 0;
    *alphas = 0;
    for (int i = 0; i < m->main->nnodes; i++) {
        const lt_node *k = m->main->nodes[i];
        if (k->op == LT_OP_MAT_MUL_TRANS && lt_attr_find(k, "alpha") && lt_attr_float(k, "alpha", 1) != 1)
            ++*alphas;
        if ((k->op != LT_OP_MUL && k->op != LT_OP_DIV) || k->nin != 2)
            continue;
        for (int j = 0; j < 2; j++) {
            const lt_ival *c = k->in[j];
            bool param = c->param >= 0 && c->param < m->nparams;
            bool konst = c->def && c->def->op == LT_OP_CONSTANT;
            if ((param || konst) && c->type.rank >= 0 && c->type.rank <= 4) {
                int64_t e = 1;
                for (int d = 0; d < c->type.rank; d++)
                    e *= c->type.dims[d].sym < 0 ? c->type.dims[d].v : 2;
                n += e == 1;
                break;
            }
        }
    }
    return n;
}

static void compare(lt_value **a, lt_value **b, int n, double tol)
{
    for (int i = 0; i < n; i++) {
        const lt_tensor *ta = lt_value_tensor(a[i]), *tb = lt_value_tensor(b[i]);
        assert_int_equal(ta->numel, tb->numel);
        for (int64_t e = 0; e < ta->numel; e++) {
            double u = lt_tensor_get_f64(ta, e), v = lt_tensor_get_f64(tb, e);
            if (fabs(u - v) > tol * fmax(1, fabs(u)))
                fail_msg("output %d element %lld: %.17g unfolded, %.17g folded", i, (long long)e, u, v);
        }
    }
}

static void pass_on_attention(void **state)
{
    (void)state;
    lt_value *x32 = tu_rand(LT_F32, 3, (int64_t[]){16, 5, 8}, -1.5, 1.5, 31);
    lt_value *x = lt_value_to_f64(x32);
    for (int f64 = 1; f64 >= 0; f64--) {
        int nf, np, alphas_plain, alphas;
        lt_model *plain = program(f64, false, &np), *folded = program(f64, true, &nf);
        int before = scalings(plain, &alphas_plain), after = scalings(folded, &alphas);
        /* Mul(s, c1), Div(o, 2), their gradients' Mul and Div, Mul(x, 0.75) */
        assert_int_equal(nf, 5);
        assert_int_equal(before - after, 5);
        assert_int_equal(alphas_plain, 0);
        assert_int_equal(alphas, 7); /* two forward, two pairs of gradient products, x Wu */
        /* what stays: k v^T's Mul (read twice), its gradient's (read by a sum), the trainable scale's two */
        assert_true(after >= 3);
        const lt_value *in = f64 ? x : x32;
        lt_value *a[16] = {0}, *b[16] = {0};
        int n = run(plain, in, a);
        assert_int_equal(run(folded, in, b), n);
        assert_int_equal(n, 6);
        compare(a, b, n, f64 ? 1e-12 : 1e-5);
        if (f64) {
            /* parameter gradients of the folded program against central differences */
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
                    double up = loss_of(folded, in);
                    w[e] = keep - h;
                    double dn = loss_of(folded, in);
                    w[e] = keep;
                    double fd = (up - dn) / (2 * h), an = lt_tensor_get_f64(g, e);
                    if (fabs(fd - an) > 1e-5 * fmax(1, fabs(fd)))
                        fail_msg("%s[%lld]: analytic %.9g, differences %.9g", on, (long long)e, an, fd);
                    checked++;
                }
            }
            assert_true(checked >= 30);
        }
        for (int i = 0; i < n; i++) {
            lt_value_free(a[i]);
            lt_value_free(b[i]);
        }
        lt_model_free(plain);
        lt_model_free(folded);
    }
    lt_value_free(x);
    lt_value_free(x32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_alpha),
        cmocka_unit_test(kernel_alpha_refused_for_integers),
        cmocka_unit_test(pass_on_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
