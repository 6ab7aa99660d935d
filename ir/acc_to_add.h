/* Accumulation cells as plain sums: the AD sums a value's gradient
 * contributions in a cell (AccZerosLike, AccAdd per contribution, AccRead
 * once all are in). Where a cell lives in one block, every use is an
 * AccAdd of a tensor of the cell's own shape or its single AccRead, and
 * the read comes after every add, the cell becomes a chain of Add nodes:
 * contributions c1..ck give ((c1 + c2) + c3) ... + ck, the same float
 * additions in the same order as 0 + c1 + ... + ck (only the sign of an
 * all-zero sum can differ), computed at the k-th add's place, and the
 * read's value is that sum (or an Identity of c1 when k is 1). The cell's
 * zeroing, its in-place adds and the read's copy disappear, and the Adds
 * can fuse with the elementwise chains around them (fuse_elementwise.h).
 * Where the types leave a size open (an unknown dimension, two symbols),
 * the cell's node becomes Shape of the value it was made like and the read a
 * Reshape of the sum to it, which fails at run time unless the
 * contributions had that shape. Cells passed to calls, read inside regions,
 * fed by AccGemm, or summing contributions of another rank or known size
 * are left as they are. */
#ifndef LT_IR_ACC_TO_ADD_H
#define LT_IR_ACC_TO_ADD_H

#include "ir.h"

/* Rewrites every block of the module (main graph, functions, regions);
 * *nfolded (may be NULL) receives the number of cells rewritten. */
lt_status lt_ir_acc_to_add(lt_module *m, int *nfolded, lt_err *err);

#endif
