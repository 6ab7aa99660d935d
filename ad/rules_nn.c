/* Gradient rules: convolution, pooling, normalization, losses, recurrent
 * layers and Resize, mostly through the dedicated gradient ops (whose
 * kernels map onto cuDNN's backward calls on the GPU). */
#include "ad_impl.h"
#include "rules_util.h"


static lt_node *grad_node(lt_ad *c, const lt_node *n, lt_op op, int nin, lt_ival *const *ins, int nout)
{
    lt_node *k = lt_ad_node(c, op, nin, nout);
    if (!k)
        return NULL;
    for (int i = 0; i < nin; i++)
        k->in[i] = ins[i];
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    return k;
}

static lt_ival *arg(const lt_node *n, lt_ival *const *in, int i) { return i < n->nin ? in[i] : NULL; }

/* sum of g over every axis but the channel axis 1: a bias's gradient */
static lt_ival *channel_sum(lt_ad *c, lt_ival *g)
{
    int r = g->type.rank;
    int64_t axes[LT_MAX_RANK];
    int k = 0;
    for (int i = 0; i < r; i++)
        if (i != 1)
            axes[k++] = i;
    lt_ival *axv = lt_ad_ints(c, k, axes);
    lt_node *s = lt_ad_node(c, LT_OP_REDUCE_SUM, 2, 1);
    if (!s || !axv)
        return NULL;
    s->in[0] = g;
    s->in[1] = axv;
    lt_ad_attr_int(c, s, "keepdims", 0);
    lt_ad_infer(c, s);
    return s->out[0];
}

static lt_status r_conv(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    bool t = n->op == LT_OP_CONV_TRANSPOSE;
    if (G->type.rank < 0)
        return lt_ad_fail(c, n, "needs a known rank to be differentiated");
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0)) {
        lt_ival *ins[3] = {G, in[1], in[0]};
        lt_node *k = grad_node(c, n, t ? LT_OP_CONV_TRANSPOSE_GRAD_DATA : LT_OP_CONV_GRAD_DATA, 3, ins, 1);
        s = k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
    }
    if (s == LT_OK && lt_ad_wants(c, n, 1)) {
        lt_ival *ins[3] = {G, in[0], in[1]};
        lt_node *k = grad_node(c, n, t ? LT_OP_CONV_TRANSPOSE_GRAD_FILTER : LT_OP_CONV_GRAD_FILTER, 3, ins, 1);
        s = k ? ACC(1, k->out[0]) : LT_ERR_NOMEM;
    }
    if (s == LT_OK && n->nin > 2 && lt_ad_wants(c, n, 2))
        s = ACC(2, channel_sum(c, G));
    return s;
}

