/* The exact GELU that exporters write as a chain of elementwise nodes,
 * before the AD:
 *     t = Div(x, sqrt 2)  or  Mul(x, 1/sqrt 2)
 *     e = Erf(t);  a = Add(e, 1)
 *     y = Mul(Mul(x, a), 0.5)  or  Div(Mul(x, a), 2)  or  Mul(Mul(x, 0.5), a)
 * (any operand order of the Adds and Muls) becomes one node
 * Gelu(x) {approximate = "none"}, whose gradient recomputes from x instead
 * of keeping t, 1 + erf and the products for the backward. A chain matches
 * only where x is a float32/float64 tensor, every intermediate is read by
 * the next node alone, and each constant is a Constant node's or a frozen
 * (not trainable) initializer's single element equal to its exact value
 * within float32 rounding and of rank at most x's (so no broadcast changes
 * the shape); anything else is left as it was. Constant nodes left without
 * readers are removed. */
#ifndef LT_IR_FUSE_GELU_H
#define LT_IR_FUSE_GELU_H

#include "ir.h"

/* Rewrites every block of the module (If/Loop/Scan bodies and functions
 * included); *nfused (may be NULL) receives the number of chains fused. */
lt_status lt_ir_fuse_gelu(lt_module *m, int *nfused, lt_err *err);

#endif
