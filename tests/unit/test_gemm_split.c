/* lt_linalg_gemm's split over threads: products big enough to split (by
 * columns in whole AVX-512 tiles or in 8s, by rows), cut into guided
 * chunks the threads take in turn, against sums in double, with every
 * transpose combination, leading dimensions past the matrices, alpha, beta
 * 0 (NaNs in C stay out) and 0.5, in float (the AVX-512 and small kernels)
 * and double (OpenBLAS), at 2 and 3 threads; the same product twice gives
 * the same bits. A product below the split's threshold runs whole on the
 * calling thread and is checked the same way, as are depths K that the
 * AVX-512 kernel cuts into slices of equal depth, and products whose op(B)
 * is two matrices side by side (lt_sgemm_avx512_cat), and batches of
 * products shared out over the threads, and (without AVX-512) op(A)
 * packed once for all the chunks giving the bits of one whole product. And the helper that moves a
 * region's second thread off the first one's CPU gives back the thread's
 * affinity unchanged. */
#define _GNU_SOURCE
#include "runtime/cpu/linalg_util.h"
#include "runtime/cpu/par_spread.h"
#include "testutil.h"
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t M, N, K;
    bool ta, tb;
    float beta;
} gcase;

static void split_case(lt_dtype dt, gcase g, uint64_t seed)
{
    int64_t M = g.M, N = g.N, K = g.K;
    /* A is [M, K] or [K, M], B [K, N] or [N, K], each row padded */
    int64_t lda = (g.ta ? M : K) + 3, ldb = (g.tb ? K : N) + 5, ldc = N + 2;
    int64_t ad[1] = {(g.ta ? K : M) * lda}, bd[1] = {(g.tb ? N : K) * ldb}, cd[1] = {M * ldc};
    lt_value *a = tu_rand(dt, 1, ad, -1, 1, seed), *b = tu_rand(dt, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(dt, 1, cd, -1, 1, seed + 2);
    size_t es = dt == LT_F32 ? sizeof(float) : sizeof(double);
    void *c2 = malloc(es * (size_t)cd[0]);
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(c2);
    assert_non_null(want);
    double alpha = 0.75;
    if (g.beta == 0)
        for (int64_t i = 0; i < cd[0]; i += 5) {
            if (dt == LT_F32)
                ((float *)c->t.data)[i] = NAN;
            else
                ((double *)c->t.data)[i] = NAN;
        }
    memcpy(c2, c->t.data, es * (size_t)cd[0]);
    /* op(A) as [M, K] and op(B) as [N, K] in double */
    double *ad64 = malloc(sizeof(double) * (size_t)(M * K)), *bd64 = malloc(sizeof(double) * (size_t)(N * K));
    assert_non_null(ad64);
    assert_non_null(bd64);
    for (int64_t i = 0; i < M; i++)
        for (int64_t q = 0; q < K; q++)
            ad64[i * K + q] = tu_get(a, g.ta ? q * lda + i : i * lda + q);
    for (int64_t j = 0; j < N; j++)
        for (int64_t q = 0; q < K; q++)
            bd64[j * K + q] = tu_get(b, g.tb ? j * ldb + q : q * ldb + j);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += ad64[i * K + q] * bd64[j * K + q];
            want[i * N + j] = alpha * s + (g.beta != 0 ? g.beta * tu_get(c, i * ldc + j) : 0);
        }
    lt_linalg_gemm(dt, g.ta, g.tb, M, N, K, alpha, a->t.data, lda, b->t.data, ldb, g.beta, c->t.data, ldc);
    lt_linalg_gemm(dt, g.ta, g.tb, M, N, K, alpha, a->t.data, lda, b->t.data, ldb, g.beta, c2, ldc);
    double tol = (dt == LT_F32 ? 2e-6 : 1e-13) * (double)K;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double got = tu_get(c, i * ldc + j);
            if (!(fabs(got - want[i * N + j]) <= tol))
                fail_msg("%s M %lld N %lld K %lld ta %d tb %d beta %g, %d threads: C[%lld, %lld] is %.10g, want "
                         "%.10g",
                         lt_dtype_name(dt), (long long)M, (long long)N, (long long)K, g.ta, g.tb, g.beta,
                         omp_get_max_threads(), (long long)i, (long long)j, got, want[i * N + j]);
        }
        /* the padding past each row is never written */
        for (int64_t j = N; j < ldc && i + 1 < M; j++)
            assert_true(memcmp((char *)c->t.data + (size_t)(i * ldc + j) * es, (char *)c2 + (size_t)(i * ldc + j) * es,
                               es) == 0);
    }
    /* a repeat gives the same bits */
    assert_true(memcmp(c->t.data, c2, es * (size_t)cd[0]) == 0 || g.beta == 0);
    if (g.beta == 0)
        for (int64_t i = 0; i < M; i++)
            assert_true(memcmp((char *)c->t.data + (size_t)(i * ldc) * es, (char *)c2 + (size_t)(i * ldc) * es,
                               es * (size_t)N) == 0);
    free(want);
    free(ad64);
    free(bd64);
    free(c2);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
}

