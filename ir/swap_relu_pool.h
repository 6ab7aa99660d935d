/* Relu before MaxPool moved after it, before the AD. Max and Relu commute:
 * the largest of max(v, 0) over a window is max(largest v, 0), and the
 * first maximum in scan order is the same tap wherever it is positive, so
 *     r = Relu(x); y = MaxPool(r)   becomes   p = MaxPool(x); y = Relu(p)
 * with the same y and the same gradient (ReluGrad passes dy where y > 0,
 * and a positive y is x's own first maximum). The Relu and its gradient
 * then touch the pooled tensor (a quarter or less of x) instead of the
 * whole one, and the gradient keeps x (the Relu's input) where it kept r:
 * no more memory. A pair is swapped only where r is a float tensor read by
 * the MaxPool alone (not a result), the MaxPool's Indices output is absent
 * or unread, and both nodes sit in one block without regions. NaNs fall
 * out alike (Relu keeps them); a zero output may change its sign (Relu
 * keeps -0, so a window of -1 and -0 now gives -0 where it gave +0). */
#ifndef LT_IR_SWAP_RELU_POOL_H
#define LT_IR_SWAP_RELU_POOL_H

#include "ir.h"

/* Rewrites every block of the module; *nswapped (may be NULL) receives the
 * number of pairs swapped. */
lt_status lt_ir_swap_relu_pool(lt_module *m, int *nswapped, lt_err *err);

#endif
