/* The trainer's thread governor: each run of the training program is timed
 * per element of its inputs, and every so often a few runs are made with
 * one thread and a few with all the threads allowed; the faster setting is
 * kept until the next probe, until runs turn slow (another process took
 * a core), or, with all threads kept, until their recent runs cost clearly
 * more than one thread did in the probe (then one thread is taken). On a loaded machine a parallel region waits for a thread that is
 * not running, which can make two threads slower than one; the governor
 * keeps such a step at one. It is on by default (LANTERN_THREAD_GOV=0
 * turns it off): the kernels cut their sums by the sizes alone
 * (runtime/cpu/par.h), so a step's bits do not depend on its thread count
 * and a seeded run stays bit-identical whatever the governor chose. */
#ifndef LT_TRAIN_THREAD_GOV_H
#define LT_TRAIN_THREAD_GOV_H

#include <stdint.h>

/* runs timed per setting in a probe */
#define LT_GOV_PROBE 3
/* settled runs whose median is held against the other setting's cost */
#define LT_GOV_RECENT 5

typedef struct lt_thread_gov {
    int max;         /* threads allowed (OpenMP's at the start); 1 turns the governor off */
    int cur;         /* threads the next run uses */
    int phase;       /* warm-up, probing (all threads and one in turn), settled */
    int n;           /* runs in this phase */
    double seen[2][LT_GOV_PROBE]; /* the costs seen this probe with all threads and with one */
    double base;     /* the kept setting's cost when it was chosen */
    double alt;      /* the other setting's cost then */
    double recent[LT_GOV_RECENT]; /* the last settled runs' costs, in a ring */
    int slow;        /* settled runs in a row costing over LT_GOV_SLOW * base */
    int64_t settled; /* runs since the last choice */
    int64_t probes;  /* probes made (for tests and --stats) */
    int64_t one;     /* choices of one thread */
} lt_thread_gov;

/* Starts governing max threads (the OpenMP pool's size now when max <= 0). */
void lt_thread_gov_init(lt_thread_gov *g, int max);
/* Before a run: the pool gets the run's thread count if it changed. */
void lt_thread_gov_before(lt_thread_gov *g);
/* After a run of `seconds` over inputs of `work` elements. */
void lt_thread_gov_after(lt_thread_gov *g, double seconds, double work);
/* Gives the pool its max threads back. */
void lt_thread_gov_fini(lt_thread_gov *g);
/* Monotonic seconds. */
double lt_thread_gov_now(void);

#endif
