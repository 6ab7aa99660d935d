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

#include <omp.h>
#include <stdbool.h>
#include <stdint.h>

/* Iterations a chunk of a loop of n independent iterations shared out
 * dynamically (schedule(dynamic, lt_par_chunk(n))): about LT_PAR_CHUNKS
 * chunks, taken in turn, so that a thread that wakes late or loses its core
 * to another process leaves the rest of the loop to the other, without a
 * hand-off per iteration. Each iteration's result must not depend on the
 * thread that runs it (nor then the thread count). */
#define LT_PAR_CHUNKS 64
static inline int64_t lt_par_chunk(int64_t n) { return n / LT_PAR_CHUNKS > 0 ? n / LT_PAR_CHUNKS : 1; }

/* The thread count a kernel's work is cut for, whatever the number of
 * threads that run it. A float sum cut in pieces (partial sums over slices
 * of a batch, a product's blocks of rows or columns, which select its
 * kernel) rounds differently when the cuts move: cut as if for
 * LT_PAR_PLAN threads and shared out among those that run (one included),
 * the pieces, so the results, are the same bits on any thread count. */
#define LT_PAR_PLAN 4

/* Pieces of a float sum over n units (at least 1, at most n, and at most
 * LT_PAR_PLAN): each summed alone, by whichever thread, then the pieces
 * added in order. Piece p covers units [n p / count, n (p + 1) / count). */
static inline int lt_par_pieces(int64_t n) { return n < 1 ? 1 : n < LT_PAR_PLAN ? (int)n : LT_PAR_PLAN; }

/* Threads for `items` pieces of work worth sharing (`worth`): the pool's
 * size at most, never more than the items; 1 when not worth it or inside a
 * parallel region. */
static inline int lt_par_threads(int64_t items, bool worth)
{
    int nth = omp_in_parallel() ? 1 : omp_get_max_threads();
    return !worth || items < 2 ? 1 : items < nth ? (int)items : nth;
}

#endif
