/* The small-product GEMM (sgemm_small.c) called directly against sums in
 * double: every column-vector count (1 to 4 vectors of 16) and each of its
 * row-block heights (the row counts that pick 8, 12, 14, 16 rows for one
 * vector, 6 / 7 / 8 for two, 4 / 5 / 6 for three and four), short last
 * blocks, all four transposes, alpha and beta (beta 0: C is not read, NaNs
 * there stay out), leading dimensions past the matrices, op(B) read in
 * place past the packed bound, the batched form over offsets, and the
 * shapes it must refuse (C untouched). Without AVX-512 the public entry
 * points run the AVX2 kernel (sgemm_small_avx2.c) on the shapes it takes
 * (at most 32 columns) and refuse the rest; without AVX2 either, every
 * shape; the tests expect exactly that. The AVX2 kernel is also called
 * directly (on any CPU with AVX2 and FMA): every column-vector count (1 to
 * 4 vectors of 8) and block height, op(B) read in place up to its last
 * element, and its own refusals. */
#include "runtime/cpu/linalg_util.h"
#include "runtime/cpu/cpu_features.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
} shape;

static shape mk(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int pad)
{
    shape s = {ta, tb, M, N, K, 0, 0, 0};
    s.lda = (ta ? M : K) + pad;
    s.ldb = (tb ? K : N) + pad;
    s.ldc = N + pad;
    return s;
}

static float *rand_buf(int64_t n, uint64_t seed)
{
    int64_t d[1] = {n};
    lt_value *v = tu_rand(LT_F32, 1, d, -1, 1, seed);
    float *f = malloc(sizeof(float) * (size_t)n);
    assert_non_null(f);
    memcpy(f, v->t.data, sizeof(float) * (size_t)n);
    lt_value_free(v);
    return f;
}

/* want[i * N + j] = alpha op(A) op(B) + beta C, in double */
static void reference(const shape *s, const float *A, const float *B, const float *C, float alpha, float beta,
                      double *want)
{
    for (int64_t i = 0; i < s->M; i++)
        for (int64_t j = 0; j < s->N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < s->K; k++)
                acc += (double)A[s->ta ? k * s->lda + i : i * s->lda + k] *
                       (double)B[s->tb ? j * s->ldb + k : k * s->ldb + j];
            want[i * s->N + j] = alpha * acc + (beta != 0 ? beta * (double)C[i * s->ldc + j] : 0.0);
        }
}

static void check_c(const shape *s, const float *C, const float *C0, const double *want, const char *what)
{
    double tol = 2e-6 * (double)(s->K + 4);
    for (int64_t i = 0; i < s->M; i++) {
        for (int64_t j = 0; j < s->N; j++) {
            double got = C[i * s->ldc + j], w = want[i * s->N + j];
            if (!(got == w || fabs(got - w) <= tol * (1 + fabs(w))))
                fail_msg("%s ta %d tb %d %lldx%lldx%lld: C[%lld,%lld] = %.8g, want %.8g", what, s->ta, s->tb,
                         (long long)s->M, (long long)s->N, (long long)s->K, (long long)i, (long long)j, got, w);
        }
        /* the padding past each row is left alone */
        for (int64_t j = s->N; j < s->ldc && i < s->M - 1; j++)
            if (memcmp(&C[i * s->ldc + j], &C0[i * s->ldc + j], sizeof(float)) != 0)
                fail_msg("%s: padding C[%lld,%lld] written", what, (long long)i, (long long)j);
    }
}

/* the AVX2 kernel's bounds (sgemm_small_avx2.c) */
static bool avx2_takes(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha)
{
    if (!lt_cpu_avx2_gemm() || M < 1 || N < 1 || K < 1 || N > 32 || (ta && K > 512))
        return false;
    return K * ((N + 7) / 8 * 8) <= 16384 || (!tb && alpha == 1.0f && K * N <= 131072);
}

/* whether lt_sgemm_small takes the shape: everything these tests pass it
 * with AVX-512, the AVX2 kernel's shapes without */
