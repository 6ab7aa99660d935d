/* lantern's own pool of worker threads for the matrix products
 * (par_pool.c). OpenMP's pool under OMP_WAIT_POLICY=passive puts its
 * threads to sleep the moment a region ends, and waking one costs a futex
 * call and, on a virtual machine whose idle CPU halts, the hypervisor's
 * wake-up of that CPU: tens to a hundred microseconds, as long as a
 * 128 x 128 x 128 product. A worker here spins for a short while
 * (LANTERN_POOL_SPIN_US, default 200) after each job before it sleeps, so
 * that back-to-back products of a training step find it awake, and sleeps
 * for good between steps. LANTERN_POOL=0 hands the products back to
 * OpenMP. */
#ifndef LT_CPU_PAR_POOL_H
#define LT_CPU_PAR_POOL_H

#include <stdbool.h>

typedef void (*lt_pool_fn)(void *ctx);

/* Whether the pool is on (LANTERN_POOL). */
bool lt_pool_enabled(void);

/* Turns the pool on or off for the process (tests compare the two). */
void lt_pool_set_enabled(bool on);

/* Whether the calling thread is running a pool job (a product inside one
 * then runs on its thread alone). */
bool lt_pool_in_job(void);

/* Threads a job started here may use: the OpenMP pool's size, 1 inside an
 * OpenMP region or a pool job. */
int lt_pool_threads(void);

/* Runs fn(ctx) on the calling thread and on n - 1 workers at once, and
 * returns when every call has returned. fn must share its work out itself
 * (an atomic counter of chunks), so that a worker that comes late, or not
 * at all, leaves its part to the others: with n <= 1, inside a job, or
 * while another thread holds the pool, fn runs on the caller alone. */
void lt_pool_run(int n, lt_pool_fn fn, void *ctx);

#endif
