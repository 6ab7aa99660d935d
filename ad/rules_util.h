/* Builders shared by the gradient rule files (ad/rules_util.c), beyond
 * those of the builder (ad/ad.h). */
#ifndef LT_AD_RULES_UTIL_H
#define LT_AD_RULES_UTIL_H

#include "ad_impl.h"

/* a string attribute on an emitted node (the builder has int, float, ints) */
void lt_ad_attr_str(lt_ad *c, lt_node *n, const char *name, const char *s);
/* a node of op with the given inputs (all emitted already) and one output;
 * the caller adds attributes, then runs lt_ad_infer */
lt_node *lt_ad_node_of(lt_ad *c, lt_op op, int nin, lt_ival *const *ins);
/* v with size-1 axes inserted at the given (possibly negative) axes */
lt_ival *lt_ad_unsqueeze(lt_ad *c, lt_ival *v, int k, const int64_t *axes);
/* v cast to dtype to */
lt_ival *lt_ad_cast(lt_ad *c, lt_ival *v, lt_dtype to);

/* a node of op over ins, of which the first req must exist (the rest may be
 * omitted), with nout outputs; the caller sets attributes and infers */
lt_node *lt_ad_emit(lt_ad *c, lt_op op, int nin, lt_ival *const *ins, int req, int nout);
/* the gradient op of n over ins, carrying n's attributes and opset, inferred */
lt_node *lt_ad_emit_grad(lt_ad *c, const lt_node *n, lt_op op, int nin, lt_ival *const *ins, int req, int nout);
/* input i of n, or NULL where n has fewer inputs */
lt_ival *lt_ad_arg(const lt_node *n, lt_ival *const *in, int i);
/* Slice(v, starts, ends, axes) */
lt_ival *lt_ad_slice(lt_ad *c, lt_ival *v, lt_ival *starts, lt_ival *ends, lt_ival *axes);
/* v padded with zeros at the end of the given axes by the amounts in end */
lt_ival *lt_ad_pad_end(lt_ad *c, lt_ival *v, lt_ival *end, int na, const int64_t *axes, lt_ival *zero);
/* an integer value as int64 (shape values and lengths may come as int32) */
lt_ival *lt_ad_as_i64(lt_ad *c, lt_ival *v);
/* g divided by cnt, an int64 element count, in g's float type; float16
 * divides in float32, where a count above 65504 does not overflow */
lt_ival *lt_ad_div_count(lt_ad *c, lt_ival *g, lt_ival *cnt);
/* v summed over axes (every axis when all), keepdims 0 */
lt_ival *lt_ad_sum_over(lt_ad *c, lt_ival *v, bool all, int na, const int64_t *axes);
/* v reduced by op (ReduceSum, ReduceMean) over its axes from..rank-1, keepdims 1 */
lt_ival *lt_ad_reduce_tail(lt_ad *c, lt_op op, lt_ival *v, int from);

/* Shorthands the rule files write their rules in: a rule's signature, dy of
 * the first output, accumulation into input i's adjoint, emitted ops, a
 * scalar of input 0's float type (float16 and bfloat16 included) and a 1-D int64 constant. */
#define G dout[0]
#define ACC(i, v) lt_ad_accum(c, n, (i), (v))
#define OP1(op, a) lt_ad_op1(c, LT_OP_##op, (a))
#define OP2(op, a, b) lt_ad_op2(c, LT_OP_##op, (a), (b))
#define OP3(op, a, b, d) lt_ad_op3(c, LT_OP_##op, (a), (b), (d))
#define K(v) lt_ad_scalar_like(c, in[0], (v))
#define INTS(...) lt_ad_ints(c, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})
#define RULE(name)                                                                                                 \
    static lt_status name(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,                    \
                          lt_ival *const *dout)

#endif