static bool small_takes(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha)
{
    return lt_cpu_avx512_gemm() || avx2_takes(ta, tb, M, N, K, alpha);
}

typedef bool (*small_fn)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                         const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* fn on one product (A, B and C allocated to their last element, so a
 * read past them trips the sanitizers), checked when it takes the shape;
 * a refusal must leave C alone */
static void one_fn(small_fn fn, bool expect, shape s, float alpha, float beta, uint64_t seed)
{
    int64_t na = (s.ta ? s.K : s.M) * s.lda, nbb = (s.tb ? s.N : s.K) * s.ldb, nc = s.M * s.ldc;
    float *A = rand_buf(na, seed), *B = rand_buf(nbb, seed + 1), *C = rand_buf(nc, seed + 2);
    if (beta == 0)
        for (int64_t i = 0; i < nc; i += 5)
            C[i] = NAN;
    float *C0 = malloc(sizeof(float) * (size_t)nc);
    double *want = malloc(sizeof(double) * (size_t)(s.M * s.N));
    assert_non_null(C0);
    assert_non_null(want);
    memcpy(C0, C, sizeof(float) * (size_t)nc);
    reference(&s, A, B, C, alpha, beta, want);
    bool ok = fn(s.ta, s.tb, s.M, s.N, s.K, alpha, A, s.lda, B, s.ldb, beta, C, s.ldc);
    if (ok != expect)
        fail_msg("%s %lldx%lldx%lld (ta %d tb %d alpha %g)", ok ? "took" : "refused", (long long)s.M,
                 (long long)s.N, (long long)s.K, s.ta, s.tb, alpha);
    if (ok)
        check_c(&s, C, C0, want, "single");
    else
        for (int64_t i = 0; i < nc; i++)
            if (memcmp(&C[i], &C0[i], sizeof(float)) != 0)
                fail_msg("refused, but C[%lld] written", (long long)i);
    free(A);
    free(B);
    free(C);
    free(C0);
    free(want);
}

static void one(shape s, float alpha, float beta, uint64_t seed)
{
    one_fn(lt_sgemm_small, small_takes(s.ta, s.tb, s.M, s.N, s.K, alpha), s, alpha, beta, seed);
}

/* every vector count and block height, partial blocks, transposes, alpha
 * and beta */
static void plans(void **state)
{
    (void)state;
    /* M picks the row-block height: one vector 8 (M = 8, 3), 12 (24, 36),
     * 14 (28, 13), 16 (32, 47); two vectors 6 (18, 3), 7 (28), 8 (40);
     * three and four vectors 4 (8, 3), 5 (25), 6 (30, 11) */
    static const int64_t ms[] = {1, 3, 8, 11, 13, 18, 24, 25, 28, 30, 32, 36, 40, 47};
    static const int64_t ns[] = {1, 8, 16, 17, 28, 32, 33, 48, 64};
    uint64_t seed = 100;
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            int t = (int)((a + b) % 4);
            int64_t K = 1 + (int64_t)((a * 7 + b * 3) % 29);
            float alpha = (a + b) % 3 == 0 ? 0.5f : 1.0f, beta = (a + b) % 2 ? 0.75f : 0.0f;
            one(mk(t & 1, t >> 1, ms[a], ns[b], K, (int)(b % 3)), alpha, beta, seed);
            one(mk(t >> 1, t & 1, ms[a], ns[b], K + 9, 0), 1.0f, 0.0f, seed + 3);
            seed += 6;
        }
}

/* attention's per-head and a small transformer's 32-feature shapes, a
 * long K, and op(B) read in place past the packed bound (K * N > 16384) */
