/* FusedElementwise's arguments (ir/fuse_elementwise.h), read and checked
 * once for the CPU kernel (fused_elementwise.c) and the cuda one: the
 * program, each input classed as full (the output's shape), one element or
 * a row along the last axis, and the outputs made, each where its step's
 * value goes. */
#ifndef LT_CPU_FUSED_ARGS_H
#define LT_CPU_FUSED_ARGS_H

#include "../runtime.h"
#include "../../ir/fuse_elementwise.h"

#define LT_FE_MAX_IN (2 * LT_FE_MAX_STEPS)

enum { LT_FE_FULL, LT_FE_SCALAR, LT_FE_ROW };

typedef struct lt_fe_args {
    int nin, nsteps;
    const int64_t *prog;        /* 3 ints a step: code, register a, register b (-1: unary) */
    int64_t n, last;            /* output elements; the last axis' length (a row input's) */
    int kind[LT_FE_MAX_IN];     /* LT_FE_FULL, LT_FE_SCALAR, LT_FE_ROW */
    const float *in[LT_FE_MAX_IN];
    float *out_of[LT_FE_MAX_STEPS]; /* per step: its output's data, or NULL */
} lt_fe_args;

lt_status lt_fe_args_read(lt_kctx *k, lt_fe_args *a);

#endif
