/* Reduce* kernels against straightforward double loops: every op, axes as
 * attribute and as input, keepdims, scattered axes, noop_with_empty_axes,
 * empty reductions, integer exactness, float16, and shapes big enough to
 * take the parallel and split-reduction paths. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SUM, MEAN, MAX, MIN, PROD, L1, L2, LOGSUM, LSE, SUMSQ, NKIND };
static const lt_op ops[NKIND] = {LT_OP_REDUCE_SUM,  LT_OP_REDUCE_MEAN, LT_OP_REDUCE_MAX,     LT_OP_REDUCE_MIN,
                                 LT_OP_REDUCE_PROD, LT_OP_REDUCE_L1,   LT_OP_REDUCE_L2,      LT_OP_REDUCE_LOG_SUM,
                                 LT_OP_REDUCE_LOG_SUM_EXP, LT_OP_REDUCE_SUM_SQUARE};

/* The reference: out[j] over all input elements mapping to output j. */
static void ref_reduce(int kind, const lt_tensor *x, const bool *mask, double *out, int64_t nout)
{
    int64_t ostride[LT_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        ostride[d] = mask[d] ? 0 : s;
        s *= mask[d] ? 1 : x->dims[d];
    }
    double *mx = calloc(nout ? nout : 1, sizeof *mx);
    int64_t *cnt = calloc(nout ? nout : 1, sizeof *cnt);
    for (int64_t j = 0; j < nout; j++) {
        mx[j] = -INFINITY;
        out[j] = kind == PROD ? 1 : kind == MAX ? -INFINITY : kind == MIN ? INFINITY : 0;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t rem = i, j = 0;
            for (int d = x->rank - 1; d >= 0; d--) {
                j += (rem % x->dims[d]) * ostride[d];
                rem /= x->dims[d];
            }
            double v = lt_tensor_get_f64(x, i);
            if (pass == 0) {
                mx[j] = fmax(mx[j], v);
                cnt[j]++;
                continue;
            }
            switch (kind) {
            case SUM: case MEAN: case LOGSUM: out[j] += v; break;
            case MAX: out[j] = fmax(out[j], v); break;
            case MIN: out[j] = fmin(out[j], v); break;
            case PROD: out[j] *= v; break;
            case L1: out[j] += fabs(v); break;
            case L2: case SUMSQ: out[j] += v * v; break;
            case LSE: out[j] += exp(v - mx[j]); break;
            }
        }
    for (int64_t j = 0; j < nout; j++) {
        if (kind == MEAN)
            out[j] /= (double)cnt[j];
        else if (kind == L2)
            out[j] = sqrt(out[j]);
        else if (kind == LOGSUM)
            out[j] = log(out[j]);
        else if (kind == LSE)
            out[j] = cnt[j] ? mx[j] + log(out[j]) : -INFINITY;
    }
    free(mx);
    free(cnt);
}

/* Runs one Reduce node. axes NULL: none given; as_input: pass them as input 1
 * (else as the attribute); keepdims < 0: attribute absent. */
static lt_status run_reduce(lt_op op, int opset, lt_value *x, int na, const int64_t *axes, bool as_input,
                            int keepdims, int noop, lt_value **out, lt_err *err)
{
    tu_graph g = tu_single(op, opset, axes && as_input ? 2 : 1, 1);
    lt_value *in[2] = {x, NULL};
    if (axes && as_input) {
        double av[LT_MAX_RANK];
        for (int i = 0; i < na; i++)
            av[i] = (double)axes[i];
        int64_t d = na;
        in[1] = tu_from(LT_I64, 1, &d, av);
    } else {
        if (axes)
            tu_attr_ints(&g, "axes", na, axes);
    }
    if (keepdims >= 0)
        tu_attr_int(&g, "keepdims", keepdims);
    if (noop >= 0)
        tu_attr_int(&g, "noop_with_empty_axes", noop);
    lt_status s = tu_run(&g, in, out, err);
    if (in[1])
        lt_value_free(in[1]);
    tu_free(&g);
    return s;
}