static void model_shapes(void **state)
{
    (void)state;
    uint64_t seed = 500;
    for (int t = 0; t < 4; t++) {
        one(mk(t & 1, t >> 1, 28, 8, 28, 0), 1.0f, 0.0f, seed++);
        one(mk(t & 1, t >> 1, 28, 28, 8, 0), 1.0f, 0.0f, seed++);
        one(mk(t & 1, t >> 1, 300, 32, 96, 1), 1.0f, 1.0f, seed++);
        one(mk(t & 1, t >> 1, 32, 32, 500, 0), 1.0f, 0.0f, seed++);
    }
    /* 20000 and 128000 floats of B, read in place */
    one(mk(false, false, 21, 32, 625, 0), 1.0f, 0.0f, seed++);
    one(mk(true, false, 9, 64, 2000, 3), 1.0f, 1.0f, seed++);
}

/* the shapes it must refuse, C untouched: too wide, op(B) too large to
 * pack (transposed or scaled), in place past its bound, empty */
static void refuses(void **state)
{
    (void)state;
    static const struct {
        bool tb;
        int64_t M, N, K;
        float alpha;
    } no[] = {{false, 4, 65, 3, 1.0f},     {true, 4, 32, 513, 1.0f}, {false, 4, 32, 513, 0.5f},
              {false, 4, 64, 2049, 1.0f}, {false, 0, 8, 8, 1.0f},   {false, 4, 8, 0, 1.0f}};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        int64_t M = no[i].M ? no[i].M : 1, N = no[i].N, K = no[i].K ? no[i].K : 1;
        float *A = rand_buf(M * K, 900 + i), *B = rand_buf(K * N, 950 + i), *C = rand_buf(M * N, 990 + i);
        float *C0 = malloc(sizeof(float) * (size_t)(M * N));
        assert_non_null(C0);
        memcpy(C0, C, sizeof(float) * (size_t)(M * N));
        assert_false(lt_sgemm_small(false, no[i].tb, no[i].M, N, no[i].K, no[i].alpha, A, K, B, no[i].tb ? K : N,
                                    0.0f, C, N));
        int64_t off[1] = {0};
        assert_false(lt_sgemm_small_batched(false, no[i].tb, no[i].M, N, no[i].K, no[i].alpha, A, K, off, B,
                                            no[i].tb ? K : N, off, 0.0f, C, N, off, 1));
        assert_memory_equal(C, C0, sizeof(float) * (size_t)(M * N));
        free(A);
        free(B);
        free(C);
        free(C0);
    }
}

/* the batched form: products at scattered offsets (in reverse order, one
 * B shared by two products), each against its own reference */
static void batched(void **state)
{
    (void)state;
    uint64_t seed = 700;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t >> 1;
        shape s = mk(ta, tb, 28, t == 2 ? 28 : 8, t == 2 ? 8 : 28, 0);
        int64_t nb = 7, sa = (ta ? s.K : s.M) * s.lda + 3, sb = (tb ? s.N : s.K) * s.ldb + 1, sc = s.M * s.ldc + 2;
        float *A = rand_buf(nb * sa, seed), *B = rand_buf(nb * sb, seed + 1), *C = rand_buf(nb * sc, seed + 2);
        int64_t offa[7], offb[7], offc[7];
        for (int64_t i = 0; i < nb; i++) {
            offa[i] = (nb - 1 - i) * sa;
            offb[i] = (i == 3 ? 2 : i) * sb;
            offc[i] = i * sc;
        }
        float alpha = t == 1 ? 0.5f : 1.0f, beta = t == 3 ? 1.0f : 0.0f;
        double *want = malloc(sizeof(double) * (size_t)(nb * s.M * s.N));
        float *C0 = malloc(sizeof(float) * (size_t)(nb * sc));
        assert_non_null(want);
        assert_non_null(C0);
        memcpy(C0, C, sizeof(float) * (size_t)(nb * sc));
        for (int64_t i = 0; i < nb; i++)
            reference(&s, A + offa[i], B + offb[i], C + offc[i], alpha, beta, want + i * s.M * s.N);
        bool ok = lt_sgemm_small_batched(ta, tb, s.M, s.N, s.K, alpha, A, s.lda, offa, B, s.ldb, offb, beta, C,
                                         s.ldc, offc, nb);
        assert_true(ok == small_takes(ta, tb, s.M, s.N, s.K, alpha));
        if (ok)
            for (int64_t i = 0; i < nb; i++)
                check_c(&s, C + offc[i], C0 + offc[i], want + i * s.M * s.N, "batched");
        free(A);
        free(B);
        free(C);
        free(C0);
        free(want);
        seed += 3;
    }
}

