/* The AVX2/FMA packed GEMM (sgemm_avx2.c) called directly against sums in
 * double: all four transposes, alpha 1 (op(A) read in place) and not 1
 * (packed with alpha folded in), beta 0 (C not read: NaNs there stay out),
 * 1 and other; ragged sizes around the 6 x 16 tile, K = 1, N around 16,
 * K deep enough for several KC slices, M and N across the MC and NC
 * blocks; leading dimensions past the rows (the padding left alone); the
 * [B1 | B2] form across the seam; and the same bits from another thread.
 * Every test skips on a CPU without AVX2 and FMA. */
#include "runtime/cpu/linalg_util.h"
#include "runtime/cpu/cpu_features.h"
#include "testutil.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static float *rand_buf(int64_t n, uint64_t seed)
{
    int64_t d[1] = {n > 0 ? n : 1};
    lt_value *v = tu_rand(LT_F32, 1, d, -1, 1, seed);
    float *f = malloc(sizeof(float) * (size_t)d[0]);
    assert_non_null(f);
    memcpy(f, v->t.data, sizeof(float) * (size_t)d[0]);
    lt_value_free(v);
    return f;
}

/* C against want (leading dimension N) within a bound scaled by K, and
 * C's padding past each row unchanged from C0 */
static void check(const float *C, const float *C0, int64_t ldc, const double *want, int64_t M, int64_t N,
                  int64_t K, const char *what)
{
    double tol = 2e-6 * (double)(K + 4);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double got = C[i * ldc + j], w = want[i * N + j];
            if (!(fabs(got - w) <= tol * (1 + fabs(w))))
                fail_msg("%s %lldx%lldx%lld: C[%lld,%lld] = %.8g, want %.8g", what, (long long)M, (long long)N,
                         (long long)K, (long long)i, (long long)j, got, w);
        }
        for (int64_t j = N; j < ldc; j++)
            if (memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(float)) != 0)
                fail_msg("%s: padding C[%lld,%lld] written", what, (long long)i, (long long)j);
    }
}

static void one(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, uint64_t seed)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    int64_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb, nc = M * ldc;
    float *A = rand_buf(na, seed), *B = rand_buf(nb, seed + 1), *C = rand_buf(nc, seed + 2);
    if (beta == 0)
        for (int64_t i = 0; i < nc; i += 3)
            C[i] = NAN;
    float *C0 = malloc(sizeof(float) * (size_t)nc);
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(C0);
    assert_non_null(want);
    memcpy(C0, C, sizeof(float) * (size_t)nc);
    tu_gemm_ref(want, N, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    assert_true(lt_sgemm_avx2(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
    char what[64];
    snprintf(what, sizeof what, "ta %d tb %d alpha %g beta %g", ta, tb, alpha, beta);
    check(C, C0, ldc, want, M, N, K, what);
    free(A), free(B), free(C), free(C0), free(want);
}

static const int64_t shapes[][3] = {
    {1, 1, 1},     {5, 7, 1},    {6, 16, 8},   {7, 17, 9},    {13, 15, 33},  {12, 16, 64},
    {25, 31, 100}, {4, 33, 7},   {150, 40, 300}, {37, 33, 600}, {20, 2050, 20}, {300, 50, 257},
    {6, 16, 1000}, {145, 18, 3},
};

static void products(void **state)
{
    (void)state;
    if (!lt_cpu_avx2_gemm())
        skip();
    const float alphas[] = {1.0f, 1.5f}, betas[] = {0.0f, 1.0f, -0.75f};
    uint64_t seed = 1000;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 3; b++)
                    one(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], alphas[a], betas[b], seed += 7);
}

/* a transposed A with long rows (lda past the bound for reading it in
 * place) and alpha 1: the packed path for op(A) = A^T */
static void long_rows(void **state)
{
    (void)state;
    if (!lt_cpu_avx2_gemm())
        skip();
    one(true, false, 200, 40, 70, 1.0f, 0.0f, 77);
    one(true, true, 200, 21, 300, 1.0f, 0.5f, 79);
}

/* C = alpha op(A) [B1 | B2] + beta C: the seam on a panel's edge, inside
 * a panel, B1 inside the first panel, no B2 */