/* products of at least 2^23 multiply-adds: split */
static const gcase big[] = {
    /* columns (N > M), whole 32-column tiles, a last chunk not a multiple of 32 */
    {128, 520, 200, false, true, 0.0f},
    {128, 520, 200, false, false, 0.5f},
    {96, 784, 120, true, false, 0.0f},
    {100, 700, 130, true, true, 0.5f},
    /* columns in 8s (too few for whole tiles): the small kernel's chunks */
    {100, 120, 800, false, true, 0.5f},
    {60, 150, 1000, true, false, 0.0f},
    /* rows (M >= N) */
    {600, 100, 160, false, true, 0.5f},
    {777, 130, 90, true, false, 0.0f},
    {2000, 40, 110, false, false, 0.0f},
    /* many chunks, K over the kernel's 256-deep slices */
    {90, 1000, 300, false, false, 0.5f},
};

static void split_products(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    uint64_t seed = 100;
    for (int nt = 2; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
            assert_true((double)big[i].M * big[i].N * big[i].K >= 8388608.0);
            split_case(LT_F32, big[i], seed += 3);
        }
        split_case(LT_F64, big[0], seed += 3);
        split_case(LT_F64, big[5], seed += 3);
        split_case(LT_F64, big[6], seed += 3);
    }
    omp_set_num_threads(saved);
}

/* below the threshold: one call on the calling thread */
static void whole_product(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    gcase g = {130, 200, 100, false, true, 0.5f};
    assert_true((double)g.M * g.N * g.K < 8388608.0);
    split_case(LT_F32, g, 7);
    split_case(LT_F64, g, 8);
    omp_set_num_threads(saved);
}

/* the AVX-512 kernel's K slices of equal depth (multiples of 16, at most
 * 256): depths just over a slice, between, and a whole number of them, on
 * one thread and split */
static void k_slices(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    static const int64_t depths[] = {784, 257, 530, 512, 1000};
    uint64_t seed = 300;
    for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
            gcase g = {72, 160, depths[i], i % 2 == 1, i % 3 != 1, i % 2 ? 0.5f : 0.0f};
            split_case(LT_F32, g, seed += 3);
        }
    }
    omp_set_num_threads(saved);
}

/* Without AVX-512, a float product split by columns whose chunks would
 * each pack op(A) (a transposed A of long rows, or alpha not 1) packs it
 * once for all of them (linalg_gemm.c): the same bits as lt_sgemm_avx2
 * over the whole product, which packs it itself, on 1 and 2 threads; K
 * past one slice, M not a multiple of the tile's 6 rows nor of a block's
 * 144. Checked against double sums by split_products above. */
