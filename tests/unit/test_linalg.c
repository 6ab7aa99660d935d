/* linalg kernels: MatMul, Gemm, Det against loops in double. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs a one-node graph with the given inputs (NULL = omitted) and returns
 * output 0 (and 1.. in outs when given). */
static lt_value *run1(tu_graph *g, int nin, lt_value **in)
{
    /* an omitted input still is a graph input: feed it a dummy */
    lt_value *dummy = tu_from(LT_F32, 0, NULL, (double[]){0}), *vals[8];
    for (int i = 0; i < nin; i++) {
        vals[i] = in[i] ? in[i] : dummy;
        if (!in[i])
            tu_omit_input(g, i);
    }
    lt_value *out[4] = {NULL};
    lt_err err;
    lt_status s = tu_run(g, vals, out, &err);
    lt_value_free(dummy);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

/* reference numpy matmul on double data (shapes as in numpy) */
static double *ref_matmul(const lt_value *a, const lt_value *b, int64_t *n_out)
{
    const lt_tensor *A = &a->t, *B = &b->t;
    int ra = A->rank, rb = B->rank;
    int64_t M = ra >= 2 ? A->dims[ra - 2] : 1, K = A->dims[ra - 1], N = rb >= 2 ? B->dims[rb - 1] : 1;
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, nb = ba > bb ? ba : bb;
    int64_t bd[8], nbat = 1;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - ba), ib = i - (nb - bb);
        int64_t x = ia >= 0 ? A->dims[ia] : 1, y = ib >= 0 ? B->dims[ib] : 1;
        bd[i] = x > y ? x : y;
        nbat *= bd[i];
    }
    double *o = calloc((size_t)(nbat * M * N), sizeof *o);
    for (int64_t bi = 0; bi < nbat; bi++) {
        /* batch index -> offsets in A and B */
        int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t x = rem % bd[d];
            rem /= bd[d];
            int ia = d - (nb - ba), ib = d - (nb - bb);
            if (ia >= 0) {
                oa += (A->dims[ia] == 1 ? 0 : x) * sa;
                sa *= A->dims[ia];
            }
            if (ib >= 0) {
                ob += (B->dims[ib] == 1 ? 0 : x) * sb;
                sb *= B->dims[ib];
            }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += tu_get(a, oa * M * K + i * K + k) * tu_get(b, ob * K * N + k * N + j);
                o[(bi * M + i) * N + j] = acc;
            }
    }
    *n_out = nbat * M * N;
    return o;
}

static void check_matmul(lt_dtype dt, int ra, const int64_t *da, int rb, const int64_t *db, uint64_t seed,
                         double tol)
{
    tu_graph g = tu_single(LT_OP_MAT_MUL, 13, 2, 1);
    lt_value *in[2] = {tu_rand(dt, ra, da, -1, 1, seed), tu_rand(dt, rb, db, -1, 1, seed + 1)};
    if (!lt_dtype_is_float(dt)) {
        lt_value_free(in[0]);
        lt_value_free(in[1]);
        double lo = lt_dtype_is_signed(dt) ? -20 : 0;
        in[0] = tu_rand(dt, ra, da, lo, 20, seed);
        in[1] = tu_rand(dt, rb, db, lo, 20, seed + 1);
    }
    lt_value *y = run1(&g, 2, in);
    int64_t n;
    double *want = ref_matmul(in[0], in[1], &n);
    tu_assert_close(y, want, n, tol, tol, seed);
    free(want);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

static void matmul_shapes(void **state)
{
    (void)state;
    check_matmul(LT_F32, 2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 5}, 1, 1e-5);
    check_matmul(LT_F32, 4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){3, 4, 5}, 2, 1e-5);
    check_matmul(LT_F32, 1, (int64_t[]){4}, 3, (int64_t[]){2, 4, 5}, 3, 1e-5);
    check_matmul(LT_F32, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 4, 1e-5);
    check_matmul(LT_F32, 1, (int64_t[]){7}, 1, (int64_t[]){7}, 5, 1e-5);
    check_matmul(LT_F32, 3, (int64_t[]){6, 3, 4}, 2, (int64_t[]){4, 5}, 6, 1e-5);
    check_matmul(LT_F64, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){1, 4, 2}, 7, 1e-12);
    check_matmul(LT_F16, 2, (int64_t[]){3, 8}, 2, (int64_t[]){8, 2}, 8, 1e-2);
    check_matmul(LT_I32, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){4, 5}, 9, 0);
    check_matmul(LT_I64, 2, (int64_t[]){3, 4}, 3, (int64_t[]){2, 4, 5}, 10, 0);
    check_matmul(LT_U32, 2, (int64_t[]){1, 3}, 2, (int64_t[]){3, 1}, 11, 0);
}

