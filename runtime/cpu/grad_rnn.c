/* CPU kernels: grad_rnn family (RNNGrad, GRUGrad, LSTMGrad). This file
 * checks the inputs, places the results and picks the compute type; the
 * forward re-run and the backpropagation through time are in
 * grad_rnn_tmpl.h. Float and half inputs are computed in float, double in
 * double. */
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include <string.h>

static bool same_dims(const lt_tensor *t, int rank, const int64_t *dims)
{
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            return false;
    return true;
}

static const void *as_ct(lt_kctx *k, lt_dtype ct, const lt_tensor *t)
{
    return ct == LT_F64 ? (const void *)lt_linalg_as_f64(k, t) : (const void *)lt_linalg_as_f32(k, t);
}

static const rnn_fn defs[3][3] = {{RNN_TANH}, {RNN_SIGMOID, RNN_TANH}, {RNN_SIGMOID, RNN_TANH, RNN_TANH}};

lt_status lt_grnn_forward(lt_kctx *k, int gates)
{
    int kind = gates == 1 ? 0 : gates == 3 ? 1 : 2;
    lt_grnn g;
    memset(&g, 0, sizeof g);
    lt_status s = lt_rnn_setup(k, gates, kind + 1, defs[kind], &g.r);
    if (s != LT_OK)
        return s;
    lt_rnn *r = &g.r;
    g.ct = r->ct;
    g.lbr = gates == 3 && lt_attr_int(k->node, "linear_before_reset", 0) != 0;
    g.couple = gates == 4 && lt_attr_int(k->node, "input_forget", 0) != 0;
    g.X = r->X, g.W = r->W, g.R = r->R, g.Bias = r->Bias, g.h0 = r->h0, g.c0 = r->c0, g.P = r->P;
    if (!lt_linalg_blas_ok(r->S * r->B, gates * r->H, r->I) || !lt_linalg_blas_ok(r->S * r->B, gates * r->H, r->H))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "sizes exceed BLAS's int range");
    int64_t per = lt_grnn_ws_per_dir(r), wd[2] = {r->D, per};
    if (per < 0 || lt_shape_numel(2, wd) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "sizes overflow");
    lt_tensor *ws;
    if ((s = lt_k_out(k, lt_grnn_ws_out(gates), r->ct, 2, wd, &ws)) != LT_OK)
        return s;
    s = r->ct == LT_F64 ? lt_grnn_forward_f64(k, &g, ws->data) : lt_grnn_forward_f32(k, &g, ws->data);
    if (s == LT_OK)
        lt_rnn_finish(r);
    return s;
}

