/* Shape inference rules: Attention (opsets 23-25), RotaryEmbedding
 * (opset 23), the KV-cache update TensorScatter (opset 24), the
 * state-space models' CausalConvWithState and LinearAttention (opset 27),
 * FlexAttention (ai.onnx.preview 1) and their gradient ops. */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

static lt_dim unknown_dim(void) { return (lt_dim){.v = -1, .sym = -1}; }

static bool known(lt_dim d) { return d.sym < 0 && d.v >= 0; }

/* a / k when a is a known multiple of k */
static lt_dim dim_div(lt_dim a, int64_t k)
{
    return known(a) && k > 0 && a.v % k == 0 ? (lt_dim){.v = a.v / k, .sym = -1} : unknown_dim();
}

static lt_dim dim_mul(lt_dim a, int64_t k)
{
    if (k == 1)
        return a;
    return known(a) && k > 0 ? (lt_dim){.v = a.v * k, .sym = -1} : unknown_dim();
}

static lt_dim dim_add(lt_dim a, lt_dim b)
{
    if (known(b) && b.v == 0)
        return a;
    return known(a) && known(b) ? (lt_dim){.v = a.v + b.v, .sym = -1} : unknown_dim();
}

static void set_out(lt_node *n, int o, lt_dtype dt, int rank, const lt_dim *dims)
{
    if (o >= n->nout || !n->out[o])
        return;
    lt_type_unknown(&n->out[o]->type, dt, rank);
    for (int d = 0; d < rank; d++)
        n->out[o]->type.dims[d] = dims[d];
}

/* Y, present_key, present_value, qk_matmul_output from Q, K, V and the past
 * (inputs from base on). */
static lt_status infer_attention(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *q = in_type(n, 0), *k = in_type(n, 1), *v = in_type(n, 2), *pk = in_type(n, 4);
    if (!q || !k || !v)
        return lt_infer_fail(c, n, "needs Q, K and V");
    lt_dtype dt = q->dtype;
    for (int o = 0; o < 4; o++)
        set_out(n, o, o == 2 ? v->dtype : o == 1 ? k->dtype : dt, -1, NULL);
    if (q->rank < 0 || k->rank < 0 || v->rank < 0)
        return LT_OK;
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return lt_infer_fail(c, n, "Q, K and V must all be 3-D or all 4-D (ranks %d, %d, %d)", q->rank, k->rank,
                             v->rank);
    lt_dim B = q->dims[0], Hq, Hkv, S, L, D, Dv;
    if (q->rank == 3) {
        int64_t hq = lt_attr_int(n, "q_num_heads", 0), hkv = lt_attr_int(n, "kv_num_heads", 0);
        if (hq <= 0 || hkv <= 0)
            return lt_infer_fail(c, n, "3-D inputs need q_num_heads and kv_num_heads (> 0)");
        if (hq % hkv)
            return lt_infer_fail(c, n, "q_num_heads %lld is not a multiple of kv_num_heads %lld", (long long)hq,
                                 (long long)hkv);
        Hq = (lt_dim){.v = hq, .sym = -1};
        Hkv = (lt_dim){.v = hkv, .sym = -1};
        S = q->dims[1];
        L = k->dims[1];
        D = dim_div(k->dims[2], hkv);
        Dv = dim_div(v->dims[2], hkv);
        lt_dim y[3] = {B, S, dim_mul(Dv, hq)};
        set_out(n, 0, dt, 3, y);
    } else {
        Hq = q->dims[1];
        S = q->dims[2];
        Hkv = k->dims[1];
        L = k->dims[2];
        D = k->dims[3];
        Dv = v->dims[3];
        if (known(Hq) && known(Hkv) && (Hkv.v == 0 || Hq.v % Hkv.v))
            return lt_infer_fail(c, n, "Q's %lld heads are not a multiple of K's %lld", (long long)Hq.v,
                                 (long long)Hkv.v);
        lt_dim y[4] = {B, Hq, S, Dv};
        set_out(n, 0, dt, 4, y);
    }
    lt_dim P = {.v = 0, .sym = -1};
    if (pk) {
        if (pk->rank >= 0 && pk->rank != 4)
            return lt_infer_fail(c, n, "past_key must be 4-D, got rank %d", pk->rank);
        P = pk->rank == 4 ? pk->dims[2] : unknown_dim();
    }
    lt_dim T = dim_add(L, P);
    lt_dim pkd[4] = {B, Hkv, T, D}, pvd[4] = {B, Hkv, T, Dv}, qkd[4] = {B, Hq, S, T};
    set_out(n, 1, k->dtype, 4, pkd);
    set_out(n, 2, v->dtype, 4, pvd);
    set_out(n, 3, dt, 4, qkd);
    return LT_OK;
}

