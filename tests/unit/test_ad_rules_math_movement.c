/* The gradient rules of ad/rules_unary.c, rules_movement.c, rules_norm.c
 * and rules_linalg.c (and BatchNormalization's training
 * at opsets 6-13) against central finite differences in float64: a one-node
 * model whose inputs are parameters, the loss sum(op(x) * R) with a fixed
 * random R, random inputs from fixed seeds kept off the kinks, each
 * differentiable input checked. Ops whose gradient is zero must give exactly
 * zero; rules that refuse an op must say why. Prints the number of
 * (op, input) pairs and the worst relative error. */
#include "rule_fd_inputs.h"
#include <string.h>

#define MAXIN 6

typedef struct rcase {
    const char *name;
    lt_op op;
    int opset;
    int nin, nout;
    tu_fd_in in[MAXIN];
    void (*attrs)(tu_graph *g);
    bool zero_grad;       /* the gradient is zero almost everywhere */
    const char *refusal;  /* the transform must fail with a message containing this */
    int out_rank;         /* the output's shape where inference cannot tell it (0: inferred), for R only */
    int64_t out_dims[5];
} rcase;

static tu_fd_model model_of(const rcase *rc)
{
    return (tu_fd_model){.name = rc->name,
                         .op = rc->op,
                         .opset = rc->opset,
                         .nin = rc->nin,
                         .nout = rc->nout,
                         .in = rc->in,
                         .attrs = rc->attrs,
                         .seed = 2000 + (uint64_t)rc->op * 7919 + (uint64_t)rc->opset * 31 +
                                 (uint64_t)strlen(rc->name),
                         .out_rank = rc->out_rank,
                         .out_dims = rc->out_dims};
}

/* ---- attribute setters ---- */
#define EQ(fn, e)                                                                                                  \
    static void fn(tu_graph *g) { tu_attr_str(g, "equation", e); }
EQ(e_matmul, "ij,jk->ik")
EQ(e_batched, "bij,bjk->bik")
EQ(e_ell_bcast, "...ij,...jk->...ik")
EQ(e_sum_all, "ij->")
EQ(e_outer, "i,j->ij")
EQ(e_implicit, "ij,j")
EQ(e_three, "abc,cd,de->abe")
EQ(e_diag, "ii->i")
EQ(e_trace, "ii")
EQ(e_label_bcast, "ij,ij->ij")
EQ(e_label_bcast_summed, "ij,kj->i")
EQ(e_transpose, "ij->ji")
EQ(e_upper, "Ab,bc")
EQ(e_ell_mid, "a...b,b->...a")
EQ(e_diag_other, "ii,i->i")
EQ(e_diag_extra, "iij->j")
EQ(e_ell_ranks, "...i,...i->...")
EQ(e_spaces, "b i j , b j k -> b k i")