/* nb products through the batched form against the reference, each at
 * its own offsets */
static void batched_case(shape s, float alpha, float beta, int64_t nb, uint64_t seed, bool inf_last_k)
{
    int64_t sa = (s.ta ? s.K : s.M) * s.lda, sb = (s.tb ? s.N : s.K) * s.ldb, sc = s.M * s.ldc;
    float *A = rand_buf(nb * sa, seed), *B = rand_buf(nb * sb, seed + 1), *C = rand_buf(nb * sc, seed + 2);
    if (inf_last_k) /* a(0, K - 1) infinite: C's row 0 is +-inf where op(B)[K - 1, j] is not 0, never NaN */
        for (int64_t i = 0; i < nb; i++)
            A[i * sa + (s.ta ? (s.K - 1) * s.lda : s.K - 1)] = INFINITY;
    if (beta == 0)
        for (int64_t i = 0; i < nb * sc; i += 3)
            C[i] = NAN;
    int64_t offa[8], offb[8], offc[8];
    for (int64_t i = 0; i < nb; i++) {
        offa[i] = i * sa;
        offb[i] = (nb - 1 - i) * sb;
        offc[i] = i * sc;
    }
    double *want = malloc(sizeof(double) * (size_t)(nb * s.M * s.N));
    float *C0 = malloc(sizeof(float) * (size_t)(nb * sc));
    assert_non_null(want);
    assert_non_null(C0);
    memcpy(C0, C, sizeof(float) * (size_t)(nb * sc));
    for (int64_t i = 0; i < nb; i++)
        reference(&s, A + offa[i], B + offb[i], C + offc[i], alpha, beta, want + i * s.M * s.N);
    bool ok = lt_sgemm_small_batched(s.ta, s.tb, s.M, s.N, s.K, alpha, A, s.lda, offa, B, s.ldb, offb, beta, C, s.ldc,
                                     offc, nb);
    assert_true(ok == small_takes(s.ta, s.tb, s.M, s.N, s.K, alpha));
    for (int64_t i = 0; ok && i < nb; i++) {
        if (inf_last_k)
            for (int64_t j = 0; j < s.N; j++) {
                float got = C[offc[i] + j];
                double w = want[i * s.M * s.N + j];
                if (isnan(got) != isnan(w) || (isinf(w) && got != w))
                    fail_msg("inf case: C[0,%lld] = %g, want %g", (long long)j, got, w);
                want[i * s.M * s.N + j] = got; /* checked; the rows below as usual */
            }
        check_c(&s, C + offc[i], C0 + offc[i], want + i * s.M * s.N, "batched");
    }
    free(A);
    free(B);
    free(C);
    free(C0);
    free(want);
}

/* at most 8 columns with A not transposed take k in pairs: odd and even K
 * (K = 2, 3: one pair, and one pair and a single k), fewer than 8
 * columns, op(B) transposed, alpha and beta, every block height and short
 * last blocks, and an infinite a(i, K - 1) with K odd (the single last k
 * must not add inf * 0 = NaN from the lanes it does not use); A transposed,
 * K = 1 and 9 columns keep the row kernel */