/* A gradient op's outputs 0..m-1 typed like its inputs k..k+m-1 (the
 * forward inputs after its k adjoints); an absent input leaves it unknown. */
lt_status lt_infer_outputs_like_inputs(lt_node *n, int m, int k)
{
    for (int o = 0; o < m && o < n->nout; o++) {
        if (!n->out[o])
            continue;
        const lt_type *t = in_type(n, o + k);
        if (t)
            n->out[o]->type = *t;
        else
            lt_type_unknown(&n->out[o]->type, LT_UNDEFINED, -1);
    }
    return LT_OK;
}

/* (dY, Q, K, V, attn_mask, past_key, past_value, ...) -> dQ, dK, dV,
 * dattn_mask, dpast_key, dpast_value: each like its input */
static lt_status infer_attention_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    return lt_infer_outputs_like_inputs(n, 6, 1);
}

/* RotaryEmbedding: Y like X, which is 3-D (with num_heads) or 4-D */
static lt_status infer_rotary(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return lt_infer_fail(c, n, "needs X, cos_cache and sin_cache");
    if (x->rank >= 0 && x->rank != 3 && x->rank != 4)
        return lt_infer_fail(c, n, "X must be 3-D or 4-D, got rank %d", x->rank);
    if (x->rank == 3 && lt_attr_int(n, "num_heads", 0) <= 0)
        return lt_infer_fail(c, n, "3-D X needs num_heads (> 0)");
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* TensorScatter: present_cache like past_cache */
static lt_status infer_tensor_scatter(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *p = in_type(n, 0), *u = in_type(n, 1);
    if (!p || !u)
        return lt_infer_fail(c, n, "needs past_cache and update");
    if (p->rank >= 0 && u->rank >= 0 && p->rank != u->rank)
        return lt_infer_fail(c, n, "past_cache (rank %d) and update (rank %d) differ in rank", p->rank, u->rank);
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* gradient ops: output o like input o + 1 (RotaryEmbeddingGrad: dX, dcos,
 * dsin; TensorScatterGrad: dpast, dupdate) */
static lt_status infer_rotary_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    return lt_infer_outputs_like_inputs(n, 3, 1);
}

/* CausalConvWithState: Y like X, present_state (batch, channels, k - 1) */
static lt_status infer_causal_conv(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 1);
    if (!x || !w)
        return lt_infer_fail(c, n, "needs input and weight");
    if (x->rank >= 0 && x->rank != 3)
        return lt_infer_fail(c, n, "input must be (batch, channels, length), got rank %d", x->rank);
    if (w->rank >= 0 && w->rank != 3)
        return lt_infer_fail(c, n, "weight must be (channels, 1, k), got rank %d", w->rank);
    lt_infer_same(n, 0, 0);
    if (n->nout > 1 && n->out[1]) {
        lt_type_unknown(&n->out[1]->type, x->dtype, 3);
        if (x->rank == 3) {
            n->out[1]->type.dims[0] = x->dims[0];
            n->out[1]->type.dims[1] = x->dims[1];
        }
        if (w->rank == 3 && known(w->dims[2]) && w->dims[2].v >= 1)
            n->out[1]->type.dims[2] = (lt_dim){.v = w->dims[2].v - 1, .sym = -1};
    }
    return LT_OK;
}

/* (dY, dpresent, X, W, B, past_state) -> dX, dW, dB, dpast: like inputs 2.. */
static lt_status infer_causal_conv_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    return lt_infer_outputs_like_inputs(n, 4, 2);
}

/* LinearAttention: output (B, T, q_num_heads * d_v), present_state
 * (B, kv_num_heads, d_k, d_v) */
