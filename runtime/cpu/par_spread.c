/* Keeping a parallel region's second thread off the first one's CPU.
 *
 * With OMP_WAIT_POLICY=passive the pool threads sleep between regions and
 * are woken by the thread that opens one. The kernel's wake-up placement
 * may put the woken thread on the waker's own CPU (it judges the other one
 * busy or not worth waking, which under a hypervisor is often), where it
 * preempts the waker: the two halves of a region then run one after the
 * other on one core while the other core idles, and a 2-thread GEMM takes
 * as long as a 1-thread one. A thread that finds itself on the CPU the
 * opener was on moves itself to another CPU it may run on (narrowing its
 * affinity, which migrates it at once) and then gives back its affinity
 * unchanged, so the process's CPU set is never altered. Where the other
 * CPUs are crowded (more runnable threads than the region's two and one
 * other a CPU, or a move that itself waited long for the other CPU) the
 * thread stays put: queued behind other processes it would hold up the
 * region's end longer than taking turns costs. */
#define _GNU_SOURCE
#include "par_spread.h"
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* A move takes as long as the target CPU takes to run the thread. Longer
 * than this and that CPU is crowded (several processes on it): the thread
 * would join the region late and hold up its end, so the next BACKOFF
 * calls stay where the wake-up put them (the halves then take turns on
 * one core, no worse than one thread) before trying again. */
#define SLOW_MOVE_NS 100000
#define BACKOFF 64

static int backoff;

/* The system's runnable threads now (/proc/loadavg's fourth field, before
 * the slash), re-read at most every CROWD_NS; -1 when unknown. With more
 * than one thread past the two of the region running (a build, a test
 * suite: the other CPU's time is shared several ways), a moved thread
 * gets a fraction of that CPU and the chunks it takes finish late. */
#define CROWD_NS 5000000

static int64_t crowd_at;
static int crowd_n = -1;

static int64_t now_ns(void);

static int runnable(void)
{
    int64_t t = now_ns();
    if (t - __atomic_load_n(&crowd_at, __ATOMIC_RELAXED) < CROWD_NS)
        return __atomic_load_n(&crowd_n, __ATOMIC_RELAXED);
    int n = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        double a, b, c;
        if (fscanf(f, "%lf %lf %lf %d/", &a, &b, &c, &n) != 4)
            n = -1;
        fclose(f);
    }
    __atomic_store_n(&crowd_n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&crowd_at, t, __ATOMIC_RELAXED);
    return n;
}

int lt_par_runnable(void) { return runnable(); }

int lt_par_cpu(void)
{
    return sched_getcpu();
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void lt_par_leave_cpu(int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu)
        return;
    if (__atomic_load_n(&backoff, __ATOMIC_RELAXED) > 0) {
        __atomic_fetch_sub(&backoff, 1, __ATOMIC_RELAXED);
        return;
    }
    cpu_set_t all, away;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || !CPU_ISSET(cpu, &all) || CPU_COUNT(&all) < 2)
        return;
    /* the two threads of the region and one other process per other CPU
     * (a spinning one: the move still gets half a core) */
    int n = runnable();
    if (n > 2 + (CPU_COUNT(&all) - 1))
        return;
    away = all;
    CPU_CLR(cpu, &away);
    int64_t t0 = now_ns();
    if (sched_setaffinity(0, sizeof away, &away) != 0)
        return;
    if (now_ns() - t0 > SLOW_MOVE_NS)
        __atomic_store_n(&backoff, BACKOFF, __ATOMIC_RELAXED);
    (void)sched_setaffinity(0, sizeof all, &all);
}
