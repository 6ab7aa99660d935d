/* Gradient rules: Attention, through the AttentionGrad op (which recomputes
 * the probabilities row by row rather than keeping them from the forward).
 * Q, K, V, a float attn_mask and the past key/value cache are
 * differentiated; the present_key/present_value outputs' adjoints flow
 * back through the same op. RotaryEmbedding through RotaryEmbeddingGrad,
 * to X and both caches; TensorScatter through TensorScatterGrad;
 * CausalConvWithState and LinearAttention through their gradient ops,
 * from the output's and the carried state's adjoints to every float input. */
#include "ad_impl.h"

static lt_status r_attention(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                             lt_ival *const *dout)
{
    (void)out;
    if (n->nout > 3 && dout[3])
        return lt_ad_fail(c, n, "no gradient flows through qk_matmul_output (a debugging output); "
                                "use Y, present_key and present_value");
    bool want[6];
    bool any = false;
    for (int i = 0; i < 6; i++) {
        want[i] = i < n->nin && in[i] && lt_ad_wants(c, n, i);
        any |= want[i];
    }
    lt_ival *dpk = n->nout > 1 ? dout[1] : NULL, *dpv = n->nout > 2 ? dout[2] : NULL;
    if (!any || (!dout[0] && !dpk && !dpv))
        return LT_OK;
    lt_node *k = lt_ad_node(c, LT_OP_ATTENTION_GRAD, 10, 6);
    if (!k)
        return LT_ERR_NOMEM;
    k->in[0] = dout[0];
    for (int i = 0; i < 7; i++)
        k->in[1 + i] = i < n->nin ? in[i] : NULL;
    k->in[8] = dpk;
    k->in[9] = dpv;
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    return lt_ad_accum_wanted(c, n, k, want, 6);
}

static lt_status r_rotary(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    (void)out;
    bool want[3];
    for (int i = 0; i < 3; i++)
        want[i] = in[i] && lt_ad_wants(c, n, i);
    if (!dout[0] || (!want[0] && !want[1] && !want[2]))
        return LT_OK;
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_ROTARY_EMBEDDING_GRAD, 1, dout, 4, in, 3);
    if (!k)
        return LT_ERR_NOMEM;
    return lt_ad_accum_wanted(c, n, k, want, 3);
}

static lt_status r_tensor_scatter(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                  lt_ival *const *dout)
{
    (void)out;
    bool want[2] = {lt_ad_wants(c, n, 0), lt_ad_wants(c, n, 1)};
    if (!dout[0] || (!want[0] && !want[1]))
        return LT_OK;
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_TENSOR_SCATTER_GRAD, 1, dout, 3, in, 2);
    if (!k)
        return LT_ERR_NOMEM;
    return lt_ad_accum_wanted(c, n, k, want, 2);
}

static lt_status r_causal_conv(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                               lt_ival *const *dout)
{
    (void)out;
    bool want[4], any = false;
    for (int i = 0; i < 4; i++) {
        want[i] = i < n->nin && in[i] && lt_ad_wants(c, n, i);
        any |= want[i];
    }
    lt_ival *dst = n->nout > 1 ? dout[1] : NULL;
    if (!any || (!dout[0] && !dst))
        return LT_OK;
    lt_ival *dy[2] = {dout[0], dst};
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_CAUSAL_CONV_WITH_STATE_GRAD, 2, dy, 4, in, 4);
    if (!k)
        return LT_ERR_NOMEM;
    return lt_ad_accum_wanted(c, n, k, want, 4);
}

static lt_status r_linear_attention(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                    lt_ival *const *dout)
{
    (void)out;
    bool want[6], any = false;
    for (int i = 0; i < 6; i++) {
        want[i] = i < n->nin && in[i] && lt_ad_wants(c, n, i);
        any |= want[i];
    }
    lt_ival *dst = n->nout > 1 ? dout[1] : NULL;
    if (!any || (!dout[0] && !dst))
        return LT_OK;
    lt_ival *dy[2] = {dout[0], dst};
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_LINEAR_ATTENTION_GRAD, 2, dy, 6, in, 6);
    if (!k)
        return LT_ERR_NOMEM;
    return lt_ad_accum_wanted(c, n, k, want, 6);
}

void lt_ad_register_attention(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_ATTENTION] = r_attention;
    nd[LT_OP_ATTENTION] = 1u << 6; /* nonpad_kv_seqlen */
    t[LT_OP_ROTARY_EMBEDDING] = r_rotary;
    nd[LT_OP_ROTARY_EMBEDDING] = 1u << 3; /* position_ids */
    t[LT_OP_TENSOR_SCATTER] = r_tensor_scatter;
    nd[LT_OP_TENSOR_SCATTER] = 1u << 2; /* write_indices */
    t[LT_OP_CAUSAL_CONV_WITH_STATE] = r_causal_conv;
    t[LT_OP_LINEAR_ATTENTION] = r_linear_attention;
}
