/* The norm family's numeric cores (norm_tmpl.h) for both working types. */
#include "norm_util.h"

#define T float
#define S f32
#include "norm_tmpl.h"
#undef T
#undef S

#define T double
#define S f64
#include "norm_tmpl.h"
#undef T
#undef S
