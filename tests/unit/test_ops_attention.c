/* Attention (opsets 23-25): the fused kernel against a plain reference that
 * builds the whole bias and score tensors the way the spec describes them
 * (reshape to 4-D, concatenate the past, repeat the key heads, add the
 * mask, causal and padding terms, softmax with the fully-masked-row guard);
 * RotaryEmbedding against the rotation written out per pair; the gradient
 * rules of both, of the KV-cache update TensorScatter, CausalConvWithState
 * and LinearAttention against central finite differences in float64. */
#include "rule_fd.h"
#include "ir/infer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference ---- */
typedef struct ref_case {
    int in3d;
    int64_t B, Hq, Hkv, S, L, P, D, Dv;
    int mask_kind; /* 0 none, 1 float, 2 bool */
    int mrank;
    int64_t mdims[4];
    int causal, nonpad, mode, opset;
    double scale, softcap; /* 0: attribute absent */
    int64_t left, right;   /* -1: absent */
} ref_case;

typedef struct ref_out {
    double *y, *pk, *pv, *qk;
} ref_out;

static int64_t numel(int r, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < r; i++)
        n *= d[i];
    return n;
}

/* mask value at (b, h, i, j) of the 4-D broadcast, NAN past its last dim */
static double mask_at(const ref_case *c, const lt_value *m, int64_t b, int64_t h, int64_t i, int64_t j)
{
    int64_t idx4[4] = {b, h, i, j}, off = 0;
    for (int d = 0; d < c->mrank; d++) {
        int64_t n = c->mdims[d], x = idx4[4 - c->mrank + d];
        if (d == c->mrank - 1 && x >= n)
            return NAN;
        off = off * n + (n == 1 ? 0 : x);
    }
    return tu_get(m, off);
}

static ref_out reference(const ref_case *c, lt_value *q, lt_value *k, lt_value *v, lt_value *m, lt_value *pk,
                         lt_value *pv, const int64_t *np)
{
    int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, S = c->S, L = c->L, P = c->P, T = P + L, D = c->D, Dv = c->Dv;
    double *q4 = calloc((size_t)(B * Hq * S * D), sizeof *q4), *k4 = calloc((size_t)(B * Hkv * T * D), sizeof *k4);
    double *v4 = calloc((size_t)(B * Hkv * T * Dv), sizeof *v4);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t d = 0; d < D; d++)
                    q4[((b * Hq + h) * S + i) * D + d] =
                        tu_get(q, c->in3d ? (b * S + i) * Hq * D + h * D + d : ((b * Hq + h) * S + i) * D + d);
        for (int64_t g = 0; g < Hkv; g++)
            for (int64_t j = 0; j < T; j++) {
                for (int64_t d = 0; d < D; d++)
                    k4[((b * Hkv + g) * T + j) * D + d] =
                        j < P         ? tu_get(pk, ((b * Hkv + g) * P + j) * D + d)
                        : c->in3d     ? tu_get(k, (b * L + j - P) * Hkv * D + g * D + d)
                                      : tu_get(k, ((b * Hkv + g) * L + j - P) * D + d);
                for (int64_t d = 0; d < Dv; d++)
                    v4[((b * Hkv + g) * T + j) * Dv + d] =
                        j < P         ? tu_get(pv, ((b * Hkv + g) * P + j) * Dv + d)
                        : c->in3d     ? tu_get(v, (b * L + j - P) * Hkv * Dv + g * Dv + d)
                                      : tu_get(v, ((b * Hkv + g) * L + j - P) * Dv + d);
            }
    }
    ref_out o = {calloc((size_t)(B * Hq * S * Dv), sizeof(double)), k4, v4,
                 calloc((size_t)(B * Hq * S * T), sizeof(double))};
    double scale = c->scale ? c->scale : 1 / sqrt((double)D);
    double *bias = calloc((size_t)T, sizeof *bias), *sc = calloc((size_t)T, sizeof *sc);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            int64_t g = h / (Hq / Hkv); /* numpy.repeat of the key heads */
            for (int64_t i = 0; i < S; i++) {
                int64_t off = c->nonpad ? np[b] - S : P;
                int open = 0;
                for (int64_t j = 0; j < T; j++) {
                    double bj = 0;
                    if (c->mask_kind) {
                        double mv = mask_at(c, m, b, h, i, j);
                        bj = isnan(mv) ? -INFINITY : c->mask_kind == 2 ? (mv != 0 ? 0 : -INFINITY) : mv;
                    }
                    if (c->causal && j > i + off)
                        bj = -INFINITY;
                    if (c->left >= 0 && i + off - j > c->left)
                        bj = -INFINITY;
                    if (c->right >= 0 && j - (i + off) > c->right)
                        bj = -INFINITY;
                    if (c->nonpad && j >= np[b])
                        bj = -INFINITY;
                    bias[j] = bj;
                    open |= bj != -INFINITY;
                    double z = 0;
                    for (int64_t d = 0; d < D; d++)
                        z += q4[((b * Hq + h) * S + i) * D + d] * k4[((b * Hkv + g) * T + j) * D + d];
                    z *= scale;
                    if (c->softcap > 0)
                        z = c->softcap * tanh(z / c->softcap);
                    sc[j] = z;
                }
                double *qk = o.qk + ((b * Hq + h) * S + i) * T, mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < T; j++) {
                    qk[j] = c->mode == 2 ? sc[j] + bias[j] : sc[j];
                    sc[j] += bias[j];
                    mx = fmax(mx, sc[j]);
                }
                for (int64_t j = 0; j < T; j++)
                    sum += (sc[j] = open ? exp(sc[j] - mx) : 0);
                for (int64_t j = 0; j < T; j++) {
                    double p = open ? sc[j] / sum : 0;
                    if (c->mode == 3)
                        qk[j] = p;
                    for (int64_t d = 0; d < Dv; d++) {
                        int64_t yi = c->in3d ? (b * S + i) * Hq * Dv + h * Dv + d : ((b * Hq + h) * S + i) * Dv + d;
                        o.y[yi] += p * v4[((b * Hkv + g) * T + j) * Dv + d];
                    }
                }
            }
        }
    free(q4);
    free(bias);
    free(sc);
    return o;
}

