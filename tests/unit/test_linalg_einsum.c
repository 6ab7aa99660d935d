/* Einsum against a brute-force evaluator: every assignment of every label
 * is enumerated and the operand products summed into the output. */
#include "testutil.h"
#include <stdlib.h>
#include <string.h>

/* Brute force for equations of letters with an explicit output (no
 * ellipsis); sizes come from the inputs. Returns the output numel. */
static int64_t brute(const char *eq, int nin, lt_value **in, double *out, int64_t cap)
{
    char terms[8][16], outt[16];
    int nt = 0;
    const char *p = eq;
    while (1) {
        int n = 0;
        while (*p == ' ')
            p++;
        while (*p && *p != ',' && *p != '-')
            if (*p != ' ')
                terms[nt][n++] = *p++;
            else
                p++;
        terms[nt++][n] = 0;
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    assert_int_equal(nt, nin);
    assert_true(p[0] == '-' && p[1] == '>');
    p += 2;
    int no = 0;
    for (; *p; p++)
        if (*p != ' ')
            outt[no++] = *p;
    outt[no] = 0;
    int64_t size[128] = {0};
    char labs[32];
    int nl = 0;
    for (int t = 0; t < nt; t++)
        for (int a = 0; terms[t][a]; a++) {
            char c = terms[t][a];
            if (!size[(int)c])
                labs[nl++] = c;
            size[(int)c] = in[t]->t.dims[a];
        }
    int64_t total = 1, on = 1;
    for (int i = 0; i < nl; i++)
        total *= size[(int)labs[i]];
    for (int i = 0; i < no; i++)
        on *= size[(int)outt[i]];
    assert_true(on <= cap);
    memset(out, 0, sizeof *out * (size_t)on);
    int64_t val[128];
    for (int64_t it = 0; it < total; it++) {
        int64_t r = it;
        for (int i = nl - 1; i >= 0; i--) {
            val[(int)labs[i]] = r % size[(int)labs[i]];
            r /= size[(int)labs[i]];
        }
        double prod = 1;
        for (int t = 0; t < nt; t++) {
            int64_t off = 0;
            for (int a = 0; terms[t][a]; a++)
                off = off * in[t]->t.dims[a] + val[(int)terms[t][a]];
            prod *= tu_get(in[t], off);
        }
        int64_t o = 0;
        for (int i = 0; i < no; i++)
            o = o * size[(int)outt[i]] + val[(int)outt[i]];
        out[o] += prod;
    }
    return on;
}

static lt_value *run_einsum(const char *eq, int nin, lt_value **in, lt_status want_status)
{
    tu_graph g = tu_single(LT_OP_EINSUM, 12, nin, 1);
    tu_attr_str(&g, "equation", eq);
    lt_value *out[1] = {NULL};
    lt_err err;
    lt_status s = tu_run(&g, in, out, &err);
    if (s != want_status)
        fail_msg("'%s': status %d (%s)", eq, s, s ? err.msg : "ok");
    tu_free(&g);
    return out[0];
}

static void check(const char *eq, const char *eq_brute, lt_dtype dt, int nin, const int *ranks,
                  const int64_t dims[][6], uint64_t seed)
{
    lt_value *in[8];
    for (int i = 0; i < nin; i++)
        in[i] = lt_dtype_is_float(dt) ? tu_rand(dt, ranks[i], dims[i], -1, 1, seed + i)
                                      : tu_rand(dt, ranks[i], dims[i], -5, 5, seed + i);
    lt_value *y = run_einsum(eq, nin, in, LT_OK);
    double *want = malloc(sizeof *want * 4096);
    int64_t n = brute(eq_brute ? eq_brute : eq, nin, in, want, 4096);
    double tol = dt == LT_F16 ? 2e-3 : 1e-5;
    tu_assert_close(y, want, n, tol, tol, seed);
    free(want);
    lt_value_free(y);
    for (int i = 0; i < nin; i++)
        lt_value_free(in[i]);
}

static void einsum_two_operands(void **state)
{
    (void)state;
    check("ij,jk->ik", NULL, LT_F32, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {4, 5}}, 1);
    check("bij, bjk -> bik", NULL, LT_F64, 2, (int[]){3, 3}, (const int64_t[][6]){{5, 2, 3}, {5, 3, 4}}, 2);
    check("bhqd,bhkd->bhqk", NULL, LT_F32, 2, (int[]){4, 4}, (const int64_t[][6]){{2, 3, 4, 5}, {2, 3, 6, 5}}, 3);
    check("i,i", "i,i->", LT_F64, 2, (int[]){1, 1}, (const int64_t[][6]){{5}, {5}}, 4);
    check("i,j->ij", NULL, LT_F32, 2, (int[]){1, 1}, (const int64_t[][6]){{3}, {4}}, 5);
    check("ij,ji->", NULL, LT_F32, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {4, 3}}, 6);
    check("abc,cad->bd", NULL, LT_F32, 2, (int[]){3, 3}, (const int64_t[][6]){{2, 3, 4}, {4, 2, 5}}, 7);
    check("ij,kj", "ij,kj->ik", LT_F32, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {5, 4}}, 8);
    check("ba,ca->bc", NULL, LT_I64, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {5, 4}}, 9);
    check("ij,jk->ik", NULL, LT_I32, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {4, 2}}, 10);
    check("ij,jk->ki", NULL, LT_F16, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {4, 2}}, 11);
}