static void shared_a_same_bits(void **state)
{
    (void)state;
    if (!lt_sgemm_avx2_here())
        skip();
    static const struct {
        bool ta, tb;
        int64_t M, N, K, lda;
        float alpha, beta;
    } cases[] = {
        {true, false, 512, 784, 128, 512, 1.0f, 0.0f}, /* an MLP's weight gradient */
        {true, false, 301, 700, 300, 333, 1.0f, 1.0f},
        {false, true, 200, 650, 530, 530, 0.75f, 0.5f},
        {false, false, 149, 900, 90, 95, -2.0f, 0.0f},
    };
    int saved = omp_get_max_threads();
    uint64_t seed = 900;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t M = cases[i].M, N = cases[i].N, K = cases[i].K, lda = cases[i].lda;
        bool ta = cases[i].ta, tb = cases[i].tb;
        int64_t ldb = tb ? K : N, na = (ta ? K : M) * lda, nb = tb ? N * K : K * N;
        lt_value *a = tu_rand(LT_F32, 1, &na, -1, 1, seed++), *b = tu_rand(LT_F32, 1, &nb, -1, 1, seed++);
        int64_t nc = M * N;
        lt_value *c = tu_rand(LT_F32, 1, &nc, -1, 1, seed++);
        float *whole = malloc(sizeof(float) * (size_t)nc), *split = malloc(sizeof(float) * (size_t)nc);
        assert_non_null(whole);
        assert_non_null(split);
        memcpy(whole, c->t.data, sizeof(float) * (size_t)nc);
        assert_true(lt_sgemm_avx2(ta, tb, M, N, K, cases[i].alpha, a->t.data, lda, b->t.data, ldb, cases[i].beta,
                                  whole, N));
        for (int nt = 1; nt <= 2; nt++) {
            omp_set_num_threads(nt);
            memcpy(split, c->t.data, sizeof(float) * (size_t)nc);
            lt_linalg_gemm(LT_F32, ta, tb, M, N, K, cases[i].alpha, a->t.data, lda, b->t.data, ldb, cases[i].beta,
                           split, N);
            if (memcmp(whole, split, sizeof(float) * (size_t)nc) != 0)
                fail_msg("case %zu on %d threads: the split product's bits differ from the whole one's", i, nt);
        }
        free(whole);
        free(split);
        lt_value_free(a);
        lt_value_free(b);
        lt_value_free(c);
    }
    omp_set_num_threads(saved);
}

/* lt_sgemm_avx512_cat: C = alpha op(A) [B1 | B2] + beta C against double
 * sums, the seam between B1 and B2 on a panel's edge, inside a panel, and
 * with no B2; op(A) transposed or not */
static void cat_case(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float beta, uint64_t seed)
{
    int64_t lda = (ta ? M : K) + 1, ldb1 = N1 + 3, ldb2 = N2 + 2, N = N1 + N2, ldc = N + 1;
    int64_t ad[1] = {(ta ? K : M) * lda}, b1d[1] = {K * ldb1}, b2d[1] = {K * ldb2 > 0 ? K * ldb2 : 1},
            cd[1] = {M * ldc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b1 = tu_rand(LT_F32, 1, b1d, -1, 1, seed + 1);
    lt_value *b2 = tu_rand(LT_F32, 1, b2d, -1, 1, seed + 2), *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 3);
    const float *af = a->t.data, *b1f = b1->t.data, *b2f = b2->t.data;
    float *cf = c->t.data, alpha = 1.25f;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    assert_non_null(want);
    /* the columns of B1, then those of B2 */
    tu_gemm_ref(want, N, ta, false, M, N1, K, alpha, af, lda, b1f, ldb1, beta, cf, ldc);
    tu_gemm_ref(want + N1, N, ta, false, M, N2, K, alpha, af, lda, b2f, ldb2, beta, cf + N1, ldc);
    if (!lt_sgemm_avx512_cat(ta, M, N1, N2, K, alpha, af, lda, b1f, ldb1, N2 ? b2f : NULL, ldb2, beta, cf, ldc)) {
        /* no AVX-512 here: nothing to check, and C untouched */
        free(want);
        lt_value_free(a), lt_value_free(b1), lt_value_free(b2), lt_value_free(c);
        return;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 3e-6 * (double)K))
                fail_msg("cat ta %d M %lld N1 %lld N2 %lld K %lld: C[%lld, %lld] is %.8g, want %.8g", ta, (long long)M,
                         (long long)N1, (long long)N2, (long long)K, (long long)i, (long long)j, cf[i * ldc + j],
                         want[i * N + j]);
    free(want);
    lt_value_free(a), lt_value_free(b1), lt_value_free(b2), lt_value_free(c);
}

