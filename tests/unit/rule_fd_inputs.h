/* Inputs of the gradient-rule suites' one-node models (rule_fd.h), as
 * they write them: uniform in [-1, 1] (F), in [0.2, 1.5] (POS), of random
 * sign with magnitude in [0.1, 1] away from a kink at 0 (KINK), and fixed
 * int64 values not differentiated (I64). */
#ifndef LT_RULE_FD_INPUTS_H
#define LT_RULE_FD_INPUTS_H

#include "rule_fd.h"

#define F(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -1, .hi = 1}
#define POS(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = 0.2, .hi = 1.5}
#define KINK(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = 0.1, .hi = 1, .signed_mag = true}
#define I64(r, n, ...) {.rank = r, .dims = {n}, .dt = LT_I64, .frozen = true, .nvals = n, .vals = {__VA_ARGS__}}

#endif
