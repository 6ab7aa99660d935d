/* ArgMax/ArgMin, TopK and CumSum against straightforward loops, with ties,
 * select_last_index, k as attribute and as input, exclusive/reverse. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        p *= d[i];
    return p;
}

/* ---- ArgMax / ArgMin ---- */
static void check_arg(bool mx, lt_dtype dt, int rank, const int64_t *dims, int64_t axis, int keep, int last,
                      double lo, double hi, uint64_t seed)
{
    /* integer-valued data on a small range makes ties common */
    lt_value *x = tu_rand(dt, rank, dims, lo, hi, seed);
    if (lt_dtype_is_float(dt))
        for (int64_t i = 0; i < x->t.numel; i++)
            lt_tensor_set_f64(&x->t, i, floor(tu_get(x, i)));
    int a = (int)(axis < 0 ? axis + rank : axis);
    int64_t outer = prod(dims, 0, a), r = dims[a], inner = prod(dims, a + 1, rank);
    double *want = malloc(sizeof(double) * (size_t)(outer * inner));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t best = 0;
            for (int64_t q = 1; q < r; q++) {
                double v = tu_get(x, (o * r + q) * inner + i), b = tu_get(x, (o * r + best) * inner + i);
                if (mx ? (v > b || (last > 0 && v == b)) : (v < b || (last > 0 && v == b)))
                    best = q;
            }
            want[o * inner + i] = (double)best;
        }
    tu_graph g = tu_single(mx ? LT_OP_ARG_MAX : LT_OP_ARG_MIN, 13, 1, 1);
    tu_attr_int(&g, "axis", axis);
    if (keep >= 0)
        tu_attr_int(&g, "keepdims", keep);
    if (last >= 0)
        tu_attr_int(&g, "select_last_index", last);
    lt_value *in[1] = {x}, *out[1];
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(out[0]->t.dtype, LT_I64);
    assert_int_equal(out[0]->t.rank, keep == 0 ? rank - 1 : rank);
    tu_assert_close(out[0], want, outer * inner, 0, 0, seed);
    lt_value_free(out[0]);
    tu_free(&g);
    free(want);
    lt_value_free(x);
}

static void argmax_argmin(void **state)
{
    (void)state;
    int64_t d3[3] = {4, 5, 3}, big[2] = {300, 257};
    for (int mx = 0; mx < 2; mx++)
        for (int last = -1; last <= 1; last++) {
            uint64_t seed = 10 + mx * 5 + last;
            check_arg(mx, LT_F32, 3, d3, 0, -1, last, 0, 3, seed);
            check_arg(mx, LT_F32, 3, d3, 1, 0, last, 0, 3, seed + 100);
            check_arg(mx, LT_F32, 3, d3, -1, 1, last, 0, 3, seed + 200);
            check_arg(mx, LT_I32, 3, d3, 1, 0, last, -3, 3, seed + 300);
            check_arg(mx, LT_F16, 3, d3, 2, 1, last, -3, 3, seed + 400);
            check_arg(mx, LT_F64, 3, d3, -2, 1, last, -3, 3, seed + 500);
            check_arg(mx, LT_U8, 3, d3, 0, 1, last, 0, 4, seed + 600);
        }
    check_arg(true, LT_F32, 2, big, 1, 0, 0, -1000, 1000, 700);
    check_arg(false, LT_F32, 2, big, 0, 0, 1, -1000, 1000, 701);
}

/* ---- TopK ---- */
/* Reference: stable selection, ties to the lower index. */
static void ref_topk(const lt_value *x, int rank, int a, int64_t k, bool largest, double *vals, double *idx)
{
    const int64_t *dims = x->t.dims;
    int64_t outer = prod(dims, 0, a), r = dims[a], inner = prod(dims, a + 1, rank);
    bool *used = malloc((size_t)r);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            memset(used, 0, (size_t)r);
            for (int64_t j = 0; j < k; j++) {
                int64_t best = -1;
                for (int64_t q = 0; q < r; q++) {
                    if (used[q])
                        continue;
                    double v = tu_get(x, (o * r + q) * inner + i);
                    double b = best < 0 ? 0 : tu_get(x, (o * r + best) * inner + i);
                    if (best < 0 || (largest ? v > b : v < b))
                        best = q;
                }
                used[best] = true;
                vals[(o * k + j) * inner + i] = tu_get(x, (o * r + best) * inner + i);
                idx[(o * k + j) * inner + i] = (double)best;
            }
        }
    free(used);
}

static void check_topk(lt_dtype dt, int rank, const int64_t *dims, int64_t axis, int64_t k, int largest,
                       int opset, uint64_t seed)
{
    lt_value *x = tu_rand(dt, rank, dims, -4, 4, seed);
    for (int64_t i = 0; i < x->t.numel; i++) /* ties */
        lt_tensor_set_f64(&x->t, i, floor(tu_get(x, i) * 2) / 2);
    int a = (int)(axis < 0 ? axis + rank : axis);
    int64_t n = x->t.numel / dims[a] * k;
    double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1)), *idx = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ref_topk(x, rank, a, k, largest != 0, vals, idx);
    bool k_input = opset >= 10;
    tu_graph g = tu_single(LT_OP_TOP_K, opset, k_input ? 2 : 1, 2);
    lt_value *in[2] = {x, NULL}, *out[2];
    if (k_input) {
        int64_t one = 1;
        double kv = (double)k;
        in[1] = tu_from(LT_I64, 1, &one, &kv);
    } else {
        tu_attr_int(&g, "k", k);
    }
    tu_attr_int(&g, "axis", axis);
    if (largest >= 0)
        tu_attr_int(&g, "largest", largest);
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(out[0]->t.dtype, dt);
    assert_int_equal(out[1]->t.dtype, LT_I64);
    assert_int_equal(out[0]->t.dims[a], k);
    tu_assert_close(out[0], vals, n, 0, 0, seed);
    tu_assert_close(out[1], idx, n, 0, 0, seed);
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    if (in[1])
        lt_value_free(in[1]);
    tu_free(&g);
    free(vals);
    free(idx);
    lt_value_free(x);
}

