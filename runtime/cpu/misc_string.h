/* String helpers of the misc family: ONNX Cast between string tensors and
 * numeric tensors. Private to runtime/cpu. */
#ifndef LT_CPU_MISC_STRING_H
#define LT_CPU_MISC_STRING_H

#include "../runtime.h"

/* ONNX Cast where `in` or `out` (or both) is LT_STRING. `out` is already
 * allocated with in's shape and dtype `to`. Numbers become the shortest
 * decimal text that reads back as the same value, written the way numpy
 * prints scalars (the ONNX test data's format: "0.9767611", "1e-05",
 * "1e+16", "nan", "-inf"); integers in decimal; bools as "True"/"False".
 * Strings parse as decimal or hexadecimal-float numbers, with "NaN",
 * "INF", "+INF", "-INF", "Infinity" accepted in any case, and as integers
 * (decimal; a fractional or exponent form truncates toward zero); bool
 * accepts "true"/"false" in any case or a number (non-zero is true).
 * Surrounding white space is ignored; text that is not a number, or an
 * integer that does not fit the target type, fails the kernel. */
lt_status lt_cpu_cast_string(lt_kctx *k, const lt_tensor *in, lt_dtype to, lt_tensor *out);

/* The text lt_cpu_cast_string writes for the number `v` held in dtype t
 * (a float type): shortest round-trip digits, numpy layout. buf should hold
 * 40 bytes; returns the length. */
int lt_misc_format_float(double v, lt_dtype t, char *buf, size_t len);

#endif
