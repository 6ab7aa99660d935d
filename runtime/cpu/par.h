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

#endif
