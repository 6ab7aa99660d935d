/* Keeping a parallel region's threads on different CPUs (par_spread.c):
 * with OMP_WAIT_POLICY=passive the kernel may wake a pool thread on the
 * very CPU of the thread that opened the region, and the two then take
 * turns on one core. */
#ifndef LT_CPU_PAR_SPREAD_H
#define LT_CPU_PAR_SPREAD_H

/* The system's runnable threads now (/proc/loadavg, re-read at most every
 * 5 ms), -1 when unknown. */
int lt_par_runnable(void);

/* The CPU the calling thread runs on, -1 when unknown. */
int lt_par_cpu(void);

/* Called by a region's other threads with the CPU the opening thread had
 * (lt_par_cpu before the region): when the calling thread is on it, moves
 * the thread to another CPU its affinity allows, leaving that affinity as
 * it was. It stays put while the system runs more threads than the
 * region's two and one more a CPU (/proc/loadavg), and for the next 64
 * calls after a move that had to wait long for the other CPU. */
void lt_par_leave_cpu(int cpu);

#endif
