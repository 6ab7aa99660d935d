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
 * unchanged, so the process's CPU set is never altered. */
#define _GNU_SOURCE
#include "par_spread.h"
#include <sched.h>

int lt_par_cpu(void)
{
    return sched_getcpu();
}

void lt_par_leave_cpu(int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu)
        return;
    cpu_set_t all, away;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || !CPU_ISSET(cpu, &all) || CPU_COUNT(&all) < 2)
        return;
    away = all;
    CPU_CLR(cpu, &away);
    if (sched_setaffinity(0, sizeof away, &away) == 0)
        (void)sched_setaffinity(0, sizeof all, &all);
}