/* Checks one configuration of every op against the reference. */
static void check_all_kinds(int rank, const int64_t *dims, int na, const int64_t *axes, int keepdims, int opset,
                            uint64_t seed)
{
    for (int kind = 0; kind < NKIND; kind++) {
        bool positive = kind == LOGSUM;
        lt_value *x = tu_rand(LT_F32, rank, dims, positive ? 0.1 : -2, 2, seed + kind);
        bool mask[LT_MAX_RANK] = {false};
        for (int d = 0; d < rank; d++)
            mask[d] = na == 0;
        for (int i = 0; i < na; i++)
            mask[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
        int64_t nout = 1, odims[LT_MAX_RANK];
        int orank = 0;
        for (int d = 0; d < rank; d++) {
            if (!mask[d])
                nout *= dims[d];
            if (!mask[d] || keepdims != 0)
                odims[orank++] = mask[d] ? 1 : dims[d];
        }
        double *want = malloc(sizeof(double) * (size_t)(nout ? nout : 1));
        ref_reduce(kind, &x->t, mask, want, nout);
        bool as_input = opset >= 18 || (kind == SUM && opset >= 13);
        lt_value *y = NULL;
        lt_err err;
        lt_status s = run_reduce(ops[kind], opset, x, na, na ? axes : NULL, as_input, keepdims, -1, &y, &err);
        if (s != LT_OK)
            fail_msg("%s opset %d: %s", lt_op_names[ops[kind]], opset, err.msg);
        assert_int_equal(y->t.dtype, LT_F32);
        assert_int_equal(y->t.rank, orank);
        for (int d = 0; d < orank; d++)
            assert_int_equal(y->t.dims[d], odims[d]);
        tu_assert_close(y, want, nout, 2e-5, 1e-5, seed + kind);
        free(want);
        lt_value_free(y);
        lt_value_free(x);
    }
}

static void kinds_contiguous(void **state)
{
    (void)state;
    int64_t d3[3] = {3, 4, 5}, a1[1] = {1}, am1[1] = {-1}, a01[2] = {0, 1};
    for (int opset = 11; opset <= 18; opset += 7) {
        check_all_kinds(3, d3, 1, a1, 1, opset, 100);
        check_all_kinds(3, d3, 1, am1, 0, opset, 200);
        check_all_kinds(3, d3, 2, a01, 0, opset, 300);
        check_all_kinds(3, d3, 0, NULL, 1, opset, 400); /* all axes */
        check_all_kinds(3, d3, 0, NULL, 0, opset, 450);
    }
}

static void kinds_scattered(void **state)
{
    (void)state;
    int64_t d3[3] = {3, 4, 5}, d4[4] = {2, 3, 4, 5}, a02[2] = {0, 2}, a13[2] = {1, 3}, a023[3] = {0, 2, 3};
    check_all_kinds(3, d3, 2, a02, 1, 13, 500);
    check_all_kinds(4, d4, 2, a13, 0, 18, 600);
    check_all_kinds(4, d4, 3, a023, 1, 18, 700);
    /* size-1 axes between reduced ones merge away */
    int64_t d5[5] = {3, 1, 4, 1, 2}, a024[3] = {0, 2, 4};
    check_all_kinds(5, d5, 3, a024, 0, 13, 800);
}

static void large_shapes(void **state)
{
    (void)state;
    /* one long row (split reduction), a long column (split with inner > 1),
     * and many rows (parallel over outputs) */
    int64_t row[2] = {1, 300001}, col[2] = {150001, 3}, many[2] = {64, 2000};
    int64_t a1[1] = {1}, a0[1] = {0};
    static const int kinds[] = {SUM, MAX, MIN, L2, LSE, MEAN};
    struct {
        const int64_t *dims;
        const int64_t *axes;
    } cfg[3] = {{row, a1}, {col, a0}, {many, a1}};
    for (int c = 0; c < 3; c++)
        for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
            int kind = kinds[q];
            uint64_t seed = 900 + c * 10 + q;
            lt_value *x = tu_rand(LT_F32, 2, cfg[c].dims, -1, 1, seed);
            bool mask[2] = {cfg[c].axes[0] == 0, cfg[c].axes[0] == 1};
            int64_t nout = x->t.numel / cfg[c].dims[cfg[c].axes[0]];
            double *want = malloc(sizeof(double) * (size_t)nout);
            ref_reduce(kind, &x->t, mask, want, nout);
            lt_value *y;
            lt_err err;
            assert_int_equal(run_reduce(ops[kind], 18, x, 1, cfg[c].axes, true, 1, -1, &y, &err), LT_OK);
            tu_assert_close(y, want, nout, 1e-5, 1e-6, seed);
            free(want);
            lt_value_free(y);
            lt_value_free(x);
        }
}