static void cat_products(void **state)
{
    (void)state;
    cat_case(true, 160, 64, 20, 700, 0.0f, 401);  /* seam on a panel edge, a thin B2 */
    cat_case(true, 100, 40, 20, 300, 0.5f, 411);  /* seam inside a panel */
    cat_case(false, 50, 45, 50, 270, 0.0f, 421);  /* op(A) = A, seam inside */
    cat_case(true, 37, 128, 0, 129, 0.5f, 431);   /* no B2 */
    cat_case(false, 9, 3, 40, 600, 0.5f, 441);    /* B1 inside the first panel */
    /* fewer than 32 columns in all: refused, C untouched */
    float a[64] = {1}, b[64] = {1}, c2[64] = {7};
    assert_false(lt_sgemm_avx512_cat(false, 4, 10, 10, 2, 1.0f, a, 2, b, 10, b, 10, 0.0f, c2, 20));
    assert_true(c2[0] == 7);
}

/* lt_linalg_gemm_batched over threads (at least 2^23 multiply-adds in
 * all): shares of the batch taken in turn, through the small kernel (N <=
 * 32) and the general route, with products sharing one B (a broadcast
 * operand), against double sums; a repeat gives the same bits */
static void batched_case(int64_t nb, int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool shared_b, uint64_t seed)
{
    int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N, sa = M * K, sb = shared_b ? 0 : K * N, sc = M * N;
    int64_t ad[1] = {nb * sa}, bd[1] = {shared_b ? K * N : nb * K * N}, cd[1] = {nb * sc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 2);
    int64_t *off = malloc(sizeof(int64_t) * (size_t)(3 * nb));
    float *c2 = malloc(sizeof(float) * (size_t)cd[0]);
    assert_non_null(off);
    assert_non_null(c2);
    for (int64_t i = 0; i < nb; i++) {
        off[i] = i * sa;
        off[nb + i] = i * sb;
        off[2 * nb + i] = i * sc;
    }
    const float *af = a->t.data, *bf = b->t.data;
    float *cf = c->t.data;
    lt_linalg_gemm_batched(LT_F32, ta, tb, M, N, K, 0.5, af, lda, off, bf, ldb, off + nb, 0.0, cf, ldc, off + 2 * nb,
                           nb);
    lt_linalg_gemm_batched(LT_F32, ta, tb, M, N, K, 0.5, af, lda, off, bf, ldb, off + nb, 0.0, c2, ldc, off + 2 * nb,
                           nb);
    assert_true(memcmp(cf, c2, sizeof(float) * (size_t)cd[0]) == 0);
    for (int64_t p = 0; p < nb; p++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t q = 0; q < K; q++)
                    s += (double)af[p * sa + (ta ? q * lda + i : i * lda + q)] *
                         bf[p * sb + (tb ? j * ldb + q : q * ldb + j)];
                double got = cf[p * sc + i * ldc + j];
                if (!(fabs(got - 0.5 * s) <= 2e-6 * (double)K))
                    fail_msg("batched nb %lld M %lld N %lld K %lld: C[%lld][%lld, %lld] is %.8g, want %.8g",
                             (long long)nb, (long long)M, (long long)N, (long long)K, (long long)p, (long long)i,
                             (long long)j, got, 0.5 * s);
            }
    free(off);
    free(c2);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
}

static void batched_products(void **state)
{
    (void)state;
    int saved = omp_get_max_threads();
    for (int nt = 2; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        batched_case(515, 28, 28, 32, false, true, false, 500 + nt);   /* the small kernel, 2 nt shares */
        batched_case(7, 100, 96, 200, true, false, true, 510 + nt);    /* general, fewer products than shares */
        batched_case(40, 64, 40, 100, false, false, true, 520 + nt);   /* one B for all */
    }
    omp_set_num_threads(saved);
}

static void leave_cpu_keeps_affinity(void **state)
{
    (void)state;
    cpu_set_t before, after;
    assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
    int cpu = lt_par_cpu();
    assert_true(cpu >= 0);
    lt_par_leave_cpu(cpu);
    assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
    assert_true(CPU_EQUAL(&before, &after));
    /* a CPU it is not on, or none: nothing to do */
    lt_par_leave_cpu(-1);
    lt_par_leave_cpu(CPU_SETSIZE + 5);
    assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
    assert_true(CPU_EQUAL(&before, &after));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(split_products), cmocka_unit_test(whole_product),
                                       cmocka_unit_test(k_slices), cmocka_unit_test(cat_products),
                                       cmocka_unit_test(batched_products), cmocka_unit_test(shared_a_same_bits),
                                       cmocka_unit_test(leave_cpu_keeps_affinity)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
