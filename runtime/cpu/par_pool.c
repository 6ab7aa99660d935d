/* The product pool (par_pool.h).
 *
 * One job at a time (a mutex the caller only tries: a second caller runs
 * its job alone). The caller fills in the job, then bumps `gen`, the word
 * workers watch; a worker that sees it change claims a place with a
 * fetch-add on `taken` and runs the job when its place is below `want`.
 * When the caller's own share is done it closes the job by adding CLOSED
 * to `taken` (later claims fall past `want` and run nothing), which tells
 * it how many workers joined, and waits until that many have finished
 * (`done`): the job's context lives on the caller's stack. A worker spins
 * on `gen` for the spin time after its last job, yielding now and then
 * (an OpenMP thread woken onto its CPU gets it), then sleeps on a futex;
 * the caller wakes sleepers only when there are any. The counts that
 * decide between waking and sleeping are sequentially consistent (the
 * caller bumps gen, then reads sleepers; a worker counts itself, then
 * re-reads gen inside the futex call), so no wake-up is lost. */
#define _GNU_SOURCE
#include "par_pool.h"
#include "par_spread.h"
#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define relax() _mm_pause()
#else
#define relax() ((void)0)
#endif

#define MAX_WORKERS 63
#define CLOSED (1 << 24)

static struct {
    pthread_mutex_t run;    /* held by the job's caller */
    pthread_mutex_t create; /* held while workers are started */
    uint32_t gen;           /* bumped once a job */
    int want;               /* workers the job takes */
    int taken;              /* places claimed (+ CLOSED once closed) */
    int done;               /* workers finished */
    int sleepers;           /* workers asleep on gen */
    int workers;            /* started */
    int cpu;                /* the CPU the job's caller was on (lt_par_cpu) */
    lt_pool_fn fn;
    void *ctx;
} P = {.run = PTHREAD_MUTEX_INITIALIZER, .create = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool in_job;
static int64_t spin_ns = -1;
static int enabled = -1;

bool lt_pool_enabled(void)
{
    if (__atomic_load_n(&enabled, __ATOMIC_RELAXED) < 0) {
        const char *e = getenv("LANTERN_POOL"), *s = getenv("LANTERN_POOL_SPIN_US");
        long us = s ? strtol(s, NULL, 10) : 200;
        __atomic_store_n(&spin_ns, (int64_t)(us < 0 ? 0 : us) * 1000, __ATOMIC_RELAXED);
        __atomic_store_n(&enabled, !(e && !strcmp(e, "0")), __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&enabled, __ATOMIC_RELAXED) > 0;
}

void lt_pool_set_enabled(bool on)
{
    (void)lt_pool_enabled(); /* the spin time read first */
    __atomic_store_n(&enabled, on ? 1 : 0, __ATOMIC_RELAXED);
}

bool lt_pool_in_job(void) { return in_job; }

int lt_pool_threads(void) { return omp_in_parallel() || in_job ? 1 : omp_get_max_threads(); }

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void futex_wait(uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake_all(uint32_t *w) { syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0); }

/* the CPUs this process may run on */
static int cpus(void)
{
    static int n;
    if (!__atomic_load_n(&n, __ATOMIC_RELAXED)) {
        cpu_set_t all;
        int c = sched_getaffinity(0, sizeof all, &all) == 0 ? CPU_COUNT(&all) : 1;
        __atomic_store_n(&n, c > 0 ? c : 1, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&n, __ATOMIC_RELAXED);
}

/* until gen moves past seen: spinning for the spin time, then asleep. On
 * a crowded machine (more runnable threads than CPUs: another process
 * holds a core) a worker sleeps at once: spinning, it would share its CPU
 * with that process by time slices, and a job it joins could wait a whole
 * slice for its chunk; woken from sleep, the scheduler runs it promptly. */
static uint32_t await_job(uint32_t seen)
{
    int n = lt_par_runnable();
    int64_t until = now_ns() + (n < 0 || n > cpus() ? 0 : __atomic_load_n(&spin_ns, __ATOMIC_RELAXED));
    for (unsigned i = 1;; i++) {
        uint32_t g = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
        if (g != seen)
            return g;
        relax();
        if (i % 64 == 0) {
            if (now_ns() >= until)
                break;
            if (i % 1024 == 0)
                sched_yield();
        }
    }
    for (;;) {
        __atomic_add_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
        futex_wait(&P.gen, seen);
        __atomic_sub_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
        uint32_t g = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
        if (g != seen)
            return g;
    }
}

static void *worker(void *arg)
{
    uint32_t seen = (uint32_t)(uintptr_t)arg;
    in_job = true; /* products inside a job run on its thread alone */
    for (;;) {
        seen = await_job(seen);
        int place = __atomic_fetch_add(&P.taken, 1, __ATOMIC_ACQ_REL);
        if (place >= __atomic_load_n(&P.want, __ATOMIC_ACQUIRE))
            continue;
        /* woken onto the caller's CPU (after a spell of one-thread jobs the
         * workers sleep, and the wake-up often lands there), the two would
         * take turns on one core for as long as jobs keep coming */
        lt_par_leave_cpu(__atomic_load_n(&P.cpu, __ATOMIC_RELAXED));
        P.fn(P.ctx);
        __atomic_add_fetch(&P.done, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* at least n workers started (fewer when threads cannot be had) */
static int ensure_workers(int n)
{
    if (n > MAX_WORKERS)
        n = MAX_WORKERS;
    if (__atomic_load_n(&P.workers, __ATOMIC_ACQUIRE) >= n)
        return n;
    pthread_mutex_lock(&P.create);
    while (P.workers < n) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        uint32_t g = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
        int rc = pthread_create(&t, &a, worker, (void *)(uintptr_t)g);
        pthread_attr_destroy(&a);
        if (rc != 0)
            break;
        __atomic_add_fetch(&P.workers, 1, __ATOMIC_RELEASE);
    }
    int have = P.workers;
    pthread_mutex_unlock(&P.create);
    return have < n ? have : n;
}

void lt_pool_run(int n, lt_pool_fn fn, void *ctx)
{
    if (n <= 1 || in_job || !lt_pool_enabled() || pthread_mutex_trylock(&P.run) != 0) {
        fn(ctx);
        return;
    }
    int want = ensure_workers(n - 1);
    if (want < 1) {
        pthread_mutex_unlock(&P.run);
        fn(ctx);
        return;
    }
    /* the job's fields, then the counts, then gen (workers read in the
     * opposite order) */
    P.fn = fn;
    P.ctx = ctx;
    __atomic_store_n(&P.cpu, lt_par_cpu(), __ATOMIC_RELAXED);
    __atomic_store_n(&P.want, want, __ATOMIC_RELEASE);
    __atomic_store_n(&P.done, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&P.taken, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&P.gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&P.sleepers, __ATOMIC_SEQ_CST) > 0)
        futex_wake_all(&P.gen);
    in_job = true;
    fn(ctx);
    in_job = false;
    int joined = __atomic_fetch_add(&P.taken, CLOSED, __ATOMIC_ACQ_REL);
    if (joined > want)
        joined = want;
    for (unsigned i = 1; __atomic_load_n(&P.done, __ATOMIC_ACQUIRE) < joined; i++) {
        relax();
        if (i % 1024 == 0)
            sched_yield(); /* a worker preempted on this CPU finishes */
    }
    pthread_mutex_unlock(&P.run);
}