static void batched_pairs(void **state)
{
    (void)state;
    static const int64_t ms[] = {1, 5, 8, 13, 24, 28, 32, 41};
    static const int64_t ks[] = {1, 2, 3, 8, 27, 28};
    static const int64_t ns[] = {1, 5, 8, 9};
    uint64_t seed = 2000;
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++)
            for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
                int v = (int)((a + 2 * b + c) % 8);
                bool ta = v == 7, tb = v & 1;
                float alpha = v & 2 ? 0.5f : 1.0f, beta = v & 4 ? 0.75f : 0.0f;
                batched_case(mk(ta, tb, ms[a], ns[c], ks[b], (int)(c % 2)), alpha, beta, 3, seed, false);
                seed += 3;
            }
    for (int tb = 0; tb < 2; tb++) {
        batched_case(mk(false, tb, 28, 8, 27, 0), 1.0f, 0.0f, 2, seed, true);
        batched_case(mk(false, tb, 9, 6, 3, 1), 0.5f, 1.0f, 2, seed + 3, true);
        seed += 6;
    }
}

/* The AVX2 kernel called directly: M picks each block height (one vector
 * 6, 7, 8, 12; two 4, 5, 6; three 2, 3, 4; four 3) with short last blocks,
 * N every vector count with full and partial last vectors, all four
 * transposes, alpha and beta (NaN in C under beta 0), padded strides, K
 * from 1 up; op(B) read in place with no room past its last row (the last
 * vector of its final rows loaded under the mask); the attention and
 * 32-feature shapes; and its refusals (over 32 columns, a transposed A over
 * K > 512, op(B) too large to pack), C untouched. */
static void avx2_kernel(void **state)
{
    (void)state;
    static const int64_t ms[] = {1, 2, 5, 6, 7, 8, 9, 12, 13, 24, 28, 31, 100};
    static const int64_t ns[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 25, 28, 32};
    uint64_t seed = 3000;
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            int t = (int)((a + b) % 4);
            int64_t K = 1 + (int64_t)((a * 5 + b * 3) % 31);
            float alpha = (a + b) % 3 == 0 ? 0.5f : 1.0f, beta = (a + b) % 2 ? 0.75f : 0.0f;
            shape s = mk(t & 1, t >> 1, ms[a], ns[b], K, (int)(b % 3));
            one_fn(lt_sgemm_small_avx2, avx2_takes(s.ta, s.tb, s.M, s.N, K, alpha), s, alpha, beta, seed);
            /* in place, strides tight: op(B)'s last rows end its storage */
            s = mk(t >> 1, false, ms[a], ns[b], K + 2, 0);
            one_fn(lt_sgemm_small_avx2, avx2_takes(s.ta, false, s.M, s.N, K + 2, 1.0f), s, 1.0f, 0.0f, seed + 3);
            seed += 6;
        }
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t >> 1;
        one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(ta, tb, 28, 8, 28, 0), 0.35f, 0.0f, seed++);
        one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(ta, tb, 28, 28, 8, 0), 1.0f, 0.0f, seed++);
        one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(ta, tb, 300, 32, 96, 1), 1.0f, 1.0f, seed++);
        one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(ta, tb, 32, 32, 500, 0), 1.0f, 0.0f, seed++);
    }
    /* long K in place (past the packed bound), and the refusals */
    one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(false, false, 21, 32, 625, 0), 1.0f, 0.0f, seed++);
    one_fn(lt_sgemm_small_avx2, false, mk(false, false, 8, 33, 4, 0), 1.0f, 0.0f, seed++);
    one_fn(lt_sgemm_small_avx2, false, mk(true, false, 32, 28, 513, 0), 1.0f, 0.0f, seed++);
    one_fn(lt_sgemm_small_avx2, false, mk(false, true, 8, 32, 513, 0), 1.0f, 0.0f, seed++);
    one_fn(lt_sgemm_small_avx2, false, mk(false, false, 8, 25, 600, 0), 0.5f, 0.0f, seed++);
    one_fn(lt_sgemm_small_avx2, lt_cpu_avx2_gemm(), mk(false, false, 8, 25, 600, 0), 1.0f, 0.0f, seed++);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plans),
        cmocka_unit_test(model_shapes),
        cmocka_unit_test(refuses),
        cmocka_unit_test(batched),
        cmocka_unit_test(batched_pairs),
        cmocka_unit_test(avx2_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