/* big enough to take the threaded paths (row split, batch-parallel) */
static void matmul_large(void **state)
{
    (void)state;
    check_matmul(LT_F32, 2, (int64_t[]){300, 200}, 2, (int64_t[]){200, 150}, 21, 1e-4);
    check_matmul(LT_F32, 2, (int64_t[]){3, 400}, 2, (int64_t[]){400, 2000}, 22, 1e-4);
    check_matmul(LT_F32, 3, (int64_t[]){16, 64, 96}, 3, (int64_t[]){16, 96, 48}, 23, 1e-4);
    check_matmul(LT_F64, 3, (int64_t[]){8, 64, 96}, 2, (int64_t[]){96, 200}, 24, 1e-10);
    /* attention's per-head products: batches of small matrices */
    check_matmul(LT_F32, 4, (int64_t[]){4, 4, 28, 8}, 4, (int64_t[]){4, 4, 8, 28}, 25, 1e-5);
    check_matmul(LT_F32, 4, (int64_t[]){4, 4, 28, 28}, 4, (int64_t[]){4, 4, 28, 8}, 26, 1e-5);
    check_matmul(LT_F32, 4, (int64_t[]){4, 4, 8, 28}, 4, (int64_t[]){4, 4, 28, 28}, 27, 1e-5);
    /* batches of small products over the threads (400 x 28 x 32 x 28
     * multiply-adds), and too wide for the small-product kernel */
    check_matmul(LT_F32, 4, (int64_t[]){20, 20, 28, 28}, 4, (int64_t[]){20, 20, 28, 32}, 28, 1e-5);
    check_matmul(LT_F32, 4, (int64_t[]){2, 3, 28, 40}, 3, (int64_t[]){3, 40, 48}, 29, 1e-5);
}

static void matmul_errors(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_MAT_MUL, 13, 2, 1);
    lt_value *in[2] = {tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1),
                       tu_rand(LT_F32, 2, (int64_t[]){5, 2}, -1, 1, 2)};
    lt_value *out[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "inner dimensions"));
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

static void check_gemm_mnk(int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha, float beta, int crank,
                           const int64_t *cd, uint64_t seed)
{
    tu_graph g = tu_single(LT_OP_GEMM, 13, 3, 1);
    if (ta)
        tu_attr_int(&g, "transA", 1);
    if (tb)
        tu_attr_int(&g, "transB", 1);
    tu_attr_float(&g, "alpha", alpha);
    tu_attr_float(&g, "beta", beta);
    int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N};
    lt_value *in[3] = {tu_rand(LT_F32, 2, da, -1, 1, seed), tu_rand(LT_F32, 2, db, -1, 1, seed + 1),
                       crank >= 0 ? tu_rand(LT_F32, crank, cd, -1, 1, seed + 2) : NULL};
    lt_value *y = run1(&g, 3, in);
    double *want = malloc(sizeof *want * (size_t)(M * N));
    assert_non_null(want);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += tu_get(in[0], ta ? k * M + i : i * K + k) * tu_get(in[1], tb ? j * K + k : k * N + j);
            double c = 0;
            if (crank == 0)
                c = tu_get(in[2], 0);
            else if (crank == 1)
                c = tu_get(in[2], cd[0] == 1 ? 0 : j);
            else if (crank == 2)
                c = tu_get(in[2], (cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j));
            want[i * N + j] = alpha * acc + beta * c;
        }
    double tol = 1e-6 * (double)(K + 8);
    tu_assert_close(y, want, M * N, tol, tol, seed);
    free(want);
    lt_value_free(y);
    for (int i = 0; i < 3; i++)
        lt_value_free(in[i]);
    tu_free(&g);
}

static void check_gemm(int ta, int tb, float alpha, float beta, int crank, const int64_t *cd, uint64_t seed)
{
    check_gemm_mnk(5, 4, 3, ta, tb, alpha, beta, crank, cd, seed);
}