static lt_status infer_linear_attention(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *q = in_type(n, 0), *v = in_type(n, 2), *ps = in_type(n, 3);
    if (!q || !in_type(n, 1) || !v)
        return lt_infer_fail(c, n, "needs query, key and value");
    int64_t hq = lt_attr_int(n, "q_num_heads", 0), hkv = lt_attr_int(n, "kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || hq % hkv)
        return lt_infer_fail(c, n, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                             (long long)hq, (long long)hkv);
    if (q->rank >= 0 && q->rank != 3)
        return lt_infer_fail(c, n, "query must be (B, T, heads * d_k), got rank %d", q->rank);
    lt_dim dv = v->rank == 3 ? dim_div(v->dims[2], hkv) : unknown_dim();
    lt_dim dk = q->rank == 3 ? dim_div(q->dims[2], hq) : unknown_dim();
    if (n->nout > 0 && n->out[0]) {
        lt_dim y[3] = {q->rank == 3 ? q->dims[0] : unknown_dim(), q->rank == 3 ? q->dims[1] : unknown_dim(),
                       dim_mul(dv, hq)};
        set_out(n, 0, q->dtype, 3, y);
    }
    lt_dim s[4] = {q->rank == 3 ? q->dims[0] : unknown_dim(), {.v = hkv, .sym = -1}, dk, dv};
    set_out(n, 1, ps ? ps->dtype : q->dtype, 4, s);
    return LT_OK;
}

/* (dY, dpresent, Q, K, V, past_state, decay, beta) -> like inputs 2.. */
static lt_status infer_linear_attention_grad(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    return lt_infer_outputs_like_inputs(n, 6, 2);
}

/* FlexAttention: (B, Hq, L, V's head size) in V's type; an untyped
 * score_mod/prob_mod parameter gets the scores' type */
static lt_status infer_flex_attention(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *q = in_type(n, 0), *k = in_type(n, 1), *v = in_type(n, 2);
    if (!q || !k || !v)
        return lt_infer_fail(c, n, "needs Q, K and V");
    for (int i = 0; i < 3; i++) {
        const lt_type *t = in_type(n, i);
        if (t->rank >= 0 && t->rank != 4)
            return lt_infer_fail(c, n, "Q, K and V must have rank 4 (input %d has %d)", i, t->rank);
    }
    lt_dim y[4] = {q->rank == 4 ? q->dims[0] : unknown_dim(), q->rank == 4 ? q->dims[1] : unknown_dim(),
                   q->rank == 4 ? q->dims[2] : unknown_dim(), v->rank == 4 ? v->dims[3] : unknown_dim()};
    set_out(n, 0, v->dtype, 4, y);
    int64_t sp = lt_attr_int(n, "softmax_precision", 0);
    lt_dtype cdt = sp ? (lt_dtype)sp : q->dtype == LT_F64 ? LT_F64 : LT_F32;
    for (int r = 0; r < n->nregions; r++) {
        lt_block *b = n->regions[r];
        if (b->nparams == 1 && b->params[0]->type.dtype == LT_UNDEFINED) {
            lt_dim s[4] = {y[0], y[1], y[2], k->rank == 4 ? k->dims[2] : unknown_dim()};
            lt_type_unknown(&b->params[0]->type, cdt, 4);
            for (int d = 0; d < 4; d++)
                b->params[0]->type.dims[d] = s[d];
        }
    }
    return LT_OK;
}

void lt_infer_register_attention(lt_infer_fn *tab)
{
    tab[LT_OP_ATTENTION] = infer_attention;
    tab[LT_OP_ATTENTION_GRAD] = infer_attention_grad;
    tab[LT_OP_ROTARY_EMBEDDING] = infer_rotary;
    tab[LT_OP_ROTARY_EMBEDDING_GRAD] = infer_rotary_grad;
    tab[LT_OP_TENSOR_SCATTER] = infer_tensor_scatter;
    tab[LT_OP_TENSOR_SCATTER_GRAD] = infer_rotary_grad;
    tab[LT_OP_CAUSAL_CONV_WITH_STATE] = infer_causal_conv;
    tab[LT_OP_CAUSAL_CONV_WITH_STATE_GRAD] = infer_causal_conv_grad;
    tab[LT_OP_LINEAR_ATTENTION] = infer_linear_attention;
    tab[LT_OP_LINEAR_ATTENTION_GRAD] = infer_linear_attention_grad;
    tab[LT_OP_FLEX_ATTENTION] = infer_flex_attention;
}
