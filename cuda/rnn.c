/* LSTM and RNN, and their gradients, on the GPU: the CPU's fast LSTM
 * (default activations sigmoid, tanh, tanh; no clip, no peepholes, no
 * coupled input and forget gates) and the RNN with Tanh, Relu or Sigmoid
 * (no clip), without sequence_lens, in both layouts and every direction,
 * float32 and float64. Other ones stay on the host (the fits rules).
 *
 * Per direction: the input projection of every step is one GEMM (plus the
 * biases), then each step is a GEMM of the running h with R^T and one
 * kernel over B x H (rnn.cu). The forward fills the workspace output the
 * AD adds (LSTM: activated gates, then the hidden and cell states each step
 * read, the cell state it wrote and its tanh; RNN: gate inputs and the h
 * each step read), laid out as the CPU's (lt_grnn_ws_per_dir), so either
 * side's gradient reads either side's forward; the gradient walks the steps
 * back, one kernel and one GEMM with R each, then takes dX, dW and dR as one
 * GEMM each over all rows and dB as column sums. */
#include "cuda_internal.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static cudaStream_t stream_of(lt_kctx *k) { return lt_cuda_of(k->be)->stream; }

/* ---- which nodes: attributes and inputs ---- */
static int directions(const lt_node *n)
{
    const char *dir = lt_attr_str(n, "direction", "forward");
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
        return 1;
    return strcmp(dir, "bidirectional") == 0 ? 2 : 0;
}

/* the LSTM's (nact 3) or the GRU's (nact 2) default activations, given
 * or not: sigmoid, tanh[, tanh] per direction */
static bool default_activations(const lt_node *n, int D, int nact)
{
    const lt_attr *a = lt_attr_find(n, "activations");
    if (!a)
        return true;
    static const char *const def[3] = {"Sigmoid", "Tanh", "Tanh"};
    if (a->kind != LT_ATTR_STRINGS || (a->n != nact && a->n != nact * D))
        return false;
    for (int i = 0; i < a->n; i++)
        if (strcasecmp(a->strings[i], def[i % nact]) != 0)
            return false;
    return true;
}

/* The RNN's activation per direction (LT_CU_RNN_*), false when one is not
 * Tanh (the default), Relu or Sigmoid. */
static bool rnn_activations(const lt_node *n, int D, int *act)
{
    const lt_attr *a = lt_attr_find(n, "activations");
    act[0] = act[1] = LT_CU_RNN_TANH;
    if (!a)
        return true;
    if (a->kind != LT_ATTR_STRINGS || (a->n != 1 && a->n != D))
        return false;
    for (int d = 0; d < D; d++) {
        const char *name = a->strings[a->n == 1 ? 0 : d];
        if (strcasecmp(name, "Tanh") == 0)
            act[d] = LT_CU_RNN_TANH;
        else if (strcasecmp(name, "Relu") == 0)
            act[d] = LT_CU_RNN_RELU;
        else if (strcasecmp(name, "Sigmoid") == 0)
            act[d] = LT_CU_RNN_SIGMOID;
        else
            return false;
    }
    return true;
}

/* These kernels passed test_cuda_kernels on an H200 and cut the LSTM's
 * step there from 3.9 to 1.6-1.8 ms; LANTERN_CUDA_RNN=0 leaves LSTM, GRU
 * and RNN to the host instead. */
static bool rnn_enabled(void)
{
    const char *e = getenv("LANTERN_CUDA_RNN");
    return !e || strcmp(e, "0") != 0;
}

/* what LSTM and RNN share: no clip, no sequence_lens, a known direction and layout */
static bool fits_common(const lt_node *n)
{
    int64_t layout = lt_attr_int(n, "layout", 0);
    return rnn_enabled() && directions(n) > 0 && (layout == 0 || layout == 1) && !lt_attr_find(n, "clip") &&
           (n->nin <= 4 || !n->in[4]);
}

