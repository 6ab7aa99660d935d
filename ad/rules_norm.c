/* Gradient rules: GlobalLpPool, LpNormalization, MeanVarianceNormalization
 * and RMSNormalization,
 * written out with reductions (keepdims, so the statistics broadcast back
 * over x). */
#include "rules_util.h"

/* v, with 1 where it is 0: a denominator for a statistic that is 0 only
 * where its numerator is too (a zero vector, a constant slice) */
static lt_ival *nonzero(lt_ad *c, lt_ival *const *in, lt_ival *v)
{
    return OP3(WHERE, OP2(GREATER, v, K(0)), v, K(1));
}

/* y = (sum |x|^p)^(1/p) over the spatial axes: dx = dy sign(x) (|x| / y)^(p-1).
 * p is a float attribute in version 1, an int later. */
RULE(r_global_lp_pool)
{
    const lt_attr *a = lt_attr_find(n, "p");
    double p = !a ? 2 : a->kind == LT_ATTR_INT ? (double)a->i : a->kind == LT_ATTR_FLOAT ? a->f : 2;
    lt_ival *x = in[0], *d;
    if (p == 1)
        d = OP1(SIGN, x);
    else if (p == 2)
        d = OP2(DIV, x, nonzero(c, in, out[0]));
    else
        d = OP2(MUL, OP1(SIGN, x), OP2(POW, OP2(DIV, OP1(ABS, x), nonzero(c, in, out[0])), K(p - 1)));
    return ACC(0, OP2(MUL, G, d)); /* dy broadcasts over the pooled axes */
}

/* y = x / |x|_p along axis: dx = (dy - sum(dy y) d|x|_p/dx) / |x|_p, where
 * d|x|_p/dx is sign(x) for p = 1 and y for p = 2 */
RULE(r_lp_normalization)
{
    int64_t axis = lt_attr_int(n, "axis", -1), p = lt_attr_int(n, "p", 2);
    if (p != 1 && p != 2)
        return lt_ad_fail(c, n, "p must be 1 or 2, got %lld", (long long)p);
    lt_ival *x = in[0], *y = out[0], *axv = lt_ad_ints(c, 1, &axis);
    lt_ival *norm = nonzero(c, in, lt_ad_op2(c, p == 1 ? LT_OP_REDUCE_L1 : LT_OP_REDUCE_L2, x, axv));
    lt_ival *s = OP2(REDUCE_SUM, OP2(MUL, G, y), axv);
    lt_ival *dn = p == 1 ? OP1(SIGN, x) : y;
    return ACC(0, OP2(DIV, OP2(SUB, G, OP2(MUL, s, dn)), norm));
}

/* y = d / (sd + eps) with d = x - mean(x), sd = sqrt(mean(d^2)) over axes:
 * dx = (dy - mean(dy)) / (sd + eps) - d mean(dy d) / ((sd + eps)^2 sd) */
RULE(r_mvn)
{
    static const int64_t dflt[3] = {0, 2, 3};
    int na;
    const int64_t *axes = lt_attr_ints(n, "axes", &na);
    if (!axes) {
        axes = dflt;
        na = 3;
    }
    lt_ival *x = in[0], *axv = lt_ad_ints(c, na, axes);
    lt_ival *d = OP2(SUB, x, OP2(REDUCE_MEAN, x, axv));
    lt_ival *sd = OP1(SQRT, OP2(REDUCE_MEAN, OP2(MUL, d, d), axv));
    lt_ival *s = OP2(ADD, sd, K(1e-9)); /* the kernel's epsilon */
    lt_ival *direct = OP2(DIV, OP2(SUB, G, OP2(REDUCE_MEAN, G, axv)), s);
    lt_ival *gd = OP2(REDUCE_MEAN, OP2(MUL, G, d), axv);
    lt_ival *via_sd = OP2(MUL, d, OP2(DIV, gd, OP2(MUL, OP2(MUL, s, s), nonzero(c, in, sd))));
    return ACC(0, OP2(SUB, direct, via_sd));
}

/* y = x r scale with r = (mean(x^2) + eps)^(-1/2) over the dims from axis
 * on: with v = x r and gs = dy scale, dx = r (gs - v mean(gs v)) and
 * dscale = dy v summed to scale's shape */
RULE(r_rms_norm)
{
    lt_ival *x = in[0], *scale = in[1];
    int rank = x->type.rank;
    int64_t axis = lt_attr_int(n, "axis", -1);
    if (rank < 0 || axis < -rank || axis >= rank)
        return lt_ad_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, rank);
    if (axis < 0)
        axis += rank;
    int64_t axes[LT_MAX_RANK];
    for (int d = (int)axis; d < rank; d++)
        axes[d - axis] = d;
    lt_ival *axv = lt_ad_ints(c, rank - (int)axis, axes);
    float eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_ival *r = OP1(RECIPROCAL, OP1(SQRT, OP2(ADD, OP2(REDUCE_MEAN, OP2(MUL, x, x), axv), K(eps))));
    lt_ival *v = OP2(MUL, x, r);
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 1))
        s = ACC(1, lt_ad_unbroadcast(c, OP2(MUL, G, v), scale));
    if (s == LT_OK && lt_ad_wants(c, n, 0)) {
        lt_ival *gs = OP2(MUL, G, scale);
        lt_ival *m = OP2(REDUCE_MEAN, OP2(MUL, gs, v), axv);
        s = ACC(0, OP2(MUL, r, OP2(SUB, gs, OP2(MUL, v, m))));
    }
    return s;
}

void lt_ad_register_norm(lt_ad_rule *t, uint32_t *nd)
{
    (void)nd;
    t[LT_OP_GLOBAL_LP_POOL] = r_global_lp_pool;
    t[LT_OP_LP_NORMALIZATION] = r_lp_normalization;
    t[LT_OP_MEAN_VARIANCE_NORMALIZATION] = r_mvn;
    t[LT_OP_RMS_NORMALIZATION] = r_rms_norm;
}
