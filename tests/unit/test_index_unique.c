/* Unique: the spec's four examples, random inputs against a brute-force
 * reference (sorted and first-occurrence order), strings, one output only. */
#include "testutil.h"
#include <string.h>

/* Runs Unique with 4 outputs; out[] receives them. */
static void run_unique(lt_value *x, int sorted, const int64_t *axis, lt_value **out)
{
    tu_graph g = tu_single(LT_OP_UNIQUE, 11, 1, 4);
    if (sorted >= 0)
        tu_attr_int(&g, "sorted", sorted);
    if (axis)
        tu_attr_int(&g, "axis", *axis);
    lt_value *in[1] = {x};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("run failed: %s", err.msg);
    tu_free(&g);
}

static void check4(lt_value **out, const double *y, int ny, const double *idx, int nu, const double *inv, int ninv,
                   const double *cnt)
{
    tu_assert_close(out[0], y, ny, 0, 0, 0);
    tu_assert_close(out[1], idx, nu, 0, 0, 0);
    tu_assert_close(out[2], inv, ninv, 0, 0, 0);
    tu_assert_close(out[3], cnt, nu, 0, 0, 0);
    for (int i = 1; i < 4; i++)
        assert_int_equal(out[i]->t.dtype, LT_I64);
    for (int i = 0; i < 4; i++)
        lt_value_free(out[i]);
}

static void spec_examples(void **state)
{
    (void)state;
    lt_value *out[4];
    /* example 1: not sorted */
    lt_value *x = tu_from(LT_F32, 1, (int64_t[]){6}, (double[]){2, 1, 1, 3, 4, 3});
    run_unique(x, 0, NULL, out);
    check4(out, (double[]){2, 1, 3, 4}, 4, (double[]){0, 1, 3, 4}, 4, (double[]){0, 1, 1, 2, 3, 2}, 6,
           (double[]){1, 2, 2, 1});
    lt_value_free(x);
    /* example 2: sorted, flattened */
    x = tu_from(LT_F32, 2, (int64_t[]){2, 2}, (double[]){1, 3, 2, 3});
    run_unique(x, -1, NULL, out);
    check4(out, (double[]){1, 2, 3}, 3, (double[]){0, 2, 1}, 3, (double[]){0, 2, 1, 2}, 4, (double[]){1, 1, 2});
    lt_value_free(x);
    /* example 3: axis 0 */
    x = tu_from(LT_F32, 2, (int64_t[]){3, 3}, (double[]){1, 0, 0, 1, 0, 0, 2, 3, 4});
    run_unique(x, 1, (int64_t[]){0}, out);
    assert_int_equal(out[0]->t.dims[0], 2);
    assert_int_equal(out[0]->t.dims[1], 3);
    check4(out, (double[]){1, 0, 0, 2, 3, 4}, 6, (double[]){0, 2}, 2, (double[]){0, 0, 1}, 3, (double[]){2, 1});
    lt_value_free(x);
    /* example 4: axis 1 of a 3-D tensor (given as -2) */
    x = tu_from(LT_I64, 3, (int64_t[]){2, 4, 2}, (double[]){1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1});
    run_unique(x, 1, (int64_t[]){-2}, out);
    assert_int_equal(out[0]->t.dims[1], 3);
    check4(out, (double[]){0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}, 12, (double[]){1, 0, 2}, 3,
           (double[]){1, 0, 2, 0}, 4, (double[]){2, 1, 1});
    lt_value_free(x);
}

static void random_vs_brute_force(void **state)
{
    (void)state;
    for (int sorted = 0; sorted < 2; sorted++) {
        uint64_t seed = 70 + sorted;
        lt_value *x = tu_rand(LT_I32, 1, (int64_t[]){50}, -3, 4, seed), *out[4];
        run_unique(x, sorted, NULL, out);
        /* distinct values, in first-occurrence order */
        double y[50], idx[50], inv[50], cnt[50];
        int u = 0;
        for (int j = 0; j < 50; j++) {
            int q = 0;
            while (q < u && y[q] != tu_get(x, j))
                q++;
            if (q == u) {
                y[u] = tu_get(x, j);
                idx[u] = j;
                cnt[u++] = 0;
            }
            cnt[q]++;
        }
        if (sorted) /* insertion sort of the groups by value */
            for (int a = 1; a < u; a++)
                for (int b = a; b > 0 && y[b - 1] > y[b]; b--) {
                    double t;
                    t = y[b], y[b] = y[b - 1], y[b - 1] = t;
                    t = idx[b], idx[b] = idx[b - 1], idx[b - 1] = t;
                    t = cnt[b], cnt[b] = cnt[b - 1], cnt[b - 1] = t;
                }
        for (int j = 0; j < 50; j++)
            for (int q = 0; q < u; q++)
                if (y[q] == tu_get(x, j))
                    inv[j] = q;
        assert_true(u > 3);
        check4(out, y, u, idx, u, inv, 50, cnt);
        lt_value_free(x);
    }
}

static void strings_and_one_output(void **state)
{
    (void)state;
    static char *words[5] = {"pear", "apple", "pear", "fig", "apple"};
    lt_value *x = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&x->t, LT_STRING, 1, (int64_t[]){5}, &err), LT_OK);
    memcpy(x->t.data, words, sizeof words);
    tu_graph g = tu_single(LT_OP_UNIQUE, 11, 1, 1);
    lt_value *in[1] = {x}, *out[1] = {0};
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_int_equal(out[0]->t.numel, 3);
    char **s = out[0]->t.data;
    assert_string_equal(s[0], "apple");
    assert_string_equal(s[1], "fig");
    assert_string_equal(s[2], "pear");
    lt_value_free(out[0]);
    lt_value_free(x);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spec_examples),
        cmocka_unit_test(random_vs_brute_force),
        cmocka_unit_test(strings_and_one_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