static void cat_case(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, float beta, uint64_t seed)
{
    int64_t lda = (ta ? M : K) + 1, ldb1 = N1 + 3, ldb2 = N2 + 2, N = N1 + N2, ldc = N + 1;
    float *A = rand_buf((ta ? K : M) * lda, seed), *B1 = rand_buf(K * ldb1, seed + 1);
    float *B2 = rand_buf(K * ldb2, seed + 2), *C = rand_buf(M * ldc, seed + 3);
    float *C0 = malloc(sizeof(float) * (size_t)(M * ldc));
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(C0);
    assert_non_null(want);
    memcpy(C0, C, sizeof(float) * (size_t)(M * ldc));
    tu_gemm_ref(want, N, ta, false, M, N1, K, alpha, A, lda, B1, ldb1, beta, C, ldc);
    tu_gemm_ref(want + N1, N, ta, false, M, N2, K, alpha, A, lda, B2, ldb2, beta, C + N1, ldc);
    assert_true(lt_sgemm_avx2_cat(ta, M, N1, N2, K, alpha, A, lda, B1, ldb1, N2 ? B2 : NULL, ldb2, beta, C, ldc));
    check(C, C0, ldc, want, M, N, K, ta ? "cat ta" : "cat");
    free(A), free(B1), free(B2), free(C), free(C0), free(want);
}

static void cat_products(void **state)
{
    (void)state;
    if (!lt_cpu_avx2_gemm())
        skip();
    cat_case(true, 160, 64, 20, 700, 1.0f, 0.0f, 401); /* seam on a panel edge */
    cat_case(true, 100, 40, 20, 300, 1.0f, 0.5f, 411); /* seam inside a panel */
    cat_case(false, 50, 45, 50, 270, 1.25f, 0.0f, 421);
    cat_case(true, 37, 128, 0, 129, 1.0f, 1.0f, 431); /* no B2 */
    cat_case(false, 9, 3, 40, 600, 1.0f, 0.5f, 441);  /* B1 inside the first panel */
    cat_case(true, 13, 7, 5, 9, 0.5f, 0.0f, 451);     /* narrower than one panel */
}

typedef struct {
    int64_t M, N, K;
    const float *A, *B;
    float *C;
} job;

static void *run_job(void *p)
{
    job *j = p;
    lt_sgemm_avx2(false, true, j->M, j->N, j->K, 1.0f, j->A, j->K, j->B, j->K, 0.0f, j->C, j->N);
    return NULL;
}

/* the same product on this thread and on a fresh one (its own packing
 * buffers): the same bits */
static void same_bits_any_thread(void **state)
{
    (void)state;
    if (!lt_cpu_avx2_gemm())
        skip();
    int64_t M = 70, N = 90, K = 530;
    float *A = rand_buf(M * K, 5), *B = rand_buf(N * K, 6), *C1 = rand_buf(M * N, 7), *C2 = rand_buf(M * N, 8);
    job j1 = {M, N, K, A, B, C1}, j2 = {M, N, K, A, B, C2};
    run_job(&j1);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_job, &j2), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_memory_equal(C1, C2, sizeof(float) * (size_t)(M * N));
    free(A), free(B), free(C1), free(C2);
}

/* without AVX2 and FMA (or with LANTERN_GEMM=blas) the kernel refuses,
 * C untouched; with them it refuses only empty sizes */
static void refusals(void **state)
{
    (void)state;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {7, 7, 7, 7};
    assert_false(lt_sgemm_avx2(false, false, 2, 2, 0, 1.0f, a, 2, b, 2, 0.0f, c, 2));
    assert_false(lt_sgemm_avx2_cat(false, 2, 0, 0, 2, 1.0f, a, 2, b, 2, b, 2, 0.0f, c, 2));
    bool took = lt_sgemm_avx2(false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    assert_int_equal(took, lt_cpu_avx2_gemm());
    assert_true(took ? c[0] == 7.0f && c[3] == 22.0f : c[0] == 7.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(products), cmocka_unit_test(long_rows),
                                       cmocka_unit_test(cat_products), cmocka_unit_test(same_bits_any_thread),
                                       cmocka_unit_test(refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
