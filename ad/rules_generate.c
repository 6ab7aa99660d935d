/* Gradient rules of the ops that generate tensors: float Range and
 * OneHot's values; EyeLike, the random *Like ops and Bernoulli, whose
 * outputs carry no gradient. */
#include "rules_util.h"
#include <string.h>

/* ---- Range and OneHot ---- */

/* v summed to a scalar, shaped like like (a scalar or a one-element tensor) */
static lt_ival *total_like(lt_ad *c, lt_ival *v, lt_ival *like)
{
    return OP2(RESHAPE, lt_ad_sum_over(c, v, true, 0, NULL), OP1(SHAPE, like));
}

/* y_i = start + i delta: start collects sum(dy), delta sum(i dy); limit
 * only sets the length, which is piecewise constant */
RULE(r_range)
{
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, total_like(c, G, in[0]));
    if (s == LT_OK && lt_ad_wants(c, n, 2)) {
        lt_ival *i = OP3(RANGE, lt_ad_scalar(c, LT_I64, 0), OP1(SIZE, out[0]), lt_ad_scalar(c, LT_I64, 1));
        s = ACC(2, total_like(c, OP2(MUL, G, lt_ad_cast(c, i, lt_ad_float_dtype(in[2]))), in[2]));
    }
    return s;
}

/* values = [off, on]: on collects dy where an index hits (the same OneHot
 * with values [0, 1] marks them), off the rest */
RULE(r_one_hot)
{
    lt_ival *vals = in[2];
    lt_dtype dt = lt_ad_float_dtype(vals);
    lt_ival *parts[2] = {OP2(RESHAPE, lt_ad_scalar(c, dt, 0), INTS(1)), OP2(RESHAPE, lt_ad_scalar(c, dt, 1), INTS(1))};
    lt_node *cat = lt_ad_emit(c, LT_OP_CONCAT, 2, parts, 2, 1);
    if (!cat)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *ins[3] = {in[0], in[1], cat->out[0]};
    lt_node *k = lt_ad_emit(c, LT_OP_ONE_HOT, 3, ins, 3, 1);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    lt_ival *on = lt_ad_sum_over(c, OP2(MUL, G, k->out[0]), true, 0, NULL);
    lt_ival *off = OP2(SUB, lt_ad_sum_over(c, G, true, 0, NULL), on);
    lt_ival *both[2] = {OP2(RESHAPE, off, INTS(1)), OP2(RESHAPE, on, INTS(1))};
    lt_node *v = lt_ad_emit(c, LT_OP_CONCAT, 2, both, 2, 1);
    if (!v)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, v, "axis", 0);
    lt_ad_infer(c, v);
    return ACC(2, OP2(RESHAPE, v->out[0], OP1(SHAPE, vals)));
}

void lt_ad_register_generate(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_RANGE] = r_range;
    t[LT_OP_ONE_HOT] = r_one_hot;
    nd[LT_OP_RANGE] = 1u << 1;
    nd[LT_OP_ONE_HOT] = (1u << 0) | (1u << 1); /* indices and depth may be float: they only select */
    /* outputs that read only their input's shape and type (EyeLike, the
     * random *Like ops) or that are samples, piecewise constant in the
     * probabilities (Bernoulli) */
    nd[LT_OP_EYE_LIKE] = ~0u;
    nd[LT_OP_RANDOM_NORMAL_LIKE] = ~0u;
    nd[LT_OP_RANDOM_UNIFORM_LIKE] = ~0u;
    nd[LT_OP_BERNOULLI] = ~0u;
}