static bool fits_lstm(const lt_node *n)
{
    return fits_common(n) && lt_attr_int(n, "input_forget", 0) == 0 && default_activations(n, directions(n), 3) &&
           (n->nin <= 7 || !n->in[7]);
}

static bool fits_rnn(const lt_node *n)
{
    int act[2];
    return fits_common(n) && rnn_activations(n, directions(n), act);
}

static bool fits_gru(const lt_node *n) { return fits_common(n) && default_activations(n, directions(n), 2); }

/* the gradients only with the forward's workspace (input 11; RNN, GRU: 8) */
static bool fits_lstm_grad(const lt_node *n) { return fits_lstm(n) && n->nin > 11 && n->in[11]; }
static bool fits_rnn_grad(const lt_node *n) { return fits_rnn(n) && n->nin > 8 && n->in[8]; }
static bool fits_gru_grad(const lt_node *n) { return fits_gru(n) && n->nin > 8 && n->in[8]; }

/* ---- shapes ---- */
typedef struct lstm {
    const lt_tensor *X, *W, *R, *Bias, *h0, *c0;
    int64_t S, B, I, H, D, G, rows;
    int gates, layout, act[2];
    bool rev_only, f64, lbr; /* lbr: the GRU's linear_before_reset */
    size_t es;
} lstm;

static bool dims3(const lt_tensor *t, int64_t a, int64_t b, int64_t c)
{
    return t->rank == 3 && t->dims[0] == a && t->dims[1] == b && t->dims[2] == c;
}

/* gates: 4 (LSTM), 3 (GRU) or 1 (RNN) */
static lt_status lstm_setup(lt_kctx *k, int gates, lstm *L)
{
    memset(L, 0, sizeof *L);
    L->gates = gates;
    L->lbr = gates == 3 && lt_attr_int(k->node, "linear_before_reset", 0) != 0;
    L->X = lt_k_in(k, 0), L->W = lt_k_in(k, 1), L->R = lt_k_in(k, 2), L->Bias = lt_k_in(k, 3);
    L->h0 = lt_k_in(k, 5), L->c0 = gates == 4 ? lt_k_in(k, 6) : NULL;
    if (gates == 1 && !rnn_activations(k->node, directions(k->node), L->act))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "the cuda RNN takes Tanh, Relu or Sigmoid");
    if (!L->X || !L->W || !L->R)
        return lt_k_fail(k, LT_ERR_INVALID, "X, W and R are required");
    lt_dtype dt = L->X->dtype;
    const lt_tensor *same[5] = {L->W, L->R, L->Bias, L->h0, L->c0};
    if (dt != LT_F32 && dt != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "X is %s; the cuda kernel takes float32 and float64", lt_dtype_name(dt));
    for (int i = 0; i < 5; i++)
        if (same[i] && same[i]->dtype != dt)
            return lt_k_fail(k, LT_ERR_INVALID, "inputs must all have X's type %s", lt_dtype_name(dt));
    L->f64 = dt == LT_F64;
    L->es = L->f64 ? sizeof(double) : sizeof(float);
    L->layout = (int)lt_attr_int(k->node, "layout", 0);
    L->rev_only = strcmp(lt_attr_str(k->node, "direction", "forward"), "reverse") == 0;
    L->D = directions(k->node);
    if (L->X->rank != 3 || L->W->rank != 3 || L->R->rank != 3)
        return lt_k_fail(k, LT_ERR_INVALID, "X, W and R must have rank 3");
    L->S = L->X->dims[L->layout ? 1 : 0];
    L->B = L->X->dims[L->layout ? 0 : 1];
    L->I = L->X->dims[2];
    L->H = lt_attr_int(k->node, "hidden_size", L->R->dims[2]);
    L->G = gates * L->H;
    L->rows = L->S * L->B;
    if (L->H <= 0)
        return lt_k_fail(k, LT_ERR_INVALID, "hidden_size must be positive");
    if (!dims3(L->W, L->D, L->G, L->I))
        return lt_k_fail(k, LT_ERR_INVALID, "W must be [%lld, %lld, %lld]", (long long)L->D, (long long)L->G,
                         (long long)L->I);
    if (!dims3(L->R, L->D, L->G, L->H))
        return lt_k_fail(k, LT_ERR_INVALID, "R must be [%lld, %lld, %lld]", (long long)L->D, (long long)L->G,
                         (long long)L->H);
    if (L->Bias && !(L->Bias->rank == 2 && L->Bias->dims[0] == L->D && L->Bias->dims[1] == 2 * L->G))
        return lt_k_fail(k, LT_ERR_INVALID, "B must be [%lld, %lld]", (long long)L->D, (long long)(2 * L->G));
    const lt_tensor *st[2] = {L->h0, L->c0};
    for (int i = 0; i < 2; i++)
        if (st[i] && !(L->layout ? dims3(st[i], L->B, L->D, L->H) : dims3(st[i], L->D, L->B, L->H)))
            return lt_k_fail(k, LT_ERR_INVALID, "%s has the wrong shape", i ? "initial_c" : "initial_h");
    if (lt_shape_numel(4, (int64_t[]){L->S, L->B, L->D, 2 * L->G}) < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "sizes overflow");
    return LT_OK;
}

