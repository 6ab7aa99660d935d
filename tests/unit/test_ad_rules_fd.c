/* Every gradient rule against central finite differences in float64: a
 * one-node model whose inputs are parameters, the loss sum(op(x) * R) with a
 * fixed random R, random non-zero inputs from fixed seeds (kinks avoided),
 * each differentiable input checked. Prints the number of (op, input) pairs
 * and the worst relative error. */
#include "rule_fd_inputs.h"

#define MAXIN 8

typedef struct rcase {
    const char *name;
    lt_op op;
    int opset;
    int nin, nout;
    tu_fd_in in[MAXIN];
    void (*attrs)(tu_graph *g);
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
                         .seed = 1000 + (uint64_t)rc->op * 7919 + (uint64_t)rc->opset};
}

/* attribute setters */
static void a_keep0(tu_graph *g) { tu_attr_int(g, "keepdims", 0); }
static void a_axes1(tu_graph *g) { tu_attr_ints(g, "axes", 1, (int64_t[]){1}); }
static void a_axis1(tu_graph *g) { tu_attr_int(g, "axis", 1); }
static void a_axis0(tu_graph *g) { tu_attr_int(g, "axis", 0); }
static void a_perm(tu_graph *g) { tu_attr_ints(g, "perm", 3, (int64_t[]){2, 0, 1}); }
static void a_gemm(tu_graph *g)
{
    tu_attr_int(g, "transA", 1);
    tu_attr_int(g, "transB", 1);
    tu_attr_float(g, "alpha", 0.7f);
    tu_attr_float(g, "beta", 1.3f);
}
static void a_conv(tu_graph *g)
{
    tu_attr_ints(g, "strides", 2, (int64_t[]){2, 1});
    tu_attr_ints(g, "pads", 4, (int64_t[]){1, 0, 1, 1});
    tu_attr_ints(g, "dilations", 2, (int64_t[]){1, 2});
    tu_attr_int(g, "group", 2);
}
static void a_pool(tu_graph *g)
{
    tu_attr_ints(g, "kernel_shape", 2, (int64_t[]){3, 2});
    tu_attr_ints(g, "strides", 2, (int64_t[]){2, 1});
    tu_attr_ints(g, "pads", 4, (int64_t[]){1, 0, 1, 1});
}
static void a_avgpool(tu_graph *g)
{
    a_pool(g);
    tu_attr_int(g, "count_include_pad", 1);
}
static void a_leaky(tu_graph *g) { tu_attr_float(g, "alpha", 0.2f); }
static void a_ln(tu_graph *g) { tu_attr_int(g, "axis", -1); }
static void a_bn_train(tu_graph *g) { tu_attr_int(g, "training_mode", 1); }
static void a_gn(tu_graph *g) { tu_attr_int(g, "num_groups", 2); }
static void a_lrn(tu_graph *g) { tu_attr_int(g, "size", 3); }
static void a_pad_reflect(tu_graph *g) { tu_attr_str(g, "mode", "reflect"); }
static void a_gnd(tu_graph *g) { (void)g; }
static void a_split(tu_graph *g) { tu_attr_int(g, "axis", 1); }
static void a_h3(tu_graph *g) { tu_attr_int(g, "hidden_size", 3); }
static void a_h3_bidi(tu_graph *g)
{
    tu_attr_int(g, "hidden_size", 3);
    tu_attr_str(g, "direction", "bidirectional");
}
static void a_gru_lbr(tu_graph *g)
{
    tu_attr_int(g, "hidden_size", 3);
    tu_attr_int(g, "linear_before_reset", 1);
    tu_attr_str(g, "direction", "reverse");
}

#define I64S(n, ...) {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {__VA_ARGS__}}
#define FROZEN(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = 0.5, .hi = 1.5, .frozen = true}
#define ABSENT {.absent = true}

