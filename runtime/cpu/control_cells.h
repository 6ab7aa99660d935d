/* Accumulation cells with deferred products (control_cells.c). */
#ifndef LT_CPU_CONTROL_CELLS_H
#define LT_CPU_CONTROL_CELLS_H

#include <stdint.h>

/* How many AccGemm products the process has deferred into cells (summed
 * later as one GEMM) rather than added at once: tests check that their
 * shapes take the deferred path. */
uint64_t lt_cells_deferred(void);

#endif