static lt_status r_pool(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    lt_op op = n->op == LT_OP_MAX_POOL ? LT_OP_MAX_POOL_GRAD
               : n->op == LT_OP_AVERAGE_POOL ? LT_OP_AVERAGE_POOL_GRAD
                                             : LT_OP_LP_POOL_GRAD;
    lt_ival *ins[3] = {G, in[0], out[0]};
    lt_node *k = grad_node(c, n, op, op == LT_OP_LP_POOL_GRAD ? 3 : 2, ins, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

static lt_status r_global_pool(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                               lt_ival *const *dout)
{
    lt_ival *x = in[0];
    lt_ival *ge = lt_ad_op2(c, LT_OP_EXPAND, G, lt_ad_op1(c, LT_OP_SHAPE, x));
    if (n->op == LT_OP_GLOBAL_MAX_POOL) {
        /* the values equal to the maximum share its gradient evenly, as
         * ReduceMax's do (and torch's amax over the spatial axes) */
        int r = x->type.rank;
        if (r < 3)
            return lt_ad_fail(c, n, "GlobalMaxPool of unknown rank cannot be differentiated");
        lt_ival *ye = lt_ad_op2(c, LT_OP_EXPAND, out[0], lt_ad_op1(c, LT_OP_SHAPE, x));
        lt_ival *mask = lt_ad_cast(c, lt_ad_op2(c, LT_OP_EQUAL, x, ye), lt_ad_float_dtype(x));
        lt_ival *ties = lt_ad_reduce_tail(c, LT_OP_REDUCE_SUM, mask, 2);
        if (!ties)
            return LT_ERR_NOMEM;
        return ACC(0, lt_ad_op2(c, LT_OP_DIV, lt_ad_op2(c, LT_OP_MUL, mask, ge), ties));
    }
    lt_ival *cnt = lt_ad_op2(c, LT_OP_DIV, lt_ad_op1(c, LT_OP_SIZE, x), lt_ad_op1(c, LT_OP_SIZE, out[0]));
    return ACC(0, lt_ad_div_count(c, ge, cnt));
}

/* LayerNormalization's Mean and InvStdDev outputs, where the loss reads
 * them: over the M normalized values, dMean/dx = 1/M and
 * dInvStdDev/dx = -InvStdDev^3 (x - Mean) / M */
static lt_status layer_norm_stats_grad(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                       lt_ival *const *dout)
{
    lt_ival *x = in[0], *gm = n->nout > 1 ? dout[1] : NULL, *gi = n->nout > 2 ? dout[2] : NULL;
    if ((!gm && !gi) || !lt_ad_wants(c, n, 0))
        return LT_OK;
    lt_ival *stat = gm ? out[1] : out[2];
    lt_ival *cnt = lt_ad_op2(c, LT_OP_DIV, lt_ad_op1(c, LT_OP_SIZE, x), lt_ad_op1(c, LT_OP_SIZE, stat));
    lt_ival *d = NULL;
    if (gm)
        d = gm;
    if (gi) {
        lt_ival *mean = n->nout > 1 ? out[1] : NULL;
        if (!mean) { /* the node was not asked for Mean: x's, again */
            int r = x->type.rank;
            int64_t ax = lt_attr_int(n, "axis", -1);
            if (r < 1)
                return lt_ad_fail(c, n, "LayerNormalization of unknown rank: no gradient through InvStdDev");
            mean = lt_ad_reduce_tail(c, LT_OP_REDUCE_MEAN, x, (int)(ax < 0 ? ax + r : ax));
            if (!mean)
                return lt_ad_fail(c, n, "axis %lld does not fit rank %d", (long long)ax, r);
        }
        lt_ival *inv = out[2], *xc = lt_ad_op2(c, LT_OP_SUB, x, lt_ad_cast(c, mean, lt_ad_float_dtype(x)));
        lt_ival *inv3 = lt_ad_op2(c, LT_OP_MUL, inv, lt_ad_op2(c, LT_OP_MUL, inv, inv));
        lt_ival *t = lt_ad_op1(c, LT_OP_NEG, lt_ad_op2(c, LT_OP_MUL, gi, inv3));
        t = lt_ad_op2(c, LT_OP_MUL, lt_ad_cast(c, t, lt_ad_float_dtype(x)), xc);
        d = d ? lt_ad_op2(c, LT_OP_ADD, lt_ad_cast(c, d, lt_ad_float_dtype(x)), t) : t;
    }
    d = lt_ad_cast(c, d, lt_ad_float_dtype(x));
    lt_ival *full = lt_ad_op2(c, LT_OP_EXPAND, d, lt_ad_op1(c, LT_OP_SHAPE, x));
    return ACC(0, lt_ad_div_count(c, full, cnt));
}

/* normalizations: (dy, x, scale[, bias, mean, var]) -> dx, dscale, dbias */
/* An inference-mode BatchNormalization's computed mean and variance
 * (lt_ad_input_nondiff): y = scale (x - mean) / sqrt(var + eps) + B per
 * channel, so dmean = -scale dB / sqrt(var + eps) and dvar = -scale
 * dscale / (2 (var + eps)), from the sums k (BatchNormalizationGrad)
 * made: dscale = sum(dy (x - mean) / sqrt(var + eps)), dB = sum(dy). */
static lt_status bn_stats_grad(lt_ad *c, const lt_node *n, lt_ival *const *in, const lt_node *k)
{
    lt_ival *scale = lt_ad_arg(n, in, 1), *var = lt_ad_arg(n, in, 4);
    double eps = lt_attr_float(n, "epsilon", 1e-5);
    lt_ival *ve = var ? OP2(ADD, var, lt_ad_scalar_like(c, var, eps)) : NULL;
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 3)) {
        lt_ival *r = ve ? OP1(RECIPROCAL, OP1(SQRT, ve)) : NULL;
        s = ACC(3, r && scale && k->out[2] ? OP1(NEG, OP2(MUL, OP2(MUL, scale, k->out[2]), r)) : NULL);
    }
    if (s == LT_OK && lt_ad_wants(c, n, 4)) {
        lt_ival *h = ve ? OP2(DIV, lt_ad_scalar_like(c, var, -0.5), ve) : NULL;
        s = ACC(4, h && scale && k->out[1] ? OP2(MUL, OP2(MUL, scale, k->out[1]), h) : NULL);
    }
    return s;
}