/* float32 sums and means over every axis but a run of kept ones, reduced
 * axes on both sides (a bias's gradient): blocks of kept indices summed
 * down their columns, at batch >= 16 with odd sizes, many indices a block,
 * blocks ending mid-way, enough work for threads, and an index too long
 * for a block */
static void sums_around_kept(void **state)
{
    (void)state;
    static const struct {
        int rank, na;
        int64_t dims[5], axes[3];
        int keepdims;
    } cfg[] = {
        {4, 3, {16, 67, 7, 7}, {0, 2, 3}, 0},   {4, 3, {17, 130, 3, 3}, {0, 2, 3}, 1},
        {4, 3, {32, 64, 16, 16}, {0, 2, 3}, 0}, {4, 3, {16, 5, 47, 49}, {0, 2, 3}, 0},
        {5, 3, {16, 6, 4, 9, 5}, {0, 3, 4}, 1}, {3, 2, {19, 16, 2}, {0, 2}, 0},
    };
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++)
        for (int kind = SUM; kind <= MEAN; kind++) {
            uint64_t seed = 1300 + 10 * c + (uint64_t)kind;
            lt_value *x = tu_rand(LT_F32, cfg[c].rank, cfg[c].dims, -2, 2, seed);
            bool mask[LT_MAX_RANK] = {false};
            int64_t nout = x->t.numel;
            for (int i = 0; i < cfg[c].na; i++) {
                mask[cfg[c].axes[i]] = true;
                nout /= cfg[c].dims[cfg[c].axes[i]];
            }
            double *want = malloc(sizeof(double) * (size_t)nout);
            ref_reduce(kind, &x->t, mask, want, nout);
            lt_value *y;
            lt_err err;
            if (run_reduce(ops[kind], 18, x, cfg[c].na, cfg[c].axes, true, cfg[c].keepdims, -1, &y, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_int_equal(y->t.numel, nout);
            tu_assert_close(y, want, nout, 1e-6, 1e-6, seed);
            free(want);
            lt_value_free(y);
            lt_value_free(x);
        }
}

static void noop_and_empty_axes(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4};
    lt_value *x = tu_rand(LT_F32, 2, d, -2, 2, 11), *y;
    lt_err err;
    int64_t none[1];
    /* empty axes input with noop: values pass through (a singleton reduction) */
    assert_int_equal(run_reduce(LT_OP_REDUCE_SUM, 13, x, 0, none, true, 1, 1, &y, &err), LT_OK);
    assert_int_equal(y->t.rank, 2);
    double want[12];
    for (int i = 0; i < 12; i++)
        want[i] = tu_get(x, i);
    tu_assert_close(y, want, 12, 0, 0, 11);
    lt_value_free(y);
    /* ReduceSumSquare-18 with noop squares each element */
    assert_int_equal(run_reduce(LT_OP_REDUCE_SUM_SQUARE, 18, x, 0, none, true, 1, 1, &y, &err), LT_OK);
    for (int i = 0; i < 12; i++)
        want[i] = tu_get(x, i) * tu_get(x, i);
    tu_assert_close(y, want, 12, 1e-6, 0, 11);
    lt_value_free(y);
    /* empty axes without noop: everything */
    assert_int_equal(run_reduce(LT_OP_REDUCE_SUM, 13, x, 0, none, true, 0, 0, &y, &err), LT_OK);
    assert_int_equal(y->t.rank, 0);
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += tu_get(x, i);
    tu_assert_close(y, &s, 1, 1e-6, 1e-6, 11);
    lt_value_free(y);
    /* axes input omitted altogether, noop set: identity too */
    assert_int_equal(run_reduce(LT_OP_REDUCE_MAX, 18, x, 0, NULL, true, 0, 1, &y, &err), LT_OK);
    assert_int_equal(y->t.rank, 2);
    lt_value_free(y);
    lt_value_free(x);
}