static void set_attrs(tu_graph *g, const ref_case *c)
{
    if (c->in3d) {
        tu_attr_int(g, "q_num_heads", c->Hq);
        tu_attr_int(g, "kv_num_heads", c->Hkv);
    }
    if (c->causal)
        tu_attr_int(g, "is_causal", 1);
    if (c->scale)
        tu_attr_float(g, "scale", (float)c->scale);
    if (c->softcap)
        tu_attr_float(g, "softcap", (float)c->softcap);
    if (c->mode)
        tu_attr_int(g, "qk_matmul_output_mode", c->mode);
    if (c->left >= 0)
        tu_attr_int(g, "left_window_size", c->left);
    if (c->right >= 0)
        tu_attr_int(g, "right_window_size", c->right);
}

static void forward_case(const ref_case *c, uint64_t seed)
{
    int r = c->in3d ? 3 : 4;
    int64_t T = c->P + c->L;
    int64_t qd[4] = {c->B, c->Hq, c->S, c->D}, kd[4] = {c->B, c->Hkv, c->L, c->D}, vd[4] = {c->B, c->Hkv, c->L, c->Dv};
    if (c->in3d) {
        int64_t q3[3] = {c->B, c->S, c->Hq * c->D}, k3[3] = {c->B, c->L, c->Hkv * c->D},
                v3[3] = {c->B, c->L, c->Hkv * c->Dv};
        memcpy(qd, q3, sizeof q3);
        memcpy(kd, k3, sizeof k3);
        memcpy(vd, v3, sizeof v3);
    }
    int64_t pkd[4] = {c->B, c->Hkv, c->P, c->D}, pvd[4] = {c->B, c->Hkv, c->P, c->Dv};
    lt_value *in[7] = {tu_rand(LT_F32, r, qd, -1.5, 1.5, seed), tu_rand(LT_F32, r, kd, -1.5, 1.5, seed + 1),
                       tu_rand(LT_F32, r, vd, -1, 1, seed + 2)};
    if (c->mask_kind == 1)
        in[3] = tu_rand(LT_F32, c->mrank, c->mdims, -2, 1, seed + 3);
    if (c->mask_kind == 2) {
        int64_t n = numel(c->mrank, c->mdims);
        double *bits = malloc((size_t)n * sizeof *bits);
        for (int64_t e = 0; e < n; e++)
            bits[e] = (e * 7 + 3) % 5 != 0; /* mostly attend; row 1 of case B is fully masked below */
        if (c->mrank == 2 && c->mdims[0] > 1)
            for (int64_t j = 0; j < c->mdims[1]; j++)
                bits[c->mdims[1] + j] = 0;
        in[3] = tu_from(LT_BOOL, c->mrank, c->mdims, bits);
        free(bits);
    }
    if (c->P) {
        in[4] = tu_rand(LT_F32, 4, pkd, -1.5, 1.5, seed + 4);
        in[5] = tu_rand(LT_F32, 4, pvd, -1, 1, seed + 5);
    }
    int64_t npv[8] = {0};
    if (c->nonpad) {
        for (int64_t b = 0; b < c->B; b++)
            npv[b] = c->L - b; /* b = 1 pads the last key */
        double nd[8];
        for (int64_t b = 0; b < c->B; b++)
            nd[b] = (double)npv[b];
        int64_t bd[1] = {c->B};
        in[6] = tu_from(LT_I64, 1, bd, nd);
    }
    ref_out want = reference(c, in[0], in[1], in[2], in[3], in[4], in[5], npv);
    tu_graph g = tu_single(LT_OP_ATTENTION, c->opset, 7, 4);
    for (int i = 3; i < 7; i++)
        if (!in[i])
            tu_omit_input(&g, i);
    set_attrs(&g, c);
    lt_value *out[4] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int64_t ny = c->B * c->Hq * c->S * c->Dv;
    tu_assert_close(out[0], want.y, ny, 1e-5, 1e-6, seed);
    tu_assert_close(out[1], want.pk, c->B * c->Hkv * T * c->D, 1e-7, 0, seed);
    tu_assert_close(out[2], want.pv, c->B * c->Hkv * T * c->Dv, 1e-7, 0, seed);
    int64_t nq = c->B * c->Hq * c->S * T;
    for (int64_t e = 0; e < nq; e++) /* -inf entries of mode 2 compare as themselves */
        if (isinf(want.qk[e])) {
            assert_true(isinf(tu_get(out[3], e)) && tu_get(out[3], e) < 0);
            want.qk[e] = 0;
            lt_tensor_set_f64(&out[3]->t, e, 0);
        }
    tu_assert_close(out[3], want.qk, nq, 1e-5, 1e-6, seed);
    for (int i = 0; i < 7; i++)
        lt_value_free(in[i]);
    for (int i = 0; i < 4; i++)
        lt_value_free(out[i]);
    free(want.y);
    free(want.pk);
    free(want.pv);
    free(want.qk);
    tu_free(&g);
}