/* elements per direction of the workspace: gates [rows, G], then [rows, H]
 * blocks, four for the LSTM, two for the GRU, one for the RNN */
static int64_t ws_per_dir(const lstm *L) { return L->rows * (L->G + (L->gates == 4 ? 4 : L->gates == 3 ? 2 : 1) * L->H); }

static void state_dims(const lstm *L, int64_t *d)
{
    d[0] = L->layout ? L->B : L->D;
    d[1] = L->layout ? L->D : L->B;
    d[2] = L->H;
}

#define AT(p, off) ((void *)((char *)(p) + (size_t)(off) * L->es))
#define CU(call, what)                                                                                           \
    do {                                                                                                         \
        cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess) {                                                                                 \
            s = lt_cuda_kfail(k, __FILE__, __LINE__, what, "CUDA", cudaGetErrorString(e_));                      \
            goto out;                                                                                            \
        }                                                                                                        \
    } while (0)

/* A direction's part of the workspace at base: the gates [rows, G], then
 * the [rows, H] records (hx; the GRU's ax; the LSTM's cr, cw, hc). */
static void ws_parts(const lstm *L, void *base, lt_cu_rnn_step *p)
{
    size_t gates = (size_t)(L->rows * L->G) * L->es, block = (size_t)(L->rows * L->H) * L->es;
    p->pre = base;
    p->hx = (char *)base + gates;
    if (L->gates == 3)
        p->ax = (char *)p->hx + block;
    if (L->gates == 4) {
        p->cr = (char *)p->hx + block;
        p->cw = (char *)p->cr + block;
        p->hc = (char *)p->cw + block;
    }
}

static void out_dims(const lstm *L, int64_t *yd, int64_t *hd)
{
    if (L->layout) {
        int64_t a[4] = {L->B, L->S, L->D, L->H};
        memcpy(yd, a, sizeof a);
    } else {
        int64_t a[4] = {L->S, L->D, L->B, L->H};
        memcpy(yd, a, sizeof a);
    }
    state_dims(L, hd);
}

/* LSTM (X, W, R[, B, , initial_h, initial_c]) -> Y, Y_h, Y_c[, workspace]
 * and RNN (X, W, R[, B, , initial_h]) -> Y, Y_h[, workspace] */