static const rcase cases[] = {
    {"Add", LT_OP_ADD, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"Sub", LT_OP_SUB, 13, 2, 1, {F(2, 3, 4), F(2, 3, 1)}},
    {"Mul", LT_OP_MUL, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"Div", LT_OP_DIV, 13, 2, 1, {F(2, 3, 4), POS(2, 1, 4)}},
    {"Neg", LT_OP_NEG, 13, 1, 1, {F(2, 3, 4)}},
    {"Exp", LT_OP_EXP, 13, 1, 1, {F(2, 3, 4)}},
    {"Log", LT_OP_LOG, 13, 1, 1, {POS(2, 3, 4)}},
    {"Sqrt", LT_OP_SQRT, 13, 1, 1, {POS(2, 3, 4)}},
    {"Reciprocal", LT_OP_RECIPROCAL, 13, 1, 1, {KINK(2, 3, 4)}},
    {"Tanh", LT_OP_TANH, 13, 1, 1, {F(2, 3, 4)}},
    {"Sigmoid", LT_OP_SIGMOID, 13, 1, 1, {F(2, 3, 4)}},
    {"Relu", LT_OP_RELU, 14, 1, 1, {KINK(2, 3, 4)}},
    {"LeakyRelu", LT_OP_LEAKY_RELU, 16, 1, 1, {KINK(2, 3, 4)}, a_leaky},
    {"Elu", LT_OP_ELU, 6, 1, 1, {KINK(2, 3, 4)}},
    {"Softplus", LT_OP_SOFTPLUS, 1, 1, 1, {F(2, 3, 4)}},
    {"Softsign", LT_OP_SOFTSIGN, 1, 1, 1, {F(2, 3, 4)}},
    {"Abs", LT_OP_ABS, 13, 1, 1, {KINK(2, 3, 4)}},
    {"Sin", LT_OP_SIN, 7, 1, 1, {F(2, 3, 4)}},
    {"Cos", LT_OP_COS, 7, 1, 1, {F(2, 3, 4)}},
    {"Pow", LT_OP_POW, 15, 2, 1, {POS(2, 3, 4), F(1, 4)}},
    {"Where", LT_OP_WHERE, 16, 3, 1, {{.rank = 2, .dims = {3, 4}, .dt = LT_BOOL, .frozen = true, .nvals = 3, .vals = {1, 0, 1}}, F(2, 3, 4), F(1, 4)}},
    {"Clip", LT_OP_CLIP, 13, 3, 1, {KINK(2, 3, 4), {.rank = 0, .frozen = true, .nvals = 1, .vals = {-0.5}}, {.rank = 0, .frozen = true, .nvals = 1, .vals = {0.55}}}},
    {"Max", LT_OP_MAX, 13, 2, 1, {F(2, 3, 4), F(2, 3, 4)}},
    {"Min", LT_OP_MIN, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"Sum", LT_OP_SUM, 13, 3, 1, {F(2, 3, 4), F(1, 4), F(2, 3, 1)}},
    {"Mean", LT_OP_MEAN, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"Identity", LT_OP_IDENTITY, 16, 1, 1, {F(2, 3, 4)}},
    {"Reshape", LT_OP_RESHAPE, 14, 2, 1, {F(3, 2, 3, 4), I64(1, 2, 6, -1)}},
    {"Flatten", LT_OP_FLATTEN, 13, 1, 1, {F(3, 2, 3, 4)}},
    {"Squeeze", LT_OP_SQUEEZE, 13, 2, 1, {F(3, 2, 1, 4), I64(1, 1, 1)}},
    {"Unsqueeze", LT_OP_UNSQUEEZE, 13, 2, 1, {F(2, 3, 4), I64(1, 1, 0)}},
    {"Transpose", LT_OP_TRANSPOSE, 13, 1, 1, {F(3, 2, 3, 4)}, a_perm},
    {"Concat", LT_OP_CONCAT, 13, 3, 1, {F(2, 3, 2), F(2, 3, 1), F(2, 3, 3)}, a_axis1},
    {"Split", LT_OP_SPLIT, 13, 2, 2, {F(2, 3, 5), I64(1, 2, 2, 3)}, a_split},
    {"Slice", LT_OP_SLICE, 13, 5, 1, {F(2, 4, 5), I64(1, 2, 1, -1), I64(1, 2, 4, -5), I64(1, 2, 0, 1), I64(1, 2, 2, -2)}},
    {"Gather", LT_OP_GATHER, 13, 2, 1, {F(2, 4, 3), I64(1, 5, 0, 3, -1, 0, 2)}, a_axis0},
    {"GatherElements", LT_OP_GATHER_ELEMENTS, 13, 2, 1, {F(2, 3, 3), {.rank = 2, .dims = {2, 3}, .dt = LT_I64, .frozen = true, .nvals = 6, .vals = {0, 2, 1, 1, 0, 0}}}, a_axis0},
    {"GatherND", LT_OP_GATHER_ND, 13, 2, 1, {F(3, 2, 3, 4), {.rank = 2, .dims = {3, 2}, .dt = LT_I64, .frozen = true, .nvals = 6, .vals = {0, 1, 1, 2, 0, 1}}}, a_gnd},
    {"Pad.constant", LT_OP_PAD, 13, 2, 1, {F(2, 3, 4), I64(1, 4, 1, 0, 0, 2)}},
    {"Pad.reflect", LT_OP_PAD, 13, 2, 1, {F(2, 3, 4), I64(1, 4, 1, 2, 1, 1)}, a_pad_reflect},
    {"Expand", LT_OP_EXPAND, 13, 2, 1, {F(2, 3, 1), I64(1, 3, 2, 3, 4)}},
    {"ReduceSum", LT_OP_REDUCE_SUM, 13, 2, 1, {F(3, 2, 3, 4), I64(1, 1, 1)}, a_keep0},
    {"ReduceMean", LT_OP_REDUCE_MEAN, 13, 1, 1, {F(3, 2, 3, 4)}},
    {"ReduceMax", LT_OP_REDUCE_MAX, 13, 1, 1, {F(3, 2, 3, 4)}, a_keep0},
    {"ReduceMin", LT_OP_REDUCE_MIN, 13, 1, 1, {F(3, 2, 3, 4)}},
    /* two-way ties: the central difference there is 1/2, the even share
     * PyTorch's amax/amin gives each tied value */
    {"ReduceMax.ties", LT_OP_REDUCE_MAX, 18, 2, 1,
     {{.rank = 2, .dims = {3, 4}, .nvals = 12, .vals = {1, 2, 0.5, 3, 1, -1, 0.5, 2, 0, 2, 0.1, 3}}, I64(1, 1, 0)}},
    {"ReduceMin.ties", LT_OP_REDUCE_MIN, 13, 1, 1,
     {{.rank = 2, .dims = {3, 4}, .nvals = 12, .vals = {1, -2, 1, 3, 0.5, 0.5, 2, 4, -1, 0, -1, 7}}}, a_axes1},
    {"ReduceProd", LT_OP_REDUCE_PROD, 13, 1, 1, {KINK(2, 3, 4)}},
    {"ReduceL1", LT_OP_REDUCE_L1, 13, 1, 1, {KINK(2, 3, 4)}},
    {"ReduceL2", LT_OP_REDUCE_L2, 13, 1, 1, {F(2, 3, 4)}},
    {"ReduceSumSquare", LT_OP_REDUCE_SUM_SQUARE, 13, 1, 1, {F(2, 3, 4)}},
    {"ReduceLogSumExp", LT_OP_REDUCE_LOG_SUM_EXP, 13, 1, 1, {F(2, 3, 4)}},
    {"ReduceLogSum", LT_OP_REDUCE_LOG_SUM, 13, 1, 1, {POS(2, 3, 4)}},
    {"Softmax-13", LT_OP_SOFTMAX, 13, 1, 1, {F(3, 2, 3, 4)}, a_axis1},
    {"Softmax-11", LT_OP_SOFTMAX, 11, 1, 1, {F(3, 2, 3, 4)}, a_axis1},
    {"LogSoftmax-13", LT_OP_LOG_SOFTMAX, 13, 1, 1, {F(3, 2, 3, 4)}},
    {"MatMul", LT_OP_MAT_MUL, 13, 2, 1, {F(3, 2, 3, 4), F(2, 4, 5)}},
    /* a vector operand on either side, or both (a scalar out) */
    {"MatMul-mv", LT_OP_MAT_MUL, 13, 2, 1, {F(3, 2, 3, 4), F(1, 4)}},
    {"MatMul-vm", LT_OP_MAT_MUL, 13, 2, 1, {F(1, 3), F(3, 2, 3, 4)}},
    {"MatMul-vv", LT_OP_MAT_MUL, 13, 2, 1, {F(1, 5), F(1, 5)}},
    {"MatMul-m2v", LT_OP_MAT_MUL, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"Gemm", LT_OP_GEMM, 13, 3, 1, {F(2, 4, 3), F(2, 5, 4), F(1, 5)}, a_gemm},
    {"Conv", LT_OP_CONV, 11, 3, 1, {F(4, 2, 4, 6, 7), F(4, 6, 2, 3, 2), F(1, 6)}, a_conv},
    {"ConvTranspose", LT_OP_CONV_TRANSPOSE, 11, 3, 1, {F(4, 1, 4, 3, 4), F(4, 4, 3, 2, 3), F(1, 6)}, a_conv},
    {"MaxPool", LT_OP_MAX_POOL, 12, 1, 1, {F(4, 2, 3, 6, 5)}, a_pool},
    {"AveragePool", LT_OP_AVERAGE_POOL, 11, 1, 1, {F(4, 2, 3, 6, 5)}, a_avgpool},
    {"GlobalAveragePool", LT_OP_GLOBAL_AVERAGE_POOL, 1, 1, 1, {F(4, 2, 3, 4, 5)}},
    {"GlobalMaxPool", LT_OP_GLOBAL_MAX_POOL, 1, 1, 1, {F(4, 2, 3, 4, 5)}},
    {"BatchNormalization.train", LT_OP_BATCH_NORMALIZATION, 15, 5, 1, {F(4, 4, 3, 2, 2), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}, a_bn_train},
    {"BatchNormalization.infer", LT_OP_BATCH_NORMALIZATION, 15, 5, 1, {F(4, 2, 3, 2, 2), F(1, 3), F(1, 3), FROZEN(1, 3), FROZEN(1, 3)}},
    {"LayerNormalization", LT_OP_LAYER_NORMALIZATION, 17, 3, 1, {F(3, 2, 3, 5), F(1, 5), F(1, 5)}, a_ln},
    {"InstanceNormalization", LT_OP_INSTANCE_NORMALIZATION, 6, 3, 1, {F(4, 2, 3, 2, 3), F(1, 3), F(1, 3)}},
    {"GroupNormalization", LT_OP_GROUP_NORMALIZATION, 18, 3, 1, {F(4, 2, 4, 2, 3), F(1, 2), F(1, 2)}, a_gn},
    {"LRN", LT_OP_LRN, 13, 1, 1, {F(4, 2, 5, 2, 2)}, a_lrn},
    {"SoftmaxCrossEntropyLoss", LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS, 13, 2, 1, {F(2, 4, 5), I64(1, 4, 0, 3, 4, 1)}},
    {"NegativeLogLikelihoodLoss", LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13, 2, 1, {F(3, 4, 5, 2), {.rank = 2, .dims = {4, 2}, .dt = LT_I64, .frozen = true, .nvals = 8, .vals = {0, 4, 3, 1, 2, 2, 4, 0}}}},
    {"RNN", LT_OP_RNN, 14, 6, 1, {F(3, 3, 2, 4), F(3, 1, 3, 4), F(3, 1, 3, 3), F(2, 1, 6), ABSENT, F(3, 1, 2, 3)}, a_h3},
    {"GRU.lbr.reverse", LT_OP_GRU, 14, 6, 1, {F(3, 3, 2, 4), F(3, 1, 9, 4), F(3, 1, 9, 3), F(2, 1, 18), ABSENT, F(3, 1, 2, 3)}, a_gru_lbr},
    {"LSTM", LT_OP_LSTM, 14, 8, 1, {F(3, 3, 2, 4), F(3, 1, 12, 4), F(3, 1, 12, 3), F(2, 1, 24), ABSENT, F(3, 1, 2, 3), F(3, 1, 2, 3), F(2, 1, 9)}, a_h3},
    {"LSTM.bidirectional", LT_OP_LSTM, 14, 8, 1, {F(3, 3, 2, 4), F(3, 2, 12, 4), F(3, 2, 12, 3), F(2, 2, 24), ABSENT, F(3, 2, 2, 3), F(3, 2, 2, 3), F(2, 2, 9)}, a_h3_bidi},
};

static void all_rules(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const rcase *rc = &cases[k];
        tu_fd_model fm = model_of(rc);
        tu_fd_check(&fm, &(tu_fd_expect){0}, &t);
    }
    printf("gradient rules: %d (op, input) pairs checked by finite differences, worst relative error %.3g (%s)\n",
           t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(all_rules)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
