/* Private to the elementwise family: reading Cast's target type, shared by
 * the shape rule (ir/shape_elementwise.c) and the kernel. */
#ifndef LT_SHAPE_ELEMENTWISE_H
#define LT_SHAPE_ELEMENTWISE_H

#include "ir.h"

/* Cast's `to`: an int (opset 6+) or a type name such as "FLOAT" (opset 1).
 * LT_UNDEFINED when absent or unknown. */
lt_dtype lt_cast_to_dtype(const lt_node *n);

#endif
