/* lt_linalg_gemm's narrow products over a transposed A (a weight gradient
 * [M, N < 32] summed over a long batch K), which go through the packed
 * kernel as C^T when op(A) is too big for the cache and through the small
 * kernel when it is not: both against sums in double, with leading
 * dimensions past the matrices, alpha, beta 0 (NaNs in C stay out) and
 * 0.5, at sizes that take each route. */
#include "runtime/cpu/linalg_util.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void narrow_case(int64_t M, int64_t N, int64_t K, float beta, uint64_t seed)
{
    int64_t lda = M + 3, ldb = N + 5, ldc = N + 2; /* A is [K, M] (transposed), B [K, N] */
    int64_t ad[1] = {K * lda}, bd[1] = {K * ldb}, cd[1] = {M * ldc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 2);
    float *cf = c->t.data, alpha = 0.75f;
    const float *af = a->t.data, *bf = b->t.data;
    if (beta == 0)
        for (int64_t i = 0; i < cd[0]; i += 5)
            cf[i] = NAN;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(want);
    tu_gemm_ref(want, N, true, false, M, N, K, alpha, af, lda, bf, ldb, beta, cf, ldc);
    float pad = cf[N]; /* past the row: untouched */
    lt_linalg_gemm(LT_F32, true, false, M, N, K, alpha, af, lda, bf, ldb, beta, cf, ldc);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 1e-6 * (double)K))
                fail_msg("M %lld N %lld K %lld beta %g: C[%lld, %lld] is %.8g, want %.8g", (long long)M, (long long)N,
                         (long long)K, beta, (long long)i, (long long)j, cf[i * ldc + j], want[i * N + j]);
    if (beta != 0 || !isnan(pad))
        assert_true(memcmp(&pad, &cf[N], sizeof pad) == 0);
    free(want);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
}

static void narrow_transposed(void **state)
{
    (void)state;
    /* op(A) over the cache: C^T through the packed kernel */
    narrow_case(300, 20, 2000, 0.0f, 11);
    narrow_case(128, 31, 4096, 0.5f, 12);
    narrow_case(513, 7, 1100, 0.5f, 13);
    /* the small kernel: few rows, or a short batch */
    narrow_case(64, 16, 4096, 0.0f, 14);
    narrow_case(300, 20, 300, 0.5f, 15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(narrow_transposed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
