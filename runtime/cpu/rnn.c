/* CPU kernels: rnn family. The machinery RNN, GRU and LSTM share (inputs,
 * attributes, activations, outputs) and the RNN kernel; the GRU and LSTM
 * kernels are in rnn_gates.c, the recurrences in rnn_tmpl.h and
 * rnn_gates_tmpl.h, the signal ops (DFT, STFT, MelWeightMatrix) in
 * rnn_signal.c. Double inputs are computed in double, float and half ones
 * in float (half converted on the way in and out). */
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    rnn_fn fn;
    int nalpha, nbeta;
    float alpha, beta;
} act_table[] = {
    {"Relu", RNN_RELU, 0, 0, 0, 0},
    {"Tanh", RNN_TANH, 0, 0, 0, 0},
    {"Sigmoid", RNN_SIGMOID, 0, 0, 0, 0},
    {"Affine", RNN_AFFINE, 1, 1, 1.0f, 0.0f},
    {"LeakyRelu", RNN_LEAKY_RELU, 1, 0, 0.01f, 0},
    {"ThresholdedRelu", RNN_THRESHOLDED_RELU, 1, 0, 1.0f, 0},
    {"ScaledTanh", RNN_SCALED_TANH, 1, 1, 1.0f, 1.0f},
    {"HardSigmoid", RNN_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"Elu", RNN_ELU, 1, 0, 1.0f, 0},
    {"Softsign", RNN_SOFTSIGN, 0, 0, 0, 0},
    {"Softplus", RNN_SOFTPLUS, 0, 0, 0, 0},
};

/* activations, activation_alpha, activation_beta: alphas and betas are
 * consumed in order by the functions that take them. */
static lt_status parse_acts(lt_kctx *k, int nact, const rnn_fn *defaults, lt_rnn *r)
{
    const lt_attr *a = lt_attr_find(k->node, "activations");
    int na = 0, nb = 0, ia = 0, ib = 0;
    const float *alphas = lt_attr_floats(k->node, "activation_alpha", &na);
    const float *betas = lt_attr_floats(k->node, "activation_beta", &nb);
    int n = a && a->kind == LT_ATTR_STRINGS ? a->n : 0;
    if (n != 0 && n != nact * r->D && !(r->D == 2 && n == nact))
        return lt_k_fail(k, LT_ERR_INVALID, "%d activations given, expected %lld", n, (long long)(nact * r->D));
    for (int d = 0; d < r->D; d++)
        for (int j = 0; j < nact; j++) {
            rnn_act *ac = &r->act[d][j];
            if (n == 0) {
                ac->fn = defaults[j];
                continue;
            }
            const char *name = a->strings[(n == nact ? 0 : d * nact) + j];
            size_t t;
            for (t = 0; t < sizeof act_table / sizeof act_table[0]; t++)
                if (strcasecmp(name, act_table[t].name) == 0)
                    break;
            if (t == sizeof act_table / sizeof act_table[0])
                return lt_k_fail(k, LT_ERR_UNSUPPORTED, "activation '%s' is not supported", name);
            ac->fn = act_table[t].fn;
            ac->alpha = act_table[t].nalpha && ia < na ? alphas[ia++] : act_table[t].alpha;
            ac->beta = act_table[t].nbeta && ib < nb ? betas[ib++] : act_table[t].beta;
        }
    return LT_OK;
}

static bool dims_are(const lt_tensor *t, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t d[3] = {d0, d1, d2};
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != d[i])
            return false;
    return true;
}

