/* The float32 matrix-vector and rank-1 kernels (gemv_avx512.c, and
 * gemv_avx2.c with its one-by-one last lanes) against
 * sums in double: M = 1 and N = 1 with every transpose (both the axpy and
 * the dot form), K = 1 (rank-1 updates, as AccGemm adds a weight gradient),
 * alpha and beta (beta 0 must not read C), leading dimensions past the
 * matrices, odd sizes around the 16-lane and 8-row blocks, the TreeLSTM's
 * 300x750 and 150x600 weights, x longer than the stack buffer and outputs
 * wider than one accumulation pass; then the same shapes through
 * lt_linalg_gemm (the route Gemm and MatMul take) with 1 and 2 threads. */
#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/linalg_util.h"
#include "testutil.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef bool (*gemm_fn)(bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t,
                        float, float *, int64_t);

static bool via_linalg(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                       const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    lt_linalg_gemm(LT_F32, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
}

/* one product against double sums; false when the kernel declined it */
static bool gemv_case(gemm_fn fn, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                      uint64_t seed)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    int64_t ad[1] = {(ta ? K : M) * lda}, bd[1] = {(tb ? N : K) * ldb}, cd[1] = {M * ldc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 2);
    float *cf = c->t.data;
    if (beta == 0) /* beta 0 must not read C: NaNs there stay out */
        for (int64_t i = 0; i < cd[0]; i += 7)
            cf[i] = NAN;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(want);
    tu_gemm_ref(want, N, ta, tb, M, N, K, alpha, a->t.data, lda, b->t.data, ldb, beta, cf, ldc);
    float pad[2];
    memcpy(pad, &cf[N], sizeof pad); /* the two floats past N in row 0 */
    bool done = fn(ta, tb, M, N, K, alpha, a->t.data, lda, b->t.data, ldb, beta, cf, ldc);
    if (done) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 2e-6 * (double)(K + 4)))
                    fail_msg("gemv ta %d tb %d %lldx%lldx%lld alpha %g beta %g: C[%lld,%lld] = %.9g, expected %.9g",
                             ta, tb, (long long)M, (long long)N, (long long)K, alpha, beta, (long long)i, (long long)j,
                             cf[i * ldc + j], want[i * N + j]);
        assert_true(memcmp(pad, &cf[N], sizeof pad) == 0); /* past N in a row: untouched */
    }
    free(want);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
    return done;
}

static const int64_t shapes[][3] = {
    /* M = 1: odd widths and depths around the blocks; the TreeLSTM's weights */
    {1, 1, 1},    {1, 7, 5},    {1, 17, 3},   {1, 33, 31},    {1, 750, 300},  {1, 600, 150}, {1, 129, 4099},
    {1, 2051, 9}, {1, 4500, 2}, {1, 63, 8},   {1, 31, 4500}, {1, 8200, 1030},
    /* N = 1 */
    {7, 1, 5},    {33, 1, 17},  {750, 1, 300}, {300, 1, 750}, {9, 1, 4099}, {4500, 1, 3},
    /* K = 1: rank-1 updates */
    {300, 750, 1}, {150, 600, 1}, {5, 3, 1},   {17, 33, 1},   {2, 4500, 1},
};

static void run_shapes(gemm_fn fn, bool must)
{
    uint64_t seed = 900;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            float alpha = t == 1 ? -0.5f : 1.0f, beta = t == 2 ? 0.75f : t == 3 ? 1.0f : 0.0f;
            bool a = gemv_case(fn, t & 1, t >> 1 & 1, shapes[i][0], shapes[i][1], shapes[i][2], alpha, beta, seed);
            bool b = gemv_case(fn, !(t & 1), t >> 1 & 1, shapes[i][0], shapes[i][1], shapes[i][2], beta ? 2.0f : 1.0f,
                               beta, seed + 10);
            if (must)
                assert_true(a && b);
            seed += 20;
        }
}

static void kernel(void **state)
{
    (void)state;
    bool avx512 = lt_cpu_avx512_gemm();
    run_shapes(lt_sgemv_avx512, avx512);
    /* products it is not for are declined, C untouched */
    float a[4] = {1, 2, 3, 4}, c[4] = {5, 6, 7, 8};
    assert_false(lt_sgemv_avx512(false, false, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2));
    assert_true(c[0] == 5 && c[3] == 8);
}

static void kernel_avx2(void **state)
{
    (void)state;
    bool avx2 = lt_cpu_avx2_gemm();
    run_shapes(lt_sgemv_avx2, avx2);
    float a[4] = {1, 2, 3, 4}, c[4] = {5, 6, 7, 8};
    assert_false(lt_sgemv_avx2(false, false, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2));
    assert_true(c[0] == 5 && c[3] == 8);
}

static void routed(void **state)
{
    (void)state;
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    run_shapes(via_linalg, true);
    omp_set_num_threads(2);
    run_shapes(via_linalg, true);
    omp_set_num_threads(nt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel),
        cmocka_unit_test(kernel_avx2),
        cmocka_unit_test(routed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