static void gemm_variants(void **state)
{
    (void)state;
    check_gemm(0, 0, 1.0f, 1.0f, 2, (int64_t[]){5, 4}, 1);
    check_gemm(1, 0, 0.5f, 2.0f, 1, (int64_t[]){4}, 2);
    check_gemm(0, 1, 1.5f, 0.25f, 2, (int64_t[]){5, 1}, 3);
    check_gemm(1, 1, 0.25f, 0.35f, 2, (int64_t[]){1, 4}, 4);
    check_gemm(0, 0, 1.0f, 1.0f, 0, NULL, 5);
    check_gemm(1, 0, 2.0f, 1.0f, -1, NULL, 6);
    check_gemm(0, 0, 1.0f, 1.0f, 1, (int64_t[]){1}, 7);
}

/* products of few columns (the small-product kernel's 1 to 4 vectors per
 * row, partial row blocks, K * N at its bound, and just past its limits),
 * every transpose, alpha and beta */
static void gemm_small(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{1, 1, 1},   {3, 8, 28},   {28, 8, 28}, {28, 28, 8},  {8, 28, 28},
                                        {37, 17, 5}, {9, 33, 70},  {13, 48, 2}, {21, 64, 256}, {6, 10, 784},
                                        {5, 31, 529}, {7, 65, 3},  {4, 64, 300}};
    uint64_t seed = 40;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            float alpha = t == 1 ? 0.5f : 1.0f, beta = t >= 2 ? 0.75f : 0.0f;
            check_gemm_mnk(M, N, K, t & 1, t >> 1, alpha, beta, beta != 0 ? 2 : -1, (int64_t[]){M, N}, seed++);
            check_gemm_mnk(M, N, K, t >> 1, t & 1, 1.0f, 1.0f, 1, (int64_t[]){N}, seed++);
        }
    /* the blocked kernel reads A in place when alpha is 1 and A is not
     * transposed or has at most 128 columns (row panels of 8 with a short
     * last one, K past one 256 slice, rows past one 128 block), else packs
     * it */
    for (int t = 0; t < 4; t++) {
        check_gemm_mnk(300, 70, 300, t & 1, t >> 1, 1.0f, 1.0f, 1, (int64_t[]){70}, seed++);
        check_gemm_mnk(133, 40, 33, t & 1, t >> 1, 0.5f, 0.0f, -1, NULL, seed++);
        check_gemm_mnk(45, 70, 600, t & 1, t >> 1, 1.0f, 1.0f, 1, (int64_t[]){70}, seed++);
        check_gemm_mnk(128, 40, 100, t & 1, t >> 1, 1.0f, 0.0f, -1, NULL, seed++);
    }
    /* 32 columns: the small-product kernel unless A is transposed and has
     * more than 64 rows */
    for (int t = 0; t < 4; t++) {
        check_gemm_mnk(300, 32, 40, t & 1, t >> 1, 1.0f, 1.0f, 1, (int64_t[]){32}, seed++);
        check_gemm_mnk(64, 32, 600, t & 1, t >> 1, 1.0f, 0.0f, -1, NULL, seed++);
        check_gemm_mnk(65, 32, 33, t & 1, t >> 1, 0.5f, 0.0f, -1, NULL, seed++);
    }
}

static double ref_det(const double *a, int n)
{
    if (n == 1)
        return a[0];
    double d = 0, sub[64];
    for (int c = 0; c < n; c++) {
        int k = 0;
        for (int i = 1; i < n; i++)
            for (int j = 0; j < n; j++)
                if (j != c)
                    sub[k++] = a[i * n + j];
        d += (c % 2 ? -1 : 1) * a[c] * ref_det(sub, n - 1);
    }
    return d;
}

static void det_batched(void **state)
{
    (void)state;
    int n = 4;
    int64_t d[3] = {3, n, n};
    tu_graph g = tu_single(LT_OP_DET, 11, 1, 1);
    lt_value *in[1] = {tu_rand(LT_F32, 3, d, -2, 2, 5)};
    /* a singular matrix in the middle: two equal rows */
    for (int j = 0; j < n; j++)
        lt_tensor_set_f64(&in[0]->t, 16 + 4 + j, tu_get(in[0], 16 + j));
    lt_value *y = run1(&g, 1, in);
    double want[3], a[16];
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < 16; i++)
            a[i] = tu_get(in[0], b * 16 + i);
        want[b] = ref_det(a, n);
    }
    assert_int_equal(y->t.rank, 1);
    tu_assert_close(y, want, 3, 1e-5, 1e-5, 5);
    lt_value_free(y);
    lt_value_free(in[0]);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_shapes), cmocka_unit_test(matmul_large), cmocka_unit_test(matmul_errors),
        cmocka_unit_test(gemm_variants), cmocka_unit_test(gemm_small), cmocka_unit_test(det_batched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