static void einsum_single_and_many(void **state)
{
    (void)state;
    check("ij->ji", NULL, LT_F64, 1, (int[]){2}, (const int64_t[][6]){{3, 4}}, 20);
    check("ij->i", NULL, LT_F64, 1, (int[]){2}, (const int64_t[][6]){{3, 4}}, 21);
    check("ii->i", NULL, LT_F32, 1, (int[]){2}, (const int64_t[][6]){{4, 4}}, 22);
    check("ii", "ii->", LT_F32, 1, (int[]){2}, (const int64_t[][6]){{4, 4}}, 23);
    check("iji->j", NULL, LT_F32, 1, (int[]){3}, (const int64_t[][6]){{3, 2, 3}}, 24);
    check("ijk", "ijk->ijk", LT_F32, 1, (int[]){3}, (const int64_t[][6]){{2, 3, 2}}, 25);
    check("kji", "kji->ijk", LT_F32, 1, (int[]){3}, (const int64_t[][6]){{2, 3, 4}}, 26);
    check("ij,jk,kl->il", NULL, LT_F32, 3, (int[]){2, 2, 2}, (const int64_t[][6]){{2, 3}, {3, 4}, {4, 5}}, 27);
    check("ab,bc,ad->cd", NULL, LT_F64, 3, (int[]){2, 2, 2}, (const int64_t[][6]){{2, 3}, {3, 4}, {2, 5}}, 28);
    check("aab,bc->ac", NULL, LT_F32, 2, (int[]){3, 2}, (const int64_t[][6]){{3, 3, 4}, {4, 2}}, 29);
    check("ab,ab,ab->a", NULL, LT_F32, 3, (int[]){2, 2, 2}, (const int64_t[][6]){{3, 4}, {3, 4}, {3, 4}}, 30);
    check("Ab,bA->A", NULL, LT_F32, 2, (int[]){2, 2}, (const int64_t[][6]){{3, 4}, {4, 3}}, 31);
}

static void einsum_ellipsis(void **state)
{
    (void)state;
    /* ...ii->...i on [3,5,5]: batched diagonal */
    lt_value *x = tu_rand(LT_F64, 3, (int64_t[]){3, 5, 5}, -1, 1, 40);
    lt_value *y = run_einsum("...ii ->...i", 1, &x, LT_OK);
    double want[15];
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 5; i++)
            want[b * 5 + i] = tu_get(x, b * 25 + i * 5 + i);
    assert_int_equal(y->t.rank, 2);
    tu_assert_close(y, want, 15, 0, 0, 40);
    lt_value_free(y);
    lt_value_free(x);

    /* broadcasting batch: [2,1,3,4] x [5,4,2] -> [2,5,3,2] */
    lt_value *in[2] = {tu_rand(LT_F32, 4, (int64_t[]){2, 1, 3, 4}, -1, 1, 41),
                       tu_rand(LT_F32, 3, (int64_t[]){5, 4, 2}, -1, 1, 42)};
    y = run_einsum("...ij,...jk", 2, in, LT_OK);
    double w2[60];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 5; b++)
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 2; k++) {
                    double s = 0;
                    for (int j = 0; j < 4; j++)
                        s += tu_get(in[0], (a * 3 + i) * 4 + j) * tu_get(in[1], (b * 4 + j) * 2 + k);
                    w2[((a * 5 + b) * 3 + i) * 2 + k] = s;
                }
    assert_int_equal(y->t.rank, 4);
    assert_int_equal(y->t.dims[1], 5);
    tu_assert_close(y, w2, 60, 1e-5, 1e-5, 41);
    lt_value_free(y);

    /* implicit output puts the ellipsis first: "i...->..." sums i */
    y = run_einsum("ij...->...", 1, in, LT_OK);
    double w3[12] = {0};
    for (int a = 0; a < 2; a++)
        for (int r = 0; r < 12; r++)
            w3[r] += tu_get(in[0], a * 12 + r);
    tu_assert_close(y, w3, 12, 1e-5, 1e-5, 43);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

static void einsum_errors(void **state)
{
    (void)state;
    lt_value *in[2] = {tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1),
                       tu_rand(LT_F32, 2, (int64_t[]){5, 6}, -1, 1, 2)};
    assert_null(run_einsum("ij,jk->ik", 2, in, LT_ERR_INVALID));
    assert_null(run_einsum("ij,kl->iz", 2, in, LT_ERR_INVALID));
    assert_null(run_einsum("ijk,jk->i", 2, in, LT_ERR_INVALID));
    assert_null(run_einsum("i?,jk->i", 2, in, LT_ERR_INVALID));
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(einsum_two_operands),
        cmocka_unit_test(einsum_single_and_many),
        cmocka_unit_test(einsum_ellipsis),
        cmocka_unit_test(einsum_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
