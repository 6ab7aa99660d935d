/* The recurrent products with R packed once (rnn_gemm.c, the RNN
 * and LSTM steps' h R^T and gate-gradient R) against sums in double: both
 * packings (R^T and R), widths that leave a short last 32-column panel,
 * batches past and short of the 8- and 4-row blocks (AVX-512) and of the
 * 6-row blocks by every remainder (AVX2), leading dimensions
 * past the matrices, beta 0 (C not read: NaNs there stay out) and 1; and
 * the two-part form (lt_rgemm_run2: the LSTM's [x_t | h] [W | R]^T). */
#include "runtime/cpu/grad_rnn_util.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void rgemm_case(bool tb, int64_t M, int64_t N, int64_t K, float beta, uint64_t seed)
{
    int64_t lda = K + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    int64_t ad[1] = {M * lda}, bd[1] = {(tb ? N : K) * ldb}, cd[1] = {M * ldc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 2);
    float *cf = c->t.data;
    if (beta == 0)
        for (int64_t i = 0; i < cd[0]; i += 7)
            cf[i] = NAN;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    float *packed = malloc(sizeof(float) * (size_t)lt_rgemm_packed_len(N, K));
    assert_non_null(want);
    assert_non_null(packed);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += tu_get(a, i * lda + q) * tu_get(b, tb ? j * ldb + q : q * ldb + j);
            want[i * N + j] = s + (beta != 0 ? beta * (double)cf[i * ldc + j] : 0);
        }
    float pad[2];
    memcpy(pad, &cf[N], sizeof pad);
    lt_rgemm_pack(tb, N, K, b->t.data, ldb, packed);
    lt_rgemm_run(M, N, K, a->t.data, lda, packed, beta, cf, ldc);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 2e-6 * (double)(K + 4)))
                fail_msg("rgemm tb %d %lldx%lldx%lld beta %g: C[%lld,%lld] = %.9g, expected %.9g", tb, (long long)M,
                         (long long)N, (long long)K, beta, (long long)i, (long long)j, cf[i * ldc + j],
                         want[i * N + j]);
    assert_true(memcmp(pad, &cf[N], sizeof pad) == 0); /* past N in a row: untouched */
    free(packed);
    free(want);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
}

/* C = [A1 | A2] [B1^T; B2^T] (tb) or [B1; B2] with the two A parts at
 * leading dimensions of their own (an LSTM's x_t rows and h) */
static void rgemm2_case(bool tb, int64_t M, int64_t N, int64_t K1, int64_t K2, float beta, uint64_t seed)
{
    int64_t lda1 = 3 * K1 + 1, lda2 = K2 + 2, ldb1 = (tb ? K1 : N) + 3, ldb2 = (tb ? K2 : N) + 1, ldc = N + 4;
    int64_t a1d[1] = {M * lda1}, a2d[1] = {M * lda2}, b1d[1] = {(tb ? N : K1) * ldb1}, b2d[1] = {(tb ? N : K2) * ldb2},
            cd[1] = {M * ldc};
    lt_value *a1 = tu_rand(LT_F32, 1, a1d, -1, 1, seed), *a2 = tu_rand(LT_F32, 1, a2d, -1, 1, seed + 1);
    lt_value *b1 = tu_rand(LT_F32, 1, b1d, -1, 1, seed + 2), *b2 = tu_rand(LT_F32, 1, b2d, -1, 1, seed + 3);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 4);
    float *cf = c->t.data;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    float *packed = malloc(sizeof(float) * (size_t)lt_rgemm_packed_len(N, K1 + K2));
    assert_non_null(want);
    assert_non_null(packed);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K1; q++)
                s += tu_get(a1, i * lda1 + q) * tu_get(b1, tb ? j * ldb1 + q : q * ldb1 + j);
            for (int64_t q = 0; q < K2; q++)
                s += tu_get(a2, i * lda2 + q) * tu_get(b2, tb ? j * ldb2 + q : q * ldb2 + j);
            want[i * N + j] = s + (beta != 0 ? beta * (double)cf[i * ldc + j] : 0);
        }
    lt_rgemm_pack2(tb, N, K1, b1->t.data, ldb1, K2, b2->t.data, ldb2, packed);
    lt_rgemm_run2(M, N, K1, a1->t.data, lda1, K2, a2->t.data, lda2, packed, beta, cf, ldc);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 2e-6 * (double)(K1 + K2 + 4)))
                fail_msg("rgemm2 tb %d %lldx%lldx(%lld+%lld) beta %g: C[%lld,%lld] = %.9g, expected %.9g", tb,
                         (long long)M, (long long)N, (long long)K1, (long long)K2, beta, (long long)i, (long long)j,
                         cf[i * ldc + j], want[i * N + j]);
    free(packed);
    free(want);
    lt_value_free(a1);
    lt_value_free(a2);
    lt_value_free(b1);
    lt_value_free(b2);
    lt_value_free(c);
}

static void rgemm2(void **state)
{
    (void)state;
    if (!lt_rgemm_have()) {
        print_message("  no AVX-512 or AVX2: the steps use lt_linalg_gemm\n");
        return;
    }
    /* {M, N, K1, K2}: the LSTM bench's slice (64 x 512, x 28 + h 128), odd
     * ones with a short last panel, an empty first part, tiny */
    static const int64_t shapes[][4] = {{64, 512, 28, 128}, {19, 148, 9, 37}, {17, 84, 5, 21}, {33, 44, 0, 11},
                                        {1, 1, 1, 1},       {12, 33, 3, 0},
                                        {20, 40, 7, 13}};
    uint64_t seed = 1700;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            rgemm2_case(t & 1, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], t >> 1 ? 1.0f : 0.0f, seed);
            seed += 10;
        }
}

static void rgemm(void **state)
{
    (void)state;
    if (!lt_rgemm_have()) {
        print_message("  no AVX-512 or AVX2: the steps use lt_linalg_gemm\n");
        return;
    }
    /* {M (batch slice), N, K}: an LSTM's forward (N = 4H, K = H) and
     * backward (N = H, K = 4H) at odd H, a plain RNN's H x H, tiny ones */
    static const int64_t shapes[][3] = {{19, 148, 37}, {19, 37, 148}, {64, 512, 128}, {64, 128, 512}, {33, 76, 19},
                                        {33, 19, 76},  {1, 1, 1},     {3, 5, 7},      {12, 33, 33},  {16, 64, 16},
                                        {14, 40, 20},  {32, 512, 128}, {32, 128, 512}};
    uint64_t seed = 1300;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            rgemm_case(t & 1, shapes[i][0], shapes[i][1], shapes[i][2], t >> 1 ? 1.0f : 0.0f, seed);
            seed += 10;
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rgemm),
        cmocka_unit_test(rgemm2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
