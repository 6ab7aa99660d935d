/* A sum of MaxPoolGrad's dx over every spatial axis read as the same sum
 * of its dy, after the AD. MaxPoolGrad puts each element of dy on one tap
 * of its window (the window's first maximum) and nothing else, so where
 * every window has a tap in the image, each [n, c] plane of dx sums to the
 * same value as that plane of dy, and
 *     ReduceSum(MaxPoolGrad(dy, x), axes)  ==  ReduceSum(dy, axes)
 * for axes holding every spatial axis (a convolution bias's gradient:
 * N, H, W), with the same output shape. dy is the pooled tensor (a quarter
 * of dx or less) and was just written, so the sum reads far less; dx is
 * left to its other readers. Rewritten only where the axes are constant
 * (a Constant node's tensor, or the attribute before opset 13), x's
 * spatial sizes are known and MaxPool's geometry leaves no window wholly
 * in the padding; the sums differ from dx's by the order of additions. */
#ifndef LT_IR_SUM_POOL_GRAD_H
#define LT_IR_SUM_POOL_GRAD_H

#include "ir.h"

/* Rewrites every block of the module; *nrewritten (may be NULL) receives
 * the number of sums that now read dy. */
lt_status lt_ir_sum_pool_grad(lt_module *m, int *nrewritten, lt_err *err);

#endif