static void a_celu(tu_graph *g) { tu_attr_float(g, "alpha", 0.7f); }
static void a_gelu_tanh(tu_graph *g) { tu_attr_str(g, "approximate", "tanh"); }
static void a_hsig(tu_graph *g)
{
    tu_attr_float(g, "alpha", 0.3f);
    tu_attr_float(g, "beta", 0.4f);
}
static void a_threlu(tu_graph *g) { tu_attr_float(g, "alpha", 0.5f); }
static void a_shrink(tu_graph *g)
{
    tu_attr_float(g, "lambd", 0.6f);
    tu_attr_float(g, "bias", 0.3f);
}
static void a_excl(tu_graph *g) { tu_attr_int(g, "exclusive", 1); }
static void a_rev(tu_graph *g) { tu_attr_int(g, "reverse", 1); }
static void a_excl_rev(tu_graph *g)
{
    tu_attr_int(g, "exclusive", 1);
    tu_attr_int(g, "reverse", 1);
}
static void a_axis1(tu_graph *g) { tu_attr_int(g, "axis", 1); }
static void a_axis0(tu_graph *g) { tu_attr_int(g, "axis", 0); }
static void a_fmod(tu_graph *g) { tu_attr_int(g, "fmod", 1); }
static void a_topk_small(tu_graph *g)
{
    tu_attr_int(g, "axis", 0);
    tu_attr_int(g, "largest", 0);
}
static void a_topk1(tu_graph *g)
{
    tu_attr_int(g, "k", 2);
    tu_attr_int(g, "axis", 1);
}
static void a_add(tu_graph *g) { tu_attr_str(g, "reduction", "add"); }
static void a_mul(tu_graph *g) { tu_attr_str(g, "reduction", "mul"); }
static void a_max(tu_graph *g) { tu_attr_str(g, "reduction", "max"); }
static void a_min(tu_graph *g) { tu_attr_str(g, "reduction", "min"); }
static void a_bs2(tu_graph *g) { tu_attr_int(g, "blocksize", 2); }
static void a_bs2_crd(tu_graph *g)
{
    tu_attr_int(g, "blocksize", 2);
    tu_attr_str(g, "mode", "CRD");
}
static void a_linear(tu_graph *g) { tu_attr_str(g, "mode", "linear"); }
static void a_up7(tu_graph *g) { tu_attr_floats(g, "scales", 4, (float[]){1, 1, 2, 3}); }
static void a_p3(tu_graph *g) { tu_attr_int(g, "p", 3); }
static void a_p1(tu_graph *g) { tu_attr_int(g, "p", 1); }
static void a_lp1(tu_graph *g)
{
    tu_attr_int(g, "p", 1);
    tu_attr_int(g, "axis", 1);
}
static void a_mvn1(tu_graph *g) { tu_attr_ints(g, "axes", 1, (int64_t[]){1}); }
static void a_mvn2(tu_graph *g) { tu_attr_ints(g, "axes", 2, (int64_t[]){0, -1}); }
static void a_rs_batch_first(tu_graph *g)
{
    tu_attr_int(g, "time_axis", 1);
    tu_attr_int(g, "batch_axis", 0);
}
static void a_lower(tu_graph *g) { tu_attr_int(g, "upper", 0); }
static void a_ccp_axes(tu_graph *g) { tu_attr_ints(g, "axes", 2, (int64_t[]){0, -2}); }
static void a_is_test0(tu_graph *g) { tu_attr_int(g, "is_test", 0); }
static void a_is_test1(tu_graph *g) { tu_attr_int(g, "is_test", 1); }

#define RNG(lo_, hi_, r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = lo_, .hi = hi_}
#define I64S(v) {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {v}}
#define IDX(r, d0, d1, n, ...)                                                                                     \
    {.rank = r, .dims = {d0, d1}, .dt = LT_I64, .frozen = true, .nvals = n, .vals = {__VA_ARGS__}}
#define FROZEN(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = 0.5, .hi = 1.5, .frozen = true}
#define FVALS(r, d0, d1, n, ...) {.rank = r, .dims = {d0, d1}, .nvals = n, .vals = {__VA_ARGS__}}
#define SCALES(...) {.rank = 1, .dims = {4}, .frozen = true, .nvals = 4, .vals = {__VA_ARGS__}}

