/* When a CPU kernel's loop is worth a second thread. Every parallel region
 * costs a futex wake-up and a join (OMP_WAIT_POLICY=passive): a few
 * microseconds on an idle machine, tens when other processes hold the
 * cores, and the whole region waits when the second thread is not given a
 * core at once. A cheap loop (a compare, an add, a copy: well under a
 * nanosecond an element) needs this many elements, about 100 us of work
 * alone, before the split pays; the families' own thresholds derive from
 * it. */
#ifndef LT_CPU_PAR_H
#define LT_CPU_PAR_H

#define LT_PAR_ELEMS 524288

#include <stdint.h>

/* Iterations a chunk of a loop of n independent iterations shared out
 * dynamically (schedule(dynamic, lt_par_chunk(n))): about LT_PAR_CHUNKS
 * chunks, taken in turn, so that a thread that wakes late or loses its core
 * to another process leaves the rest of the loop to the other, without a
 * hand-off per iteration. Each iteration's result must not depend on the
 * thread that runs it (nor then the thread count). */
#define LT_PAR_CHUNKS 64
static inline int64_t lt_par_chunk(int64_t n) { return n / LT_PAR_CHUNKS > 0 ? n / LT_PAR_CHUNKS : 1; }

#endif
