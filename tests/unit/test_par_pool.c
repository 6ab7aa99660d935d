/* The product pool (runtime/cpu/par_pool.c): jobs of 2 to 5 threads, many
 * in a row (workers still spinning) and after a pause past the spin time
 * (workers asleep on the futex), each chunk of a job taken exactly once;
 * a job that uses more workers than an earlier one starts them; a job
 * started inside a job runs on its thread alone; two threads starting
 * jobs at once both finish, each chunk once, the loser of the pool
 * running alone; and a product split through lt_linalg_gemm gives the same
 * bits with the pool as with OpenMP's threads. */
#include "runtime/cpu/linalg_util.h"
#include "runtime/cpu/par_pool.h"
#include "testutil.h"
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNKS 4096

typedef struct job {
    int next;
    int hits[CHUNKS];
    int nested_alone; /* inner jobs that ran on their caller's thread */
    bool nest;
} job;

static void inner(void *ctx) { __atomic_add_fetch((int *)ctx, 1, __ATOMIC_RELAXED); }

static void run_chunks(void *ctx)
{
    job *j = ctx;
    for (int c; (c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < CHUNKS;) {
        volatile double x = 0;
        for (int i = 0; i < 200; i++)
            x += i * 0.5;
        __atomic_add_fetch(&j->hits[c], 1, __ATOMIC_RELAXED);
        if (j->nest && c % 512 == 0) {
            int ran = 0;
            lt_pool_run(3, inner, &ran); /* inside a job: on this thread, once */
            if (ran == 1)
                __atomic_add_fetch(&j->nested_alone, 1, __ATOMIC_RELAXED);
        }
    }
}

static void check_once(const job *j)
{
    for (int c = 0; c < CHUNKS; c++)
        if (j->hits[c] != 1)
            fail_msg("chunk %d taken %d times", c, j->hits[c]);
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static void jobs(void **state)
{
    (void)state;
    assert_true(lt_pool_enabled()); /* the suite runs with the pool on */
    job *j = malloc(sizeof *j);
    assert_non_null(j);
    for (int round = 0; round < 300; round++) {
        memset(j, 0, sizeof *j);
        j->nest = round % 7 == 0;
        lt_pool_run(2 + round % 4, run_chunks, j);
        check_once(j);
        if (j->nest)
            assert_int_equal(j->nested_alone, CHUNKS / 512);
        if (round % 50 == 49)
            sleep_us(2000); /* past the spin: the workers sleep */
    }
    /* one thread: the caller alone */
    memset(j, 0, sizeof *j);
    lt_pool_run(1, run_chunks, j);
    check_once(j);
    free(j);
}

static void *racer(void *arg)
{
    job *j = arg;
    for (int round = 0; round < 100; round++) {
        memset(j, 0, sizeof *j);
        lt_pool_run(3, run_chunks, j);
        check_once(j);
    }
    return NULL;
}

static void two_callers(void **state)
{
    (void)state;
    job *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, racer, a), 0);
    racer(b);
    pthread_join(t, NULL);
    free(a);
    free(b);
}

/* a split product: the same bits through the pool and through OpenMP */
static void same_bits(void **state)
{
    (void)state;
    int64_t M = 300, N = 200, K = 150;
    int64_t ad[1] = {M * K}, bd[1] = {K * N};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, 5), *b = tu_rand(LT_F32, 1, bd, -1, 1, 6);
    omp_set_num_threads(2);
    float *c1 = malloc(sizeof(float) * (size_t)(M * N)), *c2 = malloc(sizeof(float) * (size_t)(M * N));
    assert_non_null(c1);
    assert_non_null(c2);
    lt_linalg_gemm(LT_F32, false, false, M, N, K, 1.0, a->t.data, K, b->t.data, N, 0.0, c1, N);
    lt_pool_set_enabled(false);
    lt_linalg_gemm(LT_F32, false, false, M, N, K, 1.0, a->t.data, K, b->t.data, N, 0.0, c2, N);
    lt_pool_set_enabled(true);
    assert_memory_equal(c1, c2, sizeof(float) * (size_t)(M * N));
    free(c1);
    free(c2);
    lt_value_free(a);
    lt_value_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jobs),
        cmocka_unit_test(two_callers),
        cmocka_unit_test(same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