static lt_status r_norm(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    lt_op op;
    int nin;
    lt_ival *ins[6] = {G, in[0], arg(n, in, 1), arg(n, in, 2), arg(n, in, 3), arg(n, in, 4)};
    switch (n->op) {
    case LT_OP_BATCH_NORMALIZATION: op = LT_OP_BATCH_NORM_GRAD; nin = 6; break;
    case LT_OP_LAYER_NORMALIZATION: op = LT_OP_LAYER_NORM_GRAD; nin = 3; break;
    case LT_OP_INSTANCE_NORMALIZATION: op = LT_OP_INSTANCE_NORM_GRAD; nin = 3; break;
    case LT_OP_GROUP_NORMALIZATION: op = LT_OP_GROUP_NORM_GRAD; nin = 4; break;
    default: return lt_ad_fail(c, n, "no gradient rule");
    }
    lt_node *k = grad_node(c, n, op, nin, ins, 3);
    if (!k)
        return LT_ERR_NOMEM;
    /* the grad kernel only reads training_mode (lt_ad_bn_training) */
    if (op == LT_OP_BATCH_NORM_GRAD && n->opset < 14 && lt_ad_bn_training(n))
        lt_ad_attr_int(c, k, "training_mode", 1);
    lt_status s = ACC(0, k->out[0]);
    if (s == LT_OK)
        s = ACC(1, k->out[1]);
    if (s == LT_OK)
        s = ACC(2, k->out[2]);
    if (s == LT_OK && op == LT_OP_BATCH_NORM_GRAD && (lt_ad_wants(c, n, 3) || lt_ad_wants(c, n, 4)))
        s = bn_stats_grad(c, n, in, k);
    if (s == LT_OK && n->op == LT_OP_LAYER_NORMALIZATION)
        s = layer_norm_stats_grad(c, n, in, out, dout);
    return s;
}