static lt_status recurrent(lt_kctx *k, int gates)
{
    lstm L0, *L = &L0;
    lt_status s = lstm_setup(k, gates, L);
    if (s != LT_OK)
        return s;
    bool lstm4 = gates == 4;
    cudaStream_t st = stream_of(k);
    int64_t yd[4], hd[3], per = ws_per_dir(L), wd[2] = {L->D, per};
    out_dims(L, yd, hd);
    lt_tensor *Y = NULL, *Yh = NULL, *Yc = NULL, *ws = NULL;
    lt_dtype dt = L->X->dtype;
    int wso = lstm4 ? 3 : 2; /* the workspace output the AD adds */
    if ((k->nout > 0 && lt_k_want(k, 0) && (s = lt_k_out(k, 0, dt, 4, yd, &Y)) != LT_OK) ||
        (k->nout > 1 && lt_k_want(k, 1) && (s = lt_k_out(k, 1, dt, 3, hd, &Yh)) != LT_OK) ||
        (lstm4 && k->nout > 2 && lt_k_want(k, 2) && (s = lt_k_out(k, 2, dt, 3, hd, &Yc)) != LT_OK) ||
        (k->nout > wso && lt_k_want(k, wso) && (s = lt_k_out(k, wso, dt, 2, wd, &ws)) != LT_OK))
        return s;
    /* scratch: h, c, tmp, hph [B, H], hp [B, G], and the gate inputs when no workspace keeps them */
    int64_t BH = L->B * L->H, BG = L->B * L->G, nscr = 4 * BH + BG + (ws ? 0 : L->rows * L->G);
    lt_buf *scr;
    if ((s = lt_cuda_scratch(k, (size_t)nscr * L->es, &scr)) != LT_OK)
        return s;
    void *h = scr->data, *c = AT(h, BH), *tmp = AT(c, BH), *hph = AT(tmp, BH), *hp = AT(hph, BH),
         *gates_in = AT(hp, BG);
    bool gru = gates == 3;
    int64_t H = L->H, rb_cols = gru && L->lbr ? 2 * H : L->G;
    for (int d = 0; d < L->D && s == LT_OK; d++) {
        bool rev = L->rev_only || d == 1;
        lt_cu_rnn_step p = {.S = L->S, .B = L->B, .D = L->D, .H = L->H, .d = d, .layout = L->layout,
                            .act = L->act[d], .hp = hp, .h = h, .c = c, .Y = Y ? Y->data : NULL, .lbr = L->lbr,
                            .tmp = tmp, .hph = hph};
        if (gru && L->Bias)
            p.rbh = AT(L->Bias->data, d * 2 * L->G + L->G + 2 * H);
        if (ws)
            ws_parts(L, AT(ws->data, d * per), &p);
        else
            p.pre = gates_in;
        const void *Wd = AT(L->W->data, d * L->G * L->I), *Rd = AT(L->R->data, d * L->G * L->H);
        if ((s = lt_cuda_gemm(k, L->f64, false, true, L->rows, L->G, L->I, 1.0, L->X->data, L->I, Wd, L->I, 0.0,
                              p.pre)) != LT_OK)
            break;
        if (L->Bias)
            CU(lt_cu_rnn_bias(st, L->f64, p.pre, AT(L->Bias->data, d * 2 * L->G), L->rows, L->G, rb_cols), "lt_cu_rnn_bias");
        CU(lt_cu_rnn_state(st, L->f64, h, L->h0 ? L->h0->data : NULL, false, L->layout, L->B, L->D, d, L->H),
           "lt_cu_rnn_state");
        if (lstm4)
            CU(lt_cu_rnn_state(st, L->f64, c, L->c0 ? L->c0->data : NULL, false, L->layout, L->B, L->D, d, L->H),
               "lt_cu_rnn_state");
        for (int64_t i = 0; i < L->S && s == LT_OK; i++) {
            p.t = rev ? L->S - 1 - i : i;
            if (!gru) {
                if ((s = lt_cuda_gemm(k, L->f64, false, true, L->B, L->G, H, 1.0, h, H, Rd, H, 0.0, hp)) != LT_OK)
                    break;
                CU(lstm4 ? lt_cu_lstm_fwd_step(st, L->f64, &p) : lt_cu_rnn_fwd_step(st, L->f64, &p), "forward step");
                continue;
            }
            /* the GRU: h R^T for z and r (and h's gate when lbr), then the
             * reset product (r*h) R_h^T where not lbr */
            if ((s = lt_cuda_gemm_ld(k, L->f64, false, true, L->B, L->lbr ? L->G : 2 * H, H, 1.0, h, H, Rd, H, 0.0,
                                     hp, L->G)) != LT_OK)
                break;
            CU(lt_cu_gru_step(st, L->f64, false, 0, &p), "lt_cu_gru_step");
            if (!L->lbr &&
                (s = lt_cuda_gemm(k, L->f64, false, true, L->B, H, H, 1.0, tmp, H, AT(Rd, 2 * H * H), H, 0.0, hph)) !=
                    LT_OK)
                break;
            CU(lt_cu_gru_step(st, L->f64, false, 1, &p), "lt_cu_gru_step");
        }
        if (s == LT_OK && Yh)
            CU(lt_cu_rnn_state(st, L->f64, Yh->data, h, true, L->layout, L->B, L->D, d, L->H), "lt_cu_rnn_state");
        if (s == LT_OK && Yc)
            CU(lt_cu_rnn_state(st, L->f64, Yc->data, c, true, L->layout, L->B, L->D, d, L->H), "lt_cu_rnn_state");
    }
out:
    lt_buf_release(scr); /* stream order: later kernels only */
    return s;
}