static void forward(void **state)
{
    (void)state;
    const ref_case cases[] = {
        /* 3-D GQA, a past, a float (heads, q, keys) mask shorter than the keys, causal, softcap, scale */
        {.in3d = 1, .B = 2, .Hq = 4, .Hkv = 2, .S = 3, .L = 4, .P = 2, .D = 3, .Dv = 2, .mask_kind = 1, .mrank = 3,
         .mdims = {4, 3, 5}, .causal = 1, .mode = 2, .opset = 23, .scale = 0.7, .softcap = 1.5, .left = -1,
         .right = -1},
        /* 4-D MHA, a boolean (q, keys) mask with a fully masked row, mode 3 */
        {.B = 2, .Hq = 2, .Hkv = 2, .S = 3, .L = 5, .D = 4, .Dv = 3, .mask_kind = 2, .mrank = 2, .mdims = {3, 5},
         .mode = 3, .opset = 23, .left = -1, .right = -1},
        /* 4-D MQA, causal over an external cache (nonpad_kv_seqlen), mode 1 with softcap */
        {.B = 2, .Hq = 3, .Hkv = 1, .S = 2, .L = 5, .D = 2, .Dv = 4, .causal = 1, .nonpad = 1, .mode = 1,
         .opset = 24, .softcap = 2, .left = -1, .right = -1},
        /* 3-D, a sliding window (opset 25) over a past, float (batch, 1, q, keys) mask */
        {.in3d = 1, .B = 2, .Hq = 2, .Hkv = 2, .S = 3, .L = 3, .P = 3, .D = 2, .Dv = 2, .mask_kind = 1, .mrank = 4,
         .mdims = {2, 1, 3, 6}, .mode = 0, .opset = 25, .left = 2, .right = 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        forward_case(&cases[i], 300 + 10 * i);
}

/* bad inputs give one line naming what is wrong */
static void refusals(void **state)
{
    (void)state;
    int64_t qd[3] = {1, 2, 6}, kd[3] = {1, 3, 4};
    struct {
        int64_t hq, hkv;
        const char *msg;
    } cases[] = {{0, 0, "q_num_heads"}, {2, 2, "head size"}, {3, 2, "multiple"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lt_value *in[3] = {tu_rand(LT_F32, 3, qd, -1, 1, 1), tu_rand(LT_F32, 3, kd, -1, 1, 2),
                           tu_rand(LT_F32, 3, kd, -1, 1, 3)};
        tu_graph g = tu_single(LT_OP_ATTENTION, 23, 3, 1);
        if (cases[c].hq) {
            tu_attr_int(&g, "q_num_heads", cases[c].hq);
            tu_attr_int(&g, "kv_num_heads", cases[c].hkv);
        }
        lt_value *out[1] = {NULL};
        lt_err err;
        lt_status s = tu_run(&g, in, out, &err);
        if (s == LT_OK || !strstr(err.msg, cases[c].msg) || !strstr(err.msg, "Attention"))
            fail_msg("case %zu: expected a refusal naming Attention and \"%s\", got %s", c, cases[c].msg,
                     s == LT_OK ? "success" : err.msg);
        for (int i = 0; i < 3; i++)
            lt_value_free(in[i]);
        tu_free(&g);
    }
}

/* RotaryEmbedding, interleaved, partial (rotary_embedding_dim 4 of head
 * size 6), 3-D with num_heads 2, position_ids repeating a row */
static void rotary_forward(void **state)
{
    (void)state;
    const uint64_t seed = 77;
    int64_t xd[3] = {2, 3, 12}, cd[2] = {5, 2}, pd[2] = {2, 3};
    const double pos[6] = {0, 4, 4, 1, 2, 3};
    lt_value *in[4] = {tu_rand(LT_F32, 3, xd, -2, 2, seed), tu_rand(LT_F32, 2, cd, -1, 1, seed + 1),
                       tu_rand(LT_F32, 2, cd, -1, 1, seed + 2), tu_from(LT_I64, 2, pd, pos)};
    double want[72];
    for (int64_t e = 0; e < 72; e++)
        want[e] = tu_get(in[0], e);
    for (int64_t bs = 0; bs < 6; bs++)
        for (int64_t h = 0; h < 2; h++)
            for (int64_t q = 0; q < 2; q++) {
                int64_t o = bs * 12 + h * 6, row = (int64_t)pos[bs];
                double c = tu_get(in[1], row * 2 + q), sn = tu_get(in[2], row * 2 + q);
                double x1 = tu_get(in[0], o + 2 * q), x2 = tu_get(in[0], o + 2 * q + 1);
                want[o + 2 * q] = c * x1 - sn * x2;
                want[o + 2 * q + 1] = sn * x1 + c * x2;
            }
    tu_graph g = tu_single(LT_OP_ROTARY_EMBEDDING, 23, 4, 1);
    tu_attr_int(&g, "num_heads", 2);
    tu_attr_int(&g, "interleaved", 1);
    tu_attr_int(&g, "rotary_embedding_dim", 4);
    lt_value *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_assert_close(out[0], want, 72, 1e-6, 1e-7, seed);
    lt_value_free(out[0]);
    tu_free(&g);
    /* a position past the caches is refused by name */
    lt_tensor_set_f64(&in[3]->t, 2, 5);
    g = tu_single(LT_OP_ROTARY_EMBEDDING, 23, 4, 1);
    tu_attr_int(&g, "num_heads", 2);
    tu_attr_int(&g, "rotary_embedding_dim", 4);
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "position_ids"));
    tu_free(&g);
    for (int i = 0; i < 4; i++)
        lt_value_free(in[i]);
}

/* FlexAttention without score_mod/prob_mod is Attention without a mask:
 * the two kernels on the same GQA inputs and scale */
static void flex_attention(void **state)
{
    (void)state;
    const uint64_t seed = 401;
    int64_t qd[4] = {2, 4, 3, 5}, kd[4] = {2, 2, 6, 5}, vd[4] = {2, 2, 6, 3};
    lt_value *in[3] = {tu_rand(LT_F32, 4, qd, -1.5, 1.5, seed), tu_rand(LT_F32, 4, kd, -1.5, 1.5, seed + 1),
                       tu_rand(LT_F32, 4, vd, -1, 1, seed + 2)};
    lt_value *ya[1] = {NULL}, *yf[1] = {NULL};
    lt_err err;
    tu_graph ga = tu_single(LT_OP_ATTENTION, 23, 3, 1), gf = tu_single(LT_OP_FLEX_ATTENTION, 1, 3, 1);
    tu_attr_float(&ga, "scale", 0.3f);
    tu_attr_float(&gf, "scale", 0.3f);
    if (tu_run(&ga, in, ya, &err) != LT_OK || tu_run(&gf, in, yf, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double want[2 * 4 * 3 * 3];
    for (int i = 0; i < 72; i++)
        want[i] = tu_get(ya[0], i);
    tu_assert_close(yf[0], want, 72, 1e-6, 1e-7, seed);
    lt_value_free(ya[0]);
    lt_value_free(yf[0]);
    for (int i = 0; i < 3; i++)
        lt_value_free(in[i]);
    tu_free(&ga);
    tu_free(&gf);
}

/* ---- gradients by finite differences ---- */
#define F(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -1.5, .hi = 1.5}
#define ABSENT {.absent = true}
#define BOOLS(r, ...)                                                                                              \
    {.rank = r, .dims = {__VA_ARGS__}, .dt = LT_BOOL, .frozen = true, .nvals = 7, .vals = {1, 1, 0, 1, 1, 1, 0}}
#define LENS(...) {.rank = 1, .dims = {2}, .dt = LT_I64, .frozen = true, .nvals = 2, .vals = {__VA_ARGS__}}

static void a_gqa3d(tu_graph *g)
{
    tu_attr_int(g, "q_num_heads", 4);
    tu_attr_int(g, "kv_num_heads", 2);
}
static void a_causal_softcap(tu_graph *g)
{
    tu_attr_int(g, "is_causal", 1);
    tu_attr_float(g, "softcap", 1.3f);
    tu_attr_float(g, "scale", 0.6f);
}
static void a_gqa3d_causal(tu_graph *g)
{
    a_gqa3d(g);
    tu_attr_int(g, "is_causal", 1);
}
static void a_causal(tu_graph *g) { tu_attr_int(g, "is_causal", 1); }
static void a_window(tu_graph *g)
{
    tu_attr_int(g, "left_window_size", 1);
    tu_attr_int(g, "right_window_size", 2);
}

static void a_rope3d(tu_graph *g)
{
    tu_attr_int(g, "num_heads", 2);
    tu_attr_int(g, "interleaved", 1);
    tu_attr_int(g, "rotary_embedding_dim", 4);
}

static void la_heads(tu_graph *g, int hq, int hkv, const char *rule)
{
    tu_attr_int(g, "q_num_heads", hq);
    tu_attr_int(g, "kv_num_heads", hkv);
    tu_attr_str(g, "update_rule", rule);
}
static void a_la_linear(tu_graph *g) { la_heads(g, 2, 1, "linear"); }
static void a_la_gated(tu_graph *g) { la_heads(g, 2, 1, "gated"); }
static void a_la_gated_delta_gqa(tu_graph *g) { la_heads(g, 4, 2, "gated_delta"); }
static void a_la_delta(tu_graph *g)
{
    la_heads(g, 2, 2, "delta");
    tu_attr_float(g, "scale", 0.8f);
}
#define RNGD(lo_, hi_, r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = lo_, .hi = hi_}

static void a_silu(tu_graph *g) { tu_attr_str(g, "activation", "silu"); }
static void a_circular(tu_graph *g) { tu_attr_str(g, "mode", "circular"); }
static void a_axis1(tu_graph *g) { tu_attr_int(g, "axis", 1); }

#define POS(...) {.rank = 2, .dims = {2, 3}, .dt = LT_I64, .frozen = true, .nvals = 6, .vals = {__VA_ARGS__}}

static const struct gcase {
    const char *name;
    lt_op op;
    int opset, nin, nout;
    tu_fd_in in[7];
    void (*attrs)(tu_graph *g);
} gcases[] = {
    {"Attention.4d", LT_OP_ATTENTION, 23, 3, 1, {F(4, 2, 2, 3, 4), F(4, 2, 2, 5, 4), F(4, 2, 2, 5, 3)}},
    {"Attention.3d_gqa", LT_OP_ATTENTION, 23, 3, 1, {F(3, 2, 3, 12), F(3, 2, 4, 6), F(3, 2, 4, 4)}, a_gqa3d},
    {"Attention.float_mask_causal_softcap", LT_OP_ATTENTION, 23, 4, 1,
     {F(4, 1, 2, 4, 3), F(4, 1, 2, 5, 3), F(4, 1, 2, 5, 2), F(2, 4, 5)}, a_causal_softcap},
    {"Attention.past_short_mask_3d", LT_OP_ATTENTION, 23, 6, 1,
     {F(3, 2, 2, 12), F(3, 2, 3, 6), F(3, 2, 3, 4), F(4, 2, 1, 2, 4), F(4, 2, 2, 2, 3), F(4, 2, 2, 2, 2)},
     a_gqa3d_causal},
    {"Attention.mqa_bool_mask", LT_OP_ATTENTION, 23, 4, 1, {F(4, 2, 3, 3, 2), F(4, 2, 1, 4, 2), F(4, 2, 1, 4, 3), BOOLS(2, 3, 4)}},
    {"Attention.nonpad_causal", LT_OP_ATTENTION, 24, 7, 1,
     {F(4, 2, 2, 2, 3), F(4, 2, 1, 5, 3), F(4, 2, 1, 5, 2), ABSENT, ABSENT, ABSENT, LENS(5, 3)}, a_causal},
    {"Attention.window", LT_OP_ATTENTION, 25, 3, 1, {F(4, 1, 2, 4, 2), F(4, 1, 2, 4, 2), F(4, 1, 2, 4, 3)}, a_window},
    {"RotaryEmbedding.4d_shared_positions", LT_OP_ROTARY_EMBEDDING, 23, 4, 1,
     {F(4, 2, 2, 3, 4), F(2, 5, 2), F(2, 5, 2), POS(0, 2, 2, 1, 4, 0)}},
    {"RotaryEmbedding.3d_interleaved_partial", LT_OP_ROTARY_EMBEDDING, 23, 3, 1,
     {F(3, 2, 3, 12), F(3, 2, 3, 2), F(3, 2, 3, 2)}, a_rope3d},
    {"TensorScatter.linear", LT_OP_TENSOR_SCATTER, 24, 3, 1, {F(4, 2, 2, 5, 3), F(4, 2, 2, 2, 3), LENS(1, 3)}},
    {"TensorScatter.circular_axis1", LT_OP_TENSOR_SCATTER, 24, 3, 1, {F(3, 2, 5, 3), F(3, 2, 3, 3), LENS(4, 2)},
     a_circular},
    {"TensorScatter.no_indices_axis1", LT_OP_TENSOR_SCATTER, 24, 2, 1, {F(3, 2, 4, 2), F(3, 2, 3, 2)}, a_axis1},
    {"CausalConvWithState.silu_bias_past", LT_OP_CAUSAL_CONV_WITH_STATE, 27, 4, 1,
     {F(3, 2, 3, 5), F(3, 3, 1, 3), F(1, 3), F(3, 2, 3, 2)}, a_silu},
    {"CausalConvWithState.plain", LT_OP_CAUSAL_CONV_WITH_STATE, 27, 2, 1, {F(3, 2, 2, 6), F(3, 2, 1, 4)}},
    {"LinearAttention.linear", LT_OP_LINEAR_ATTENTION, 27, 3, 1, {F(3, 2, 3, 4), F(3, 2, 3, 2), F(3, 2, 3, 3)},
     a_la_linear},
    {"LinearAttention.gated_per_dim_past", LT_OP_LINEAR_ATTENTION, 27, 5, 1,
     {F(3, 2, 3, 4), F(3, 2, 3, 2), F(3, 2, 3, 3), F(4, 2, 1, 2, 3), RNGD(-0.6, 0.1, 3, 2, 3, 2)}, a_la_gated},
    {"LinearAttention.gated_delta_gqa", LT_OP_LINEAR_ATTENTION, 27, 6, 1,
     {F(3, 2, 3, 8), F(3, 2, 3, 4), F(3, 2, 3, 4), ABSENT, RNGD(-0.6, 0.1, 3, 2, 3, 2), RNGD(0.1, 0.9, 3, 2, 3, 2)},
     a_la_gated_delta_gqa},
    {"LinearAttention.delta_shared_beta", LT_OP_LINEAR_ATTENTION, 27, 6, 1,
     {F(3, 1, 4, 4), F(3, 1, 4, 4), F(3, 1, 4, 6), ABSENT, ABSENT, RNGD(0.1, 0.9, 3, 1, 4, 1)}, a_la_delta},
};

/* the model of rule_fd with the sums of squares of outputs 1.. (the
 * present key and value, the carry state) added to the loss, so the state
 * outputs' adjoints flow back too */
static lt_status build_present(void *ctx, lt_model **out, lt_err *err)
{
    const tu_fd_model *fm = ctx;
    lt_status s = tu_fd_build(fm, out, err);
    if (s != LT_OK)
        return s;
    lt_module *m = *out;
    lt_node *att = m->main->nodes[0];
    lt_ival *total = m->main->results[0];
    static const char *const nm[3][3] = {{"", "", ""}, {"s1_sq", "s1_sum", "loss_s1"}, {"s2_sq", "s2_sum", "loss_s2"}};
    for (int o = 1; o < fm->nout && o < 3; o++) {
        lt_ival *pres = att->out[o];
        lt_node *sq = lt_node_new(m, m->main, LT_OP_MUL, 2, 1);
        sq->opset = 13;
        sq->in[0] = sq->in[1] = pres;
        sq->out[0] = lt_ival_new(m, m->main, nm[o][0]);
        sq->out[0]->def = sq;
        lt_node *sum = lt_node_new(m, m->main, LT_OP_REDUCE_SUM, 1, 1);
        sum->opset = 13;
        sum->in[0] = sq->out[0];
        sum->out[0] = lt_ival_new(m, m->main, nm[o][1]);
        sum->out[0]->def = sum;
        lt_node *add = lt_node_new(m, m->main, LT_OP_ADD, 2, 1);
        add->opset = 13;
        add->in[0] = total;
        add->in[1] = sum->out[0];
        add->out[0] = lt_ival_new(m, m->main, nm[o][2]);
        add->out[0]->def = add;
        total = add->out[0];
    }
    m->main->results[0] = total;
    s = lt_infer_module(m, err);
    return s == LT_OK ? lt_ir_verify(m, err) : s;
}

/* model fm with its state outputs in the loss (build_present): every input
 * within 5e-5 (the squared states add a large constant to the loss, which
 * the differences of inputs they do not depend on must cancel) */
static void state_check(const tu_fd_model *fm, int want, tu_fd_tally *t)
{
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check_built(build_present, (void *)fm, &o, 0, NULL, NULL, 200, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s: %s", fm->name, err.msg);
    assert_int_equal(nrows, want);
    for (int r = 0; r < nrows; r++) {
        t->pairs++;
        printf("  %s %s: rel.err %.3g\n", fm->name, rows[r].name, rows[r].err64);
        if (rows[r].err64 > 5e-5 || rows[r].max_grad == 0) {
            printf("FAIL %s input %s: rel.err %.3g\n", fm->name, rows[r].name, rows[r].err64);
            t->failures++;
        }
    }
    free(rows);
}

static void gradients(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof gcases / sizeof *gcases; k++) {
        const struct gcase *gc = &gcases[k];
        tu_fd_model fm = {.name = gc->name,
                          .op = gc->op,
                          .opset = gc->opset,
                          .nin = gc->nin,
                          .nout = gc->nout,
                          .in = gc->in,
                          .attrs = gc->attrs,
                          .seed = 9100 + k * 17};
        tu_fd_check(&fm, &(tu_fd_expect){.verbose = true}, &t);
    }
    /* KV cache and carry state: the state outputs feed the loss as well as Y */
    const tu_fd_in pin[6] = {F(4, 1, 2, 2, 3), F(4, 1, 1, 2, 3), F(4, 1, 1, 2, 2), ABSENT, F(4, 1, 1, 3, 3),
                             F(4, 1, 1, 3, 2)};
    tu_fd_model pm = {.name = "Attention.present_outputs", .op = LT_OP_ATTENTION, .opset = 23, .nin = 6, .nout = 3,
                      .in = pin, .attrs = a_causal, .seed = 9999};
    state_check(&pm, 5, &t);
    /* a carry state longer than the input: present holds past values */
    const tu_fd_in cin[4] = {F(3, 2, 2, 2), F(3, 2, 1, 4), F(1, 2), F(3, 2, 2, 3)};
    tu_fd_model cm = {.name = "CausalConvWithState.present_state", .op = LT_OP_CAUSAL_CONV_WITH_STATE, .opset = 27,
                      .nin = 4, .nout = 2, .in = cin, .attrs = a_silu, .seed = 9998};
    state_check(&cm, 4, &t);
    const tu_fd_in lin[6] = {F(3, 1, 3, 8), F(3, 1, 3, 4), F(3, 1, 3, 4), F(4, 1, 2, 2, 2),
                             RNGD(-0.6, 0.1, 3, 1, 3, 4), RNGD(0.1, 0.9, 3, 1, 3, 2)};
    tu_fd_model lm = {.name = "LinearAttention.present_state", .op = LT_OP_LINEAR_ATTENTION, .opset = 27, .nin = 6,
                      .nout = 2, .in = lin, .attrs = a_la_gated_delta_gqa, .seed = 9997};
    state_check(&lm, 6, &t);
    printf("Attention, RotaryEmbedding, TensorScatter, CausalConvWithState and LinearAttention gradients: %d (case, input) pairs checked by finite differences in float64, worst relative "
           "error %.3g (%s; the state-output models printed above)\n",
           t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.pairs, 3 + 3 + 4 + 6 + 3 + 3 + 3 + 3 + 3 + 2 + 2 + 2 + 4 + 2 + 3 + 5 + 5 + 4 + 5 + 4 + 6);
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward),
        cmocka_unit_test(refusals),
        cmocka_unit_test(rotary_forward),
        cmocka_unit_test(flex_attention),
        cmocka_unit_test(gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