lt_status lt_rnn_setup(lt_kctx *k, int gates, int nact, const rnn_fn *defaults, lt_rnn *r)
{
    memset(r, 0, sizeof *r);
    r->gates = gates;
    const lt_tensor *X = lt_k_in(k, 0), *W = lt_k_in(k, 1), *R = lt_k_in(k, 2), *Bs = lt_k_in(k, 3),
                    *SL = lt_k_in(k, 4), *h0 = lt_k_in(k, 5);
    const lt_tensor *c0 = gates == 4 ? lt_k_in(k, 6) : NULL, *P = gates == 4 ? lt_k_in(k, 7) : NULL;
    if (!X || !W || !R)
        return lt_k_fail(k, LT_ERR_INVALID, "X, W and R are required");
    lt_dtype dt = X->dtype;
    if (!lt_dtype_is_float(dt))
        return lt_k_fail(k, LT_ERR_INVALID, "X must be a float tensor, not %s", lt_dtype_name(dt));
    const lt_tensor *same[6] = {W, R, Bs, h0, c0, P};
    for (int i = 0; i < 6; i++)
        if (same[i] && same[i]->dtype != dt)
            return lt_k_fail(k, LT_ERR_INVALID, "inputs must all have X's type %s", lt_dtype_name(dt));
    r->layout = (int)lt_attr_int(k->node, "layout", 0);
    if (r->layout != 0 && r->layout != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "layout must be 0 or 1");
    const char *dir = lt_attr_str(k->node, "direction", "forward");
    if (strcmp(dir, "forward") == 0)
        r->D = 1;
    else if (strcmp(dir, "reverse") == 0)
        r->D = 1, r->reverse_only = true;
    else if (strcmp(dir, "bidirectional") == 0)
        r->D = 2;
    else
        return lt_k_fail(k, LT_ERR_INVALID, "direction '%s' is not forward, reverse or bidirectional", dir);
    if (X->rank != 3 || W->rank != 3 || R->rank != 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X, W and R must have rank 3");
    r->S = X->dims[r->layout ? 1 : 0];
    r->B = X->dims[r->layout ? 0 : 1];
    r->I = X->dims[2];
    r->H = lt_attr_int(k->node, "hidden_size", R->dims[2]);
    if (r->H <= 0 || r->H > ((int64_t)1 << 32))
        return lt_k_fail(k, LT_ERR_INVALID, "hidden_size must be positive (and at most 2^32)");
    int64_t H = r->H, G = gates * H, D = r->D;
    if (!dims_are(W, 3, D, G, r->I))
        return lt_k_fail(k, LT_ERR_RUNTIME, "W must be [%lld, %lld, %lld]", (long long)D, (long long)G,
                         (long long)r->I);
    if (!dims_are(R, 3, D, G, H))
        return lt_k_fail(k, LT_ERR_RUNTIME, "R must be [%lld, %lld, %lld]", (long long)D, (long long)G, (long long)H);
    if (Bs && !dims_are(Bs, 2, D, 2 * G, 0))
        return lt_k_fail(k, LT_ERR_RUNTIME, "B must be [%lld, %lld]", (long long)D, (long long)(2 * G));
    if (SL && !dims_are(SL, 1, r->B, 0, 0))
        return lt_k_fail(k, LT_ERR_RUNTIME, "sequence_lens must be [%lld]", (long long)r->B);
    const lt_tensor *st[2] = {h0, c0};
    for (int i = 0; i < 2; i++)
        if (st[i] && !(r->layout ? dims_are(st[i], 3, r->B, D, H) : dims_are(st[i], 3, D, r->B, H)))
            return lt_k_fail(k, LT_ERR_RUNTIME, "%s has the wrong shape", i ? "initial_c" : "initial_h");
    if (P && !dims_are(P, 2, D, 3 * H, 0))
        return lt_k_fail(k, LT_ERR_RUNTIME, "P must be [%lld, %lld]", (long long)D, (long long)(3 * H));
    if (lt_shape_numel(4, (int64_t[]){r->S, r->B, D, G}) < 0 || lt_shape_numel(3, X->dims) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "sizes overflow");
    const lt_attr *ca = lt_attr_find(k->node, "clip");
    if (ca) {
        r->clip_on = true;
        r->clip = ca->f;
    }
    lt_status s = parse_acts(k, nact, defaults, r);
    if (s != LT_OK)
        return s;
    r->len = lt_k_scratch(k, sizeof *r->len * (size_t)(r->B ? r->B : 1));
    if (!r->len)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < r->B; b++) {
        r->len[b] = SL ? lt_tensor_get_i64(SL, b) : r->S;
        if (r->len[b] < 0 || r->len[b] > r->S)
            return lt_k_fail(k, LT_ERR_RUNTIME, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                             (long long)r->len[b], (long long)r->S);
        if (r->len[b] > r->maxlen)
            r->maxlen = r->len[b];
    }
    /* double stays double (the gradient checker differentiates through it);
     * float and half compute in float */
    r->ct = dt == LT_F64 ? LT_F64 : LT_F32;
    size_t esz = r->ct == LT_F64 ? sizeof(double) : sizeof(float);
    const lt_tensor *src[7] = {X, W, R, Bs, h0, c0, P};
    const void **dst[7] = {&r->X, &r->W, &r->R, &r->Bias, &r->h0, &r->c0, &r->P};
    for (int i = 0; i < 7; i++) {
        if (!src[i])
            continue;
        if (r->ct == LT_F64)
            *dst[i] = lt_linalg_as_f64(k, src[i]);
        else
            *dst[i] = lt_linalg_as_f32(k, src[i]);
        if (!*dst[i])
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    /* outputs */
    int64_t yd[4], hd[3];
    if (r->layout) {
        int64_t a[4] = {r->B, r->S, D, H}, b[3] = {r->B, D, H};
        memcpy(yd, a, sizeof a);
        memcpy(hd, b, sizeof b);
    } else {
        int64_t a[4] = {r->S, D, r->B, H}, b[3] = {D, r->B, H};
        memcpy(yd, a, sizeof a);
        memcpy(hd, b, sizeof b);
    }
    bool full = true;
    for (int64_t b = 0; b < r->B; b++)
        full &= r->len[b] == r->S;
    lt_tensor **outs[3] = {&r->oY, &r->oYh, &r->oYc};
    void **res[3] = {&r->Y, &r->Yh, &r->Yc};
    for (int i = 0; i < 3 && i < k->nout; i++) {
        if (!lt_k_want(k, i) || (i == 2 && gates != 4))
            continue;
        s = lt_k_out(k, i, dt, i ? 3 : 4, i ? hd : yd, outs[i]);
        if (s != LT_OK)
            return s;
        lt_tensor *t = *outs[i];
        *res[i] = dt == r->ct ? t->data : lt_k_scratch(k, esz * (size_t)(t->numel ? t->numel : 1));
        if (!*res[i])
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        /* steps past a sequence's length stay zero in Y; the steps write
         * every row of Y when no sequence is short, and all of Y_h, Y_c */
        if (i > 0 || !full)
            memset(*res[i], 0, esz * (size_t)t->numel);
    }
    return LT_OK;
}

void lt_rnn_finish(lt_rnn *r)
{
    /* only half outputs differ from their compute type (float) */
    lt_tensor *outs[3] = {r->oY, r->oYh, r->oYc};
    const float *fl[3] = {r->Y, r->Yh, r->Yc};
    for (int i = 0; i < 3; i++)
        if (outs[i] && outs[i]->dtype != r->ct)
            for (int64_t j = 0; j < outs[i]->numel; j++)
                lt_tensor_set_f64(outs[i], j, fl[i][j]);
}

static lt_status rnn(lt_kctx *k)
{
    if (lt_k_want(k, lt_grnn_ws_out(1)))
        return lt_grnn_forward(k, 1);
    lt_rnn r;
    const rnn_fn def[1] = {RNN_TANH};
    lt_status s = lt_rnn_setup(k, 1, 1, def, &r);
    if (s == LT_OK)
        s = r.ct == LT_F64 ? lt_rnn_plain_f64(k, &r) : lt_rnn_plain_f32(k, &r);
    if (s == LT_OK)
        lt_rnn_finish(&r);
    return s;
}

void lt_cpu_register_rnn(lt_kernel_fn *tab)
{
    tab[LT_OP_RNN] = rnn;
    lt_rnn_register_gates(tab);
    lt_rnn_register_signal(tab);
}