/* LSTMGrad (X, W, R, B, , initial_h, initial_c, , dY, dY_h, dY_c, workspace)
 * -> dX, dW, dR, dB, d initial_h, d initial_c; RNNGrad (X, W, R, B, ,
 * initial_h, dY, dY_h, workspace) -> dX, dW, dR, dB, d initial_h */
static lt_status recurrent_grad(lt_kctx *k, int gates)
{
    lstm L0, *L = &L0;
    lt_status s = lstm_setup(k, gates, L);
    if (s != LT_OK)
        return s;
    bool lstm4 = gates == 4;
    cudaStream_t st = stream_of(k);
    lt_dtype dt = L->X->dtype;
    int64_t per = ws_per_dir(L), yd[4], hd[3];
    out_dims(L, yd, hd);
    bool gru = gates == 3;
    int base = lstm4 ? 8 : 6, ncot = lstm4 ? 3 : 2, nres = lstm4 ? 6 : 5;
    const lt_tensor *dY = lt_k_in(k, base), *dYh = lt_k_in(k, base + 1), *dYc = lstm4 ? lt_k_in(k, base + 2) : NULL,
                    *ws = lt_k_in(k, base + ncot);
    if (!ws || ws->dtype != dt || ws->numel != L->D * per)
        return lt_k_fail(k, LT_ERR_INTERNAL, "the workspace does not come from this forward node");
    const lt_tensor *cot[3] = {dY, dYh, dYc};
    static const char *const cot_name[3] = {"dY", "dY_h", "dY_c"};
    for (int i = 0; i < 3; i++) {
        const lt_tensor *t = cot[i];
        if (!t)
            continue;
        bool ok = t->dtype == dt && t->rank == (i ? 3 : 4);
        for (int j = 0; ok && j < t->rank; j++)
            ok = t->dims[j] == (i ? hd[j] : yd[j]);
        if (!ok)
            return lt_k_fail(k, LT_ERR_INVALID, "%s does not have the shape and type of the forward output",
                             cot_name[i]);
    }
    if (k->nout > nres && lt_k_want(k, nres))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "no peepholes on cuda");
    int64_t bd[2] = {L->D, 2 * L->G};
    const int64_t *odims[6] = {L->X->dims, L->W->dims, L->R->dims, bd, hd, hd};
    const int orank[6] = {3, 3, 3, 2, 3, 3};
    lt_tensor *o[6] = {0};
    for (int i = 0; i < nres && i < k->nout; i++)
        if (lt_k_want(k, i) && (s = lt_k_out(k, i, dt, orank[i], odims[i], &o[i])) != LT_OK)
            return s;
    /* scratch: the gate-input gradients [rows, G], dh, dc [B, H]; the GRU's
     * gh [rows, H], ds [B, G], tmp and drh [B, H] */
    int64_t BH = L->B * L->H, H = L->H;
    int64_t nscr = L->rows * L->G + 2 * BH + (gru ? L->rows * H + L->B * L->G + 2 * BH : 0);
    lt_buf *scr;
    if ((s = lt_cuda_scratch(k, (size_t)nscr * L->es, &scr)) != LT_OK)
        return s;
    void *g = scr->data, *dh = AT(g, L->rows * L->G), *dc = AT(dh, BH), *gh = AT(dc, BH), *ds = AT(gh, L->rows * H),
         *tmp = AT(ds, L->B * L->G), *drh = AT(tmp, BH);
    int64_t lda_t = L->layout ? L->S * L->G : L->G; /* the rows of one step in g */
    for (int d = 0; d < L->D && s == LT_OK; d++) {
        bool rev = L->rev_only || d == 1;
        lt_cu_rnn_step p = {.S = L->S, .B = L->B, .D = L->D, .H = L->H, .d = d, .layout = L->layout,
                            .act = L->act[d], .dY = dY ? dY->data : NULL, .dh = dh, .dc = dc, .g = g,
                            .lbr = L->lbr, .tmp = tmp, .ds = ds, .gh = gh, .drh = drh};
        ws_parts(L, AT(ws->data, d * per), &p);
        const void *Wd = AT(L->W->data, d * L->G * L->I), *Rd = AT(L->R->data, d * L->G * L->H);
        CU(lt_cu_rnn_state(st, L->f64, dh, dYh ? dYh->data : NULL, false, L->layout, L->B, L->D, d, L->H),
           "lt_cu_rnn_state");
        if (lstm4)
            CU(lt_cu_rnn_state(st, L->f64, dc, dYc ? dYc->data : NULL, false, L->layout, L->B, L->D, d, L->H),
               "lt_cu_rnn_state");
        for (int64_t i = L->S - 1; i >= 0 && s == LT_OK; i--) {
            p.t = rev ? L->S - 1 - i : i;
            if (!gru) {
                CU(lstm4 ? lt_cu_lstm_bwd_step(st, L->f64, &p) : lt_cu_rnn_bwd_step(st, L->f64, &p), "backward step");
                /* the gradient reaching the h the step read: its rows of g times R */
                int64_t row0 = L->layout ? p.t : p.t * L->B;
                s = lt_cuda_gemm(k, L->f64, false, false, L->B, H, L->G, 1.0, AT(g, row0 * L->G), lda_t, Rd, H, 0.0,
                                 p.dh);
                continue;
            }
            /* the GRU: tmp = dh z + ds R (lbr), or + the reset product's
             * gradient through r*h, then ds's z and r parts times R */
            CU(lt_cu_gru_step(st, L->f64, true, 0, &p), "lt_cu_gru_step");
            if (L->lbr) {
                s = lt_cuda_gemm(k, L->f64, false, false, L->B, H, L->G, 1.0, ds, L->G, Rd, H, 1.0, p.tmp);
            } else {
                s = lt_cuda_gemm(k, L->f64, false, false, L->B, H, H, 1.0, AT(ds, 2 * H), L->G, AT(Rd, 2 * H * H), H,
                                 0.0, drh);
                if (s == LT_OK)
                    CU(lt_cu_gru_step(st, L->f64, true, 1, &p), "lt_cu_gru_step");
                if (s == LT_OK)
                    s = lt_cuda_gemm(k, L->f64, false, false, L->B, H, 2 * H, 1.0, ds, L->G, Rd, H, 1.0, p.tmp);
            }
            void *t = p.dh; /* the gradient reaching h is now tmp's */
            p.dh = p.tmp;
            p.tmp = t;
        }
        if (s != LT_OK)
            break;
        dh = p.dh;
        tmp = p.tmp;
        if (o[4])
            CU(lt_cu_rnn_state(st, L->f64, o[4]->data, dh, true, L->layout, L->B, L->D, d, L->H), "lt_cu_rnn_state");
        if (o[5])
            CU(lt_cu_rnn_state(st, L->f64, o[5]->data, dc, true, L->layout, L->B, L->D, d, L->H), "lt_cu_rnn_state");
        if (o[0] && (s = lt_cuda_gemm(k, L->f64, false, false, L->rows, L->I, L->G, 1.0, g, L->G, Wd, L->I,
                                      d ? 1.0 : 0.0, o[0]->data)) != LT_OK)
            break;
        if (o[1] && (s = lt_cuda_gemm(k, L->f64, true, false, L->G, L->I, L->rows, 1.0, g, L->G, L->X->data, L->I,
                                      0.0, AT(o[1]->data, d * L->G * L->I))) != LT_OK)
            break;
        void *dR = o[2] ? AT(o[2]->data, d * L->G * H) : NULL, *dB = o[3] ? AT(o[3]->data, d * 2 * L->G) : NULL;
        if (dR && (s = lt_cuda_gemm(k, L->f64, true, false, gru ? 2 * H : L->G, H, L->rows, 1.0, g, L->G, p.hx, H,
                                    0.0, dR)) != LT_OK)
            break;
        if (dR && gru &&
            (s = lt_cuda_gemm(k, L->f64, true, false, H, H, L->rows, 1.0, gh, H, L->lbr ? p.hx : p.ax, H, 0.0,
                              AT(dR, 2 * H * H))) != LT_OK)
            break;
        if (dB && !gru)
            CU(lt_cu_colsum(st, L->f64, g, L->rows, L->G, dB, AT(dB, L->G)), "lt_cu_colsum");
        if (dB && gru) { /* Rb_z, Rb_r as Wb's; Rb_h from gh */
            CU(lt_cu_colsum(st, L->f64, g, L->rows, L->G, dB, NULL), "lt_cu_colsum");
            CU(cudaMemcpyAsync(AT(dB, L->G), dB, (size_t)(2 * H) * L->es, cudaMemcpyDeviceToDevice, st),
               "cudaMemcpyAsync");
            CU(lt_cu_colsum(st, L->f64, gh, L->rows, H, AT(dB, L->G + 2 * H), NULL), "lt_cu_colsum");
        }
    }