static void empty_reductions(void **state)
{
    (void)state;
    int64_t d[3] = {2, 0, 3}, a1[1] = {1};
    lt_value *x = tu_rand(LT_F32, 3, d, 0, 1, 1), *y;
    lt_err err;
    const double inf = INFINITY;
    const double want[NKIND] = {[SUM] = 0, [MEAN] = NAN, [MAX] = -inf, [MIN] = inf, [PROD] = 1,
                                [L1] = 0,  [L2] = 0,     [LOGSUM] = -inf, [LSE] = -inf, [SUMSQ] = 0};
    for (int kind = 0; kind < NKIND; kind++) {
        assert_int_equal(run_reduce(ops[kind], 18, x, 1, a1, true, 0, -1, &y, &err), LT_OK);
        assert_int_equal(y->t.numel, 6);
        for (int i = 0; i < 6; i++) {
            double v = tu_get(y, i);
            if (isnan(want[kind]))
                assert_true(isnan(v));
            else
                assert_true(v == want[kind]);
        }
        lt_value_free(y);
    }
    lt_value_free(x);
    /* integers: the extreme of the type */
    lt_value *xi = tu_rand(LT_I32, 3, d, 0, 1, 1);
    assert_int_equal(run_reduce(LT_OP_REDUCE_MAX, 13, xi, 1, a1, false, 0, -1, &y, &err), LT_OK);
    assert_int_equal(y->t.dtype, LT_I32);
    assert_int_equal(((int32_t *)y->t.data)[0], INT32_MIN);
    lt_value_free(y);
    assert_int_equal(run_reduce(LT_OP_REDUCE_MIN, 13, xi, 1, a1, false, 0, -1, &y, &err), LT_OK);
    assert_int_equal(((int32_t *)y->t.data)[5], INT32_MAX);
    lt_value_free(y);
    lt_value_free(xi);
}