static lt_status r_lrn(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                       lt_ival *const *dout)
{
    lt_ival *ins[2] = {G, in[0]};
    lt_node *k = grad_node(c, n, LT_OP_LRN_GRAD, 2, ins, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

static lt_status r_loss(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    lt_status s = LT_OK;
    if (G) {
        lt_ival *ins[4] = {G, in[0], in[1], arg(n, in, 2)};
        lt_node *k = grad_node(c, n, n->op == LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD,
                               ins[3] ? 4 : 3, ins, 1);
        s = k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
    }
    /* the log_prob output of SoftmaxCrossEntropyLoss is LogSoftmax over axis 1 */
    if (s == LT_OK && n->op == LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS && n->nout > 1 && dout[1]) {
        lt_node *k = lt_ad_node(c, LT_OP_LOG_SOFTMAX_GRAD, 2, 1);
        if (!k)
            return LT_ERR_NOMEM;
        k->in[0] = dout[1];
        k->in[1] = out[1];
        lt_ad_attr_int(c, k, "axis", 1);
        k->opset = 13;
        lt_ad_infer(c, k);
        s = ACC(0, k->out[0]);
    }
    return s;
}

static bool encloses(const lt_block *outer, const lt_block *b)
{
    for (; b; b = b->parent)
        if (b == outer)
            return true;
    return false;
}

/* The emitted forward node gets one more output at index `at`, after the
 * ONNX ones: a workspace with what the forward computed and the gradient
 * needs again (a recurrence's gate inputs and states of every step), which
 * the gradient node takes as its last input. NULL (the gradient computes it
 * again) when the forward node is not at hand. */
static lt_ival *forward_workspace(lt_ad *c, const lt_node *n, lt_ival *const *out, int at)
{
    lt_node *f = NULL;
    for (int j = 0; j < n->nout && !f; j++)
        if (out[j])
            f = out[j]->def;
    if (!f || f->op != n->op || f->nout > at || !encloses(f->block, c->out))
        return NULL;
    lt_ival **o = lt_ir_alloc(c->m, sizeof *o * (size_t)(at + 1));
    char nm[64];
    snprintf(nm, sizeof nm, "%s_workspace%d", lt_op_names[n->op], c->counter++);
    lt_ival *v = o ? lt_ival_new(c->m, f->block, nm) : NULL;
    if (!v)
        return NULL;
    for (int j = 0; j < f->nout; j++)
        o[j] = f->out[j];
    o[at] = v;
    v->def = f;
    f->out = o;
    f->nout = at + 1;
    lt_ad_infer(c, f);
    return v;
}

static lt_status r_recurrent(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                             lt_ival *const *dout)
{
    bool lstm = n->op == LT_OP_LSTM;
    int nfwd = lstm ? 8 : 6, nd = lstm ? 3 : 2;
    lt_ival *ins[12];
    for (int i = 0; i < nfwd; i++)
        ins[i] = arg(n, in, i);
    for (int j = 0; j < nd; j++)
        ins[nfwd + j] = j < n->nout ? dout[j] : NULL;
    ins[nfwd + nd] = forward_workspace(c, n, out, nd);
    lt_op op = n->op == LT_OP_RNN ? LT_OP_RNN_GRAD : n->op == LT_OP_GRU ? LT_OP_GRU_GRAD : LT_OP_LSTM_GRAD;
    lt_node *k = grad_node(c, n, op, nfwd + nd + (ins[nfwd + nd] ? 1 : 0), ins, lstm ? 7 : 5);
    if (!k)
        return LT_ERR_NOMEM;
    /* outputs: dX, dW, dR, dB, dh0[, dc0, dP] for inputs 0, 1, 2, 3, 5[, 6, 7] */
    static const int target[7] = {0, 1, 2, 3, 5, 6, 7};
    for (int j = 0; j < k->nout; j++) {
        if (!lt_ad_wants(c, n, target[j])) {
            k->out[j] = NULL;
            continue;
        }
        lt_status s = ACC(target[j], k->out[j]);
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

static lt_status r_resize(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    lt_ival *ins[5] = {G, in[0], arg(n, in, 1), arg(n, in, 2), arg(n, in, 3)};
    lt_node *k = grad_node(c, n, LT_OP_RESIZE_GRAD, 5, ins, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

void lt_ad_register_nn(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_CONV] = r_conv;
    t[LT_OP_CONV_TRANSPOSE] = r_conv;
    t[LT_OP_MAX_POOL] = r_pool;
    t[LT_OP_AVERAGE_POOL] = r_pool;
    t[LT_OP_LP_POOL] = r_pool;
    t[LT_OP_GLOBAL_AVERAGE_POOL] = r_global_pool;
    t[LT_OP_GLOBAL_MAX_POOL] = r_global_pool;
    t[LT_OP_BATCH_NORMALIZATION] = r_norm;
    t[LT_OP_LAYER_NORMALIZATION] = r_norm;
    t[LT_OP_INSTANCE_NORMALIZATION] = r_norm;
    t[LT_OP_GROUP_NORMALIZATION] = r_norm;
    t[LT_OP_LRN] = r_lrn;
    t[LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = r_loss;
    t[LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = r_loss;
    t[LT_OP_RNN] = r_recurrent;
    t[LT_OP_GRU] = r_recurrent;
    t[LT_OP_LSTM] = r_recurrent;
    t[LT_OP_RESIZE] = r_resize;
    nd[LT_OP_BATCH_NORMALIZATION] = (1u << 3) | (1u << 4);
    nd[LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = (1u << 1) | (1u << 2);
    nd[LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = (1u << 1) | (1u << 2);
    nd[LT_OP_RNN] = 1u << 4;
    nd[LT_OP_GRU] = 1u << 4;
    nd[LT_OP_LSTM] = 1u << 4;
    nd[LT_OP_RESIZE] = ~1u;
}