out:
    lt_buf_release(scr);
    return s;
}

#undef AT
#undef CU

static lt_status k_lstm(lt_kctx *k) { return recurrent(k, 4); }
static lt_status k_rnn(lt_kctx *k) { return recurrent(k, 1); }
static lt_status k_lstm_grad(lt_kctx *k) { return recurrent_grad(k, 4); }
static lt_status k_rnn_grad(lt_kctx *k) { return recurrent_grad(k, 1); }
static lt_status k_gru(lt_kctx *k) { return recurrent(k, 3); }
static lt_status k_gru_grad(lt_kctx *k) { return recurrent_grad(k, 3); }

void lt_cuda_register_rnn(lt_cu_op *tab)
{
    tab[LT_OP_LSTM] = (lt_cu_op){k_lstm, 0, 0, fits_lstm, false};
    tab[LT_OP_LSTM_GRAD] = (lt_cu_op){k_lstm_grad, 0, 0, fits_lstm_grad, false};
    tab[LT_OP_RNN] = (lt_cu_op){k_rnn, 0, 0, fits_rnn, false};
    tab[LT_OP_RNN_GRAD] = (lt_cu_op){k_rnn_grad, 0, 0, fits_rnn_grad, false};
    tab[LT_OP_GRU] = (lt_cu_op){k_gru, 0, 0, fits_gru, false};
    tab[LT_OP_GRU_GRAD] = (lt_cu_op){k_gru_grad, 0, 0, fits_gru_grad, false};
}