static lt_status grad(lt_kctx *k, int gates)
{
    int kind = gates == 1 ? 0 : gates == 3 ? 1 : 2;
    lt_grnn g;
    memset(&g, 0, sizeof g);
    /* lt_rnn_setup allocates the forward op's outputs for every index below
     * nout; ours are different, so it sees none. Scratch and errors still
     * go through the same executor. */
    lt_kctx fk = *k;
    fk.nout = 0;
    lt_status s = lt_rnn_setup(&fk, gates, kind + 1, defs[kind], &g.r);
    if (s != LT_OK)
        return s;
    lt_rnn *r = &g.r;
    const lt_tensor *X = lt_k_in(k, 0);
    lt_dtype dt = X->dtype;
    g.ct = dt == LT_F64 ? LT_F64 : LT_F32;
    g.lbr = gates == 3 && lt_attr_int(k->node, "linear_before_reset", 0) != 0;
    g.couple = gates == 4 && lt_attr_int(k->node, "input_forget", 0) != 0;
    int64_t S = r->S, B = r->B, H = r->H, D = r->D, G = gates * H;
    if (!lt_linalg_blas_ok(S * B, G, r->I) || !lt_linalg_blas_ok(S * B, G, H))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "sizes exceed BLAS's int range");

    /* forward inputs in the compute type (float ones lt_rnn_setup made) */
    const void **fin[7] = {&g.X, &g.W, &g.R, &g.Bias, &g.h0, &g.c0, &g.P};
    const float *fr[7] = {r->X, r->W, r->R, r->Bias, r->h0, r->c0, r->P};
    static const int idx[7] = {0, 1, 2, 3, 5, 6, 7};
    for (int i = 0; i < 7; i++) {
        if (!fr[i])
            continue;
        *fin[i] = g.ct == LT_F32 ? (const void *)fr[i] : as_ct(k, g.ct, lt_k_in(k, idx[i]));
        if (!*fin[i])
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }

    /* cotangents: shapes of Y, Y_h (and Y_c) */
    int64_t yd[4], hd[3];
    if (r->layout) {
        int64_t a[4] = {B, S, D, H}, b[3] = {B, D, H};
        memcpy(yd, a, sizeof a);
        memcpy(hd, b, sizeof b);
    } else {
        int64_t a[4] = {S, D, B, H}, b[3] = {D, B, H};
        memcpy(yd, a, sizeof a);
        memcpy(hd, b, sizeof b);
    }
    int base = gates == 4 ? 8 : 6, ncot = gates == 4 ? 3 : 2;
    const void **cot[3] = {&g.dY, &g.dYh, &g.dYc};
    static const char *cot_name[3] = {"dY", "dY_h", "dY_c"};
    for (int i = 0; i < ncot; i++) {
        const lt_tensor *t = lt_k_in(k, base + i);
        if (!t)
            continue;
        if (!lt_dtype_is_float(t->dtype))
            return lt_k_fail(k, LT_ERR_INVALID, "%s must be a float tensor, not %s", cot_name[i],
                             lt_dtype_name(t->dtype));
        if (!same_dims(t, i ? 3 : 4, i ? hd : yd))
            return lt_k_fail(k, LT_ERR_RUNTIME, "%s does not have the shape of the forward output", cot_name[i]);
        if (!(*cot[i] = as_ct(k, g.ct, t)))
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    /* the forward's workspace, when the AD passed it on */
    const lt_tensor *ws = lt_k_in(k, base + ncot);
    if (ws) {
        if (ws->dtype != g.ct || ws->numel != D * lt_grnn_ws_per_dir(r))
            return lt_k_fail(k, LT_ERR_RUNTIME, "the workspace does not come from this forward node");
        g.ws = ws->data;
    }

    /* results: dX, dW, dR, dB, dh0 [, dc0, dP] */
    const lt_tensor *W = lt_k_in(k, 1), *R = lt_k_in(k, 2);
    int64_t bd[2] = {D, 2 * G}, pd[2] = {D, 3 * H};
    const int64_t *odims[7] = {X->dims, W->dims, R->dims, bd, hd, hd, pd};
    const int orank[7] = {3, 3, 3, 2, 3, 3, 2};
    void **res[7] = {&g.dX, &g.dW, &g.dR, &g.dB, &g.dh0, &g.dc0, &g.dP};
    lt_tensor *conv[7] = {0};
    int nres = gates == 4 ? 7 : 5, any = 0;
    size_t esz = g.ct == LT_F64 ? sizeof(double) : sizeof(float);
    for (int i = 0; i < nres && i < k->nout; i++) {
        if (!lt_k_want(k, i))
            continue;
        lt_tensor *t;
        if ((s = lt_k_out(k, i, dt, orank[i], odims[i], &t)) != LT_OK)
            return s;
        any++;
        if (dt == g.ct) {
            *res[i] = t->data;
        } else {
            *res[i] = lt_k_scratch(k, esz * (size_t)(t->numel ? t->numel : 1));
            if (!*res[i])
                return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
            conv[i] = t;
        }
    }
    if (!any)
        return LT_OK;
    s = g.ct == LT_F64 ? lt_grnn_run_f64(k, &g) : lt_grnn_run_f32(k, &g);
    if (s != LT_OK)
        return s;
    for (int i = 0; i < nres; i++)
        if (conv[i])
            for (int64_t j = 0; j < conv[i]->numel; j++)
                lt_tensor_set_f64(conv[i], j, ((const float *)*res[i])[j]);
    return LT_OK;
}

static lt_status rnn_grad(lt_kctx *k) { return grad(k, 1); }
static lt_status gru_grad(lt_kctx *k) { return grad(k, 3); }
static lt_status lstm_grad(lt_kctx *k) { return grad(k, 4); }

void lt_cpu_register_grad_rnn(lt_kernel_fn *tab)
{
    tab[LT_OP_RNN_GRAD] = rnn_grad;
    tab[LT_OP_GRU_GRAD] = gru_grad;
    tab[LT_OP_LSTM_GRAD] = lstm_grad;
}