static const rcase cases[] = {
    /* activations and unary math */
    {"Selu", LT_OP_SELU, 6, 1, 1, {KINK(2, 3, 4)}},
    {"Celu", LT_OP_CELU, 12, 1, 1, {KINK(2, 3, 4)}, a_celu},
    {"Gelu", LT_OP_GELU, 20, 1, 1, {RNG(-3, 3, 2, 3, 4)}},
    {"Gelu.tanh", LT_OP_GELU, 20, 1, 1, {RNG(-3, 3, 2, 3, 4)}, a_gelu_tanh},
    {"Erf", LT_OP_ERF, 13, 1, 1, {RNG(-2, 2, 2, 3, 4)}},
    {"HardSigmoid", LT_OP_HARD_SIGMOID, 6, 1, 1, {RNG(-4, 4, 2, 3, 4)}, a_hsig},
    {"HardSwish", LT_OP_HARD_SWISH, 14, 1, 1, {RNG(-5, 5, 2, 3, 4)}},
    {"Mish", LT_OP_MISH, 18, 1, 1, {RNG(-3, 3, 2, 3, 4)}},
    {"PRelu", LT_OP_P_RELU, 16, 2, 1, {KINK(3, 2, 3, 4), F(2, 3, 1)}},
    {"PRelu-6.channel", LT_OP_P_RELU, 6, 2, 1, {KINK(3, 2, 3, 4), F(1, 3)}},
    {"ThresholdedRelu", LT_OP_THRESHOLDED_RELU, 10, 1, 1, {RNG(-2, 2, 2, 3, 4)}, a_threlu},
    {"Shrink", LT_OP_SHRINK, 9, 1, 1, {RNG(-2, 2, 2, 3, 4)}, a_shrink},
    {"Tan", LT_OP_TAN, 7, 1, 1, {F(2, 3, 4)}},
    {"Asin", LT_OP_ASIN, 7, 1, 1, {RNG(-0.9, 0.9, 2, 3, 4)}},
    {"Acos", LT_OP_ACOS, 7, 1, 1, {RNG(-0.9, 0.9, 2, 3, 4)}},
    {"Atan", LT_OP_ATAN, 7, 1, 1, {RNG(-3, 3, 2, 3, 4)}},
    {"Sinh", LT_OP_SINH, 9, 1, 1, {RNG(-2, 2, 2, 3, 4)}},
    {"Cosh", LT_OP_COSH, 9, 1, 1, {RNG(-2, 2, 2, 3, 4)}},
    {"Asinh", LT_OP_ASINH, 9, 1, 1, {RNG(-3, 3, 2, 3, 4)}},
    {"Acosh", LT_OP_ACOSH, 9, 1, 1, {RNG(1.2, 3, 2, 3, 4)}},
    {"Atanh", LT_OP_ATANH, 9, 1, 1, {RNG(-0.9, 0.9, 2, 3, 4)}},
    {"Mod", LT_OP_MOD, 13, 2, 1, {RNG(-5, 5, 2, 3, 4), KINK(1, 4)}, a_fmod},
    {"CastLike", LT_OP_CAST_LIKE, 15, 2, 1,
     {F(2, 3, 4), {.rank = 1, .dims = {1}, .dt = LT_F64, .frozen = true, .nvals = 1, .vals = {0}}}},
    /* zero almost everywhere */
    {"Round", LT_OP_ROUND, 11, 1, 1, {RNG(-2.3, 2.3, 2, 3, 4)}, .zero_grad = true},
    {"Floor", LT_OP_FLOOR, 13, 1, 1, {RNG(-2.3, 2.3, 2, 3, 4)}, .zero_grad = true},
    {"Ceil", LT_OP_CEIL, 13, 1, 1, {RNG(-2.3, 2.3, 2, 3, 4)}, .zero_grad = true},
    {"Sign", LT_OP_SIGN, 13, 1, 1, {KINK(2, 3, 4)}, .zero_grad = true},
    {"Hardmax", LT_OP_HARDMAX, 13, 1, 1, {F(2, 3, 4)}, .zero_grad = true},
    /* Einsum */
    {"Einsum.matmul", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 4), F(2, 4, 5)}, e_matmul},
    {"Einsum.batched", LT_OP_EINSUM, 12, 2, 1, {F(3, 2, 3, 4), F(3, 2, 4, 5)}, e_batched},
    {"Einsum.ellipsis_bcast", LT_OP_EINSUM, 12, 2, 1, {F(4, 2, 1, 3, 4), F(3, 5, 4, 2)}, e_ell_bcast},
    {"Einsum.sum_all", LT_OP_EINSUM, 12, 1, 1, {F(2, 3, 4)}, e_sum_all},
    {"Einsum.outer", LT_OP_EINSUM, 12, 2, 1, {F(1, 3), F(1, 4)}, e_outer},
    {"Einsum.implicit", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 4), F(1, 4)}, e_implicit},
    {"Einsum.three", LT_OP_EINSUM, 12, 3, 1, {F(3, 2, 3, 4), F(2, 4, 5), F(2, 5, 2)}, e_three},
    {"Einsum.diag", LT_OP_EINSUM, 12, 1, 1, {F(2, 4, 4)}, e_diag},
    {"Einsum.trace", LT_OP_EINSUM, 12, 1, 1, {F(2, 3, 3)}, e_trace},
    {"Einsum.label_bcast", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 1), F(2, 3, 4)}, e_label_bcast},
    {"Einsum.label_bcast_summed", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 4), F(2, 2, 1)}, e_label_bcast_summed},
    {"Einsum.transpose", LT_OP_EINSUM, 12, 1, 1, {F(2, 3, 4)}, e_transpose},
    {"Einsum.upper", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 4), F(2, 4, 2)}, e_upper},
    {"Einsum.ellipsis_mid", LT_OP_EINSUM, 12, 2, 1, {F(4, 3, 2, 4, 5), F(1, 5)}, e_ell_mid},
    {"Einsum.diag_other", LT_OP_EINSUM, 12, 2, 1, {F(2, 3, 3), F(1, 3)}, e_diag_other},
    {"Einsum.diag_extra", LT_OP_EINSUM, 12, 1, 1, {F(3, 3, 3, 2)}, e_diag_extra},
    {"Einsum.ellipsis_ranks", LT_OP_EINSUM, 12, 2, 1, {F(3, 2, 3, 4), F(2, 3, 4)}, e_ell_ranks},
    {"Einsum.spaces", LT_OP_EINSUM, 12, 2, 1, {F(3, 2, 3, 4), F(3, 2, 4, 5)}, e_spaces},
    /* Det */
    {"Det", LT_OP_DET, 11, 1, 1, {F(3, 2, 3, 3)}},
    {"Det.4x4", LT_OP_DET, 11, 1, 1, {F(2, 4, 4)}},
    {"Det.1x1", LT_OP_DET, 11, 1, 1, {F(3, 2, 1, 1)}},
    /* data movement */
    {"Tile", LT_OP_TILE, 13, 2, 1, {F(3, 2, 3, 2), I64(1, 3, 2, 1, 3)}},
    /* inference does not read Tile-1's count: the rule takes it at run time */
    {"Tile-1", LT_OP_TILE, 1, 3, 1, {F(2, 2, 3), I64S(3), I64S(1)}, .out_rank = 2, .out_dims = {2, 9}},
    {"CumSum", LT_OP_CUM_SUM, 14, 2, 1, {F(3, 2, 3, 4), I64S(1)}},
    {"CumSum.exclusive", LT_OP_CUM_SUM, 14, 2, 1, {F(3, 2, 3, 4), I64S(-1)}, a_excl},
    {"CumSum.reverse", LT_OP_CUM_SUM, 14, 2, 1, {F(3, 2, 3, 4), I64S(1)}, a_rev},
    {"CumSum.exclusive_reverse", LT_OP_CUM_SUM, 14, 2, 1, {F(3, 2, 3, 4), I64S(0)}, a_excl_rev},
    {"TopK", LT_OP_TOP_K, 11, 2, 2, {F(2, 3, 5), I64(1, 1, 3)}, a_axis1},
    {"TopK.smallest", LT_OP_TOP_K, 11, 2, 2, {F(2, 5, 3), I64(1, 1, 2)}, a_topk_small},
    {"TopK-1", LT_OP_TOP_K, 1, 1, 2, {F(2, 3, 5)}, a_topk1},
    {"ScatterElements", LT_OP_SCATTER_ELEMENTS, 16, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 2, 1, 0, 2, 1, 0, 1), F(2, 2, 4)}},
    {"ScatterElements.add", LT_OP_SCATTER_ELEMENTS, 18, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 0, 1, 1, 0, 1, 1, 1), F(2, 2, 4)}, a_add},
    {"ScatterElements.axis1", LT_OP_SCATTER_ELEMENTS, 13, 3, 1,
     {F(2, 3, 4), IDX(2, 3, 2, 6, 3, 0, 1, 2, 0, 3), F(2, 3, 2)}, a_axis1},
    {"Scatter", LT_OP_SCATTER, 9, 3, 1, {F(2, 3, 4), IDX(2, 2, 4, 8, 2, 0, 1, 1, 0, 1, 0, 2), F(2, 2, 4)}},
    {"ScatterND", LT_OP_SCATTER_ND, 16, 3, 1, {F(2, 4, 3), IDX(2, 2, 1, 2, 0, 2), F(2, 2, 3)}},
    {"ScatterND.add", LT_OP_SCATTER_ND, 16, 3, 1, {F(2, 4, 3), IDX(2, 3, 2, 6, 0, 1, 3, 2, 0, 1), F(1, 3)}, a_add},
    /* max, min, mul with two updates written to one place (columns 0-2) */
    {"ScatterElements.max", LT_OP_SCATTER_ELEMENTS, 18, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 2, 1, 0, 0, 2, 1, 1), F(2, 2, 4)}, a_max},
    {"ScatterElements.min", LT_OP_SCATTER_ELEMENTS, 18, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 2, 1, 0, 0, 2, 1, 1), F(2, 2, 4)}, a_min},
    {"ScatterElements.mul", LT_OP_SCATTER_ELEMENTS, 18, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 2, 1, 0, 0, 2, 1, 1), F(2, 2, 4)}, a_mul},
    /* zero updates: two at one place (column 1: both gradients 0), one
     * alone (column 3) and one beside a nonzero one (column 2) */
    {"ScatterElements.mul_zeros", LT_OP_SCATTER_ELEMENTS, 18, 3, 1,
     {F(2, 3, 4), IDX(2, 2, 4, 8, 0, 2, 1, 0, 0, 2, 1, 1), FVALS(2, 2, 4, 8, 0.5, 0, 0, 0, 0.9, 0, -1.2, -0.4)},
     a_mul},
    {"ScatterND.max", LT_OP_SCATTER_ND, 18, 3, 1, {F(2, 4, 3), IDX(2, 3, 2, 6, 0, 1, 3, 2, 0, 1), F(1, 3)}, a_max},
    {"ScatterND.min", LT_OP_SCATTER_ND, 18, 3, 1, {F(2, 4, 3), IDX(2, 3, 2, 6, 0, 1, 3, 2, 0, 1), F(1, 3)}, a_min},
    {"ScatterND.mul", LT_OP_SCATTER_ND, 18, 3, 1, {F(2, 4, 3), IDX(2, 3, 1, 3, 0, 3, 0), F(2, 3, 3)}, a_mul},
    {"DepthToSpace", LT_OP_DEPTH_TO_SPACE, 13, 1, 1, {F(4, 1, 8, 2, 3)}, a_bs2},
    {"DepthToSpace.CRD", LT_OP_DEPTH_TO_SPACE, 13, 1, 1, {F(4, 2, 8, 2, 3)}, a_bs2_crd},
    {"SpaceToDepth", LT_OP_SPACE_TO_DEPTH, 13, 1, 1, {F(4, 2, 2, 4, 6)}, a_bs2},
    {"SpaceToDepth-28.CRD", LT_OP_SPACE_TO_DEPTH, 28, 1, 1, {F(4, 2, 3, 4, 6)}, a_bs2_crd},
    {"Upsample-9", LT_OP_UPSAMPLE, 9, 2, 1, {F(4, 1, 2, 2, 3), SCALES(1, 1, 2, 1.5)}},
    {"Upsample-9.linear", LT_OP_UPSAMPLE, 9, 2, 1, {F(4, 1, 2, 2, 3), SCALES(1, 1, 2, 2)}, a_linear},
    {"Upsample-7", LT_OP_UPSAMPLE, 7, 1, 1, {F(4, 1, 2, 2, 3)}, a_up7},
    {"Compress", LT_OP_COMPRESS, 11, 2, 1,
     {F(2, 4, 3), {.rank = 1, .dims = {3}, .dt = LT_BOOL, .frozen = true, .nvals = 3, .vals = {1, 0, 1}}}, a_axis0,
     .out_rank = 2, .out_dims = {2, 3}},
    {"Compress.flat", LT_OP_COMPRESS, 11, 2, 1,
     {F(2, 2, 3), {.rank = 1, .dims = {5}, .dt = LT_BOOL, .frozen = true, .nvals = 5, .vals = {0, 1, 1, 0, 1}}},
     .out_rank = 1, .out_dims = {3}},
    {"ReverseSequence", LT_OP_REVERSE_SEQUENCE, 10, 2, 1, {F(3, 4, 3, 2), I64(1, 3, 4, 1, 3)}},
    {"ReverseSequence.batch_first", LT_OP_REVERSE_SEQUENCE, 10, 2, 1, {F(3, 3, 4, 2), I64(1, 3, 2, 4, 3)},
     a_rs_batch_first},
    {"Trilu", LT_OP_TRILU, 14, 1, 1, {F(3, 2, 4, 5)}},
    {"Trilu.lower", LT_OP_TRILU, 14, 2, 1, {F(3, 2, 4, 5), I64S(-1)}, a_lower},
    {"CenterCropPad", LT_OP_CENTER_CROP_PAD, 18, 2, 1, {F(3, 4, 5, 3), I64(1, 3, 2, 8, 3)}},
    {"CenterCropPad.axes", LT_OP_CENTER_CROP_PAD, 18, 2, 1, {F(3, 5, 4, 3), I64(1, 2, 2, 7)}, a_ccp_axes},
    /* pooling and normalization */
    {"GlobalLpPool", LT_OP_GLOBAL_LP_POOL, 2, 1, 1, {KINK(4, 2, 3, 2, 2)}},
    {"GlobalLpPool.p3", LT_OP_GLOBAL_LP_POOL, 2, 1, 1, {KINK(4, 2, 3, 2, 2)}, a_p3},
    {"GlobalLpPool.p1", LT_OP_GLOBAL_LP_POOL, 2, 1, 1, {KINK(4, 2, 3, 2, 2)}, a_p1},
    {"LpNormalization", LT_OP_LP_NORMALIZATION, 1, 1, 1, {F(3, 2, 3, 4)}},
    {"LpNormalization.p1", LT_OP_LP_NORMALIZATION, 1, 1, 1, {KINK(3, 2, 3, 4)}, a_lp1},
    {"MeanVarianceNormalization", LT_OP_MEAN_VARIANCE_NORMALIZATION, 13, 1, 1, {F(4, 2, 3, 2, 2)}},
    {"MeanVarianceNormalization.axis1", LT_OP_MEAN_VARIANCE_NORMALIZATION, 13, 1, 1, {F(3, 2, 4, 3)}, a_mvn1},
    {"MeanVarianceNormalization.axes", LT_OP_MEAN_VARIANCE_NORMALIZATION, 9, 1, 1, {F(3, 3, 2, 4)}, a_mvn2},
    /* BatchNormalization training by its statistics outputs (ad/rules_nn.c) */
    {"BatchNormalization-9.train", LT_OP_BATCH_NORMALIZATION, 9, 5, 5,
     {F(4, 4, 3, 2, 2), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}},
    {"BatchNormalization-7.train", LT_OP_BATCH_NORMALIZATION, 7, 5, 3,
     {F(4, 3, 2, 2, 3), F(1, 2), F(1, 2), FROZEN(1, 2), FROZEN(1, 2)}},
    {"BatchNormalization-6.train", LT_OP_BATCH_NORMALIZATION, 6, 5, 5,
     {F(3, 4, 3, 5), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}, a_is_test0},
    {"BatchNormalization-6.test", LT_OP_BATCH_NORMALIZATION, 6, 5, 5,
     {F(3, 4, 3, 5), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}, a_is_test1},
    {"BatchNormalization-9.infer", LT_OP_BATCH_NORMALIZATION, 9, 5, 1,
     {F(4, 2, 3, 2, 2), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}},
};

static void all_rules(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const rcase *rc = &cases[k];
        tu_fd_model fm = model_of(rc);
        tu_fd_check(&fm, &(tu_fd_expect){.zero_grad = rc->zero_grad, .refusal = rc->refusal}, &t);
    }
    printf("more gradient rules: %d (op, input) pairs checked by finite differences, worst relative error %.3g "
           "(%s)\n",
           t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(all_rules)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