static void top_k(void **state)
{
    (void)state;
    int64_t d3[3] = {3, 9, 4}, big[2] = {64, 1000};
    check_topk(LT_F32, 3, d3, 1, 3, -1, 11, 1);
    check_topk(LT_F32, 3, d3, 1, 3, 0, 11, 2);
    check_topk(LT_F32, 3, d3, -1, 4, 1, 11, 3);
    check_topk(LT_F32, 3, d3, 0, 2, 0, 10, 4);
    check_topk(LT_F32, 3, d3, -1, 2, -1, 1, 5); /* k as attribute */
    check_topk(LT_F32, 3, d3, 1, 9, 1, 11, 6);  /* k = the whole axis */
    check_topk(LT_F32, 3, d3, 1, 0, 1, 11, 7);  /* k = 0 */
    check_topk(LT_F64, 3, d3, 1, 5, 0, 11, 8);
    check_topk(LT_F16, 3, d3, 1, 5, 1, 11, 9);
    check_topk(LT_I32, 3, d3, 1, 5, 1, 11, 10);
    check_topk(LT_I64, 3, d3, 2, 3, 0, 11, 11);
    check_topk(LT_F32, 2, big, 1, 7, 1, 11, 12); /* parallel rows, heap path */
    check_topk(LT_F32, 2, big, 0, 50, 0, 11, 13);
}

static void top_k_errors(void **state)
{
    (void)state;
    int64_t d[2] = {2, 3}, one = 1;
    double kv = 4;
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 1), *kt = tu_from(LT_I64, 1, &one, &kv), *out[2];
    tu_graph g = tu_single(LT_OP_TOP_K, 11, 2, 2);
    lt_value *in[2] = {x, kt};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "K = 4"));
    tu_free(&g);
    lt_value_free(kt);
    lt_value_free(x);
}

/* ---- CumSum ---- */
static void check_cumsum(lt_dtype dt, int rank, const int64_t *dims, int64_t axis, int excl, int rev,
                         lt_dtype axis_dt, uint64_t seed)
{
    lt_value *x = tu_rand(dt, rank, dims, lt_dtype_is_signed(dt) ? -10 : 0, 10, seed);
    int a = (int)(axis < 0 ? axis + rank : axis);
    int64_t outer = prod(dims, 0, a), r = dims[a], inner = prod(dims, a + 1, rank);
    double *want = malloc(sizeof(double) * (size_t)x->t.numel);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double s = 0;
            for (int64_t t = 0; t < r; t++) {
                int64_t q = rev > 0 ? r - 1 - t : t, at = (o * r + q) * inner + i;
                double v = tu_get(x, at);
                if (excl <= 0)
                    s += v;
                want[at] = s;
                if (excl > 0)
                    s += v;
            }
        }
    tu_graph g = tu_single(LT_OP_CUM_SUM, 14, 2, 1);
    if (excl >= 0)
        tu_attr_int(&g, "exclusive", excl);
    if (rev >= 0)
        tu_attr_int(&g, "reverse", rev);
    double av = (double)axis;
    lt_value *at = tu_from(axis_dt, 0, NULL, &av), *in[2] = {x, at}, *out[1];
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(out[0]->t.dtype, dt);
    double tol = dt == LT_F16 ? 2e-3 : 1e-6;
    tu_assert_close(out[0], want, x->t.numel, lt_dtype_is_float(dt) ? tol : 0, lt_dtype_is_float(dt) ? tol : 0,
                    seed);
    lt_value_free(out[0]);
    tu_free(&g);
    free(want);
    lt_value_free(at);
    lt_value_free(x);
}

static void cumsum(void **state)
{
    (void)state;
    int64_t d3[3] = {3, 4, 5}, wide[2] = {3, 600}, long_[2] = {40000, 2};
    for (int excl = -1; excl <= 1; excl++)
        for (int rev = -1; rev <= 1; rev++)
            for (int axis = -3; axis < 3; axis++)
                check_cumsum(LT_F32, 3, d3, axis, excl, rev, LT_I64, 40 + (excl + 1) * 9 + (rev + 1) * 3 + axis);
    check_cumsum(LT_F64, 3, d3, 1, 1, 1, LT_I32, 80);
    check_cumsum(LT_I32, 3, d3, 2, 0, 1, LT_I64, 81);
    check_cumsum(LT_I64, 3, d3, 0, 1, 0, LT_I32, 82);
    check_cumsum(LT_U32, 3, d3, 1, 0, 0, LT_I64, 83);
    check_cumsum(LT_F16, 2, wide, 1, 0, 0, LT_I64, 84);
    check_cumsum(LT_F32, 2, wide, 0, 0, 1, LT_I64, 85);
    check_cumsum(LT_F32, 2, long_, 0, 1, 0, LT_I64, 86);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(argmax_argmin), cmocka_unit_test(top_k), cmocka_unit_test(top_k_errors),
        cmocka_unit_test(cumsum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