static void integers_exact(void **state)
{
    (void)state;
    lt_err err;
    lt_value *y;
    /* int64 sums beyond 2^53 stay exact */
    int64_t d2[2] = {2, 3}, a1[1] = {1};
    lt_value *x = lt_value_new_tensor();
    assert_int_equal(lt_tensor_alloc(&x->t, LT_I64, 2, d2, &err), LT_OK);
    int64_t *p = x->t.data;
    const int64_t big = (int64_t)1 << 60;
    int64_t vals[6] = {big, 1, 3, -7, 5, -big};
    memcpy(p, vals, sizeof vals);
    assert_int_equal(run_reduce(LT_OP_REDUCE_SUM, 13, x, 1, a1, true, 0, -1, &y, &err), LT_OK);
    assert_int_equal(((int64_t *)y->t.data)[0], big + 4);
    assert_int_equal(((int64_t *)y->t.data)[1], -big - 2);
    lt_value_free(y);
    assert_int_equal(run_reduce(LT_OP_REDUCE_MAX, 11, x, 1, a1, false, 1, -1, &y, &err), LT_OK);
    assert_int_equal(((int64_t *)y->t.data)[0], big);
    assert_int_equal(((int64_t *)y->t.data)[1], 5);
    lt_value_free(y);
    /* mean truncates like a cast of numpy's float mean */
    assert_int_equal(run_reduce(LT_OP_REDUCE_MEAN, 11, x, 1, a1, false, 1, -1, &y, &err), LT_OK);
    assert_int_equal(((int64_t *)y->t.data)[0], (big + 4) / 3);
    assert_int_equal(((int64_t *)y->t.data)[1], (-big - 2) / 3);
    lt_value_free(y);
    lt_value_free(x);
    /* uint64 above 2^63 compares as unsigned */
    int64_t d1[1] = {3};
    x = lt_value_new_tensor();
    assert_int_equal(lt_tensor_alloc(&x->t, LT_U64, 1, d1, &err), LT_OK);
    uint64_t *u = x->t.data;
    u[0] = 5;
    u[1] = UINT64_MAX - 1;
    u[2] = 7;
    assert_int_equal(run_reduce(LT_OP_REDUCE_MAX, 18, x, 0, NULL, true, 0, -1, &y, &err), LT_OK);
    assert_true(((uint64_t *)y->t.data)[0] == UINT64_MAX - 1);
    lt_value_free(y);
    assert_int_equal(run_reduce(LT_OP_REDUCE_MIN, 18, x, 0, NULL, true, 0, -1, &y, &err), LT_OK);
    assert_true(((uint64_t *)y->t.data)[0] == 5);
    lt_value_free(y);
    lt_value_free(x);
    /* int32 products, L1 and sum of squares against the reference */
    int64_t d3[3] = {4, 3, 2}, a02[2] = {0, 2};
    x = tu_rand(LT_I32, 3, d3, -5, 6, 77);
    bool mask[3] = {true, false, true};
    static const int kinds[] = {SUM, PROD, L1, SUMSQ, MIN, L2};
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
        double want[3];
        ref_reduce(kinds[q], &x->t, mask, want, 3);
        if (kinds[q] == L2)
            for (int i = 0; i < 3; i++)
                want[i] = trunc(want[i]);
        assert_int_equal(run_reduce(ops[kinds[q]], 18, x, 2, a02, true, 0, -1, &y, &err), LT_OK);
        assert_int_equal(y->t.dtype, LT_I32);
        tu_assert_close(y, want, 3, 0, 0, 77);
        lt_value_free(y);
    }
    lt_value_free(x);
}

static void float16_and_double(void **state)
{
    (void)state;
    int64_t d[3] = {5, 7, 3}, a[2] = {0, 2};
    bool mask[3] = {true, false, true};
    lt_err err;
    lt_value *y;
    lt_dtype types[2] = {LT_F16, LT_F64};
    for (int t = 0; t < 2; t++) {
        lt_value *x = tu_rand(types[t], 3, d, -1, 1, 31 + t);
        for (int kind = 0; kind < NKIND; kind++) {
            if (kind == LOGSUM || kind == PROD)
                continue;
            double want[7];
            ref_reduce(kind, &x->t, mask, want, 7);
            assert_int_equal(run_reduce(ops[kind], 13, x, 2, a, kind == SUM, 1, -1, &y, &err), LT_OK);
            assert_int_equal(y->t.dtype, types[t]);
            tu_assert_close(y, want, 7, types[t] == LT_F16 ? 2e-3 : 1e-12, types[t] == LT_F16 ? 1e-3 : 1e-12,
                            31 + t);
            lt_value_free(y);
        }
        lt_value_free(x);
    }
}

static void bad_axes(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4}, out_of_range[1] = {2}, twice[2] = {1, -1};
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 5), *y = NULL;
    lt_err err;
    assert_int_equal(run_reduce(LT_OP_REDUCE_SUM, 18, x, 1, out_of_range, true, 1, -1, &y, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(run_reduce(LT_OP_REDUCE_L2, 11, x, 2, twice, false, 1, -1, &y, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "twice"));
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_contiguous), cmocka_unit_test(kinds_scattered),
        cmocka_unit_test(large_shapes), cmocka_unit_test(sums_around_kept), cmocka_unit_test(noop_and_empty_axes),
        cmocka_unit_test(empty_reductions), cmocka_unit_test(integers_exact),
        cmocka_unit_test(float16_and_double), cmocka_unit_test(bad_axes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
