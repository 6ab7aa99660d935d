/* Private to the grad_rnn family: the validated state RNNGrad, GRUGrad and
 * LSTMGrad hand to the per-type BPTT code (grad_rnn_tmpl.h, instantiated
 * for float in grad_rnn_f32.c and for double in grad_rnn_f64.c). */
#ifndef LT_CPU_GRAD_RNN_UTIL_H
#define LT_CPU_GRAD_RNN_UTIL_H

#include "par.h"
#include "rnn_util.h"

typedef struct lt_grnn {
    lt_rnn r;          /* shapes, attributes, activations, lengths (lt_rnn_setup) */
    lt_dtype ct;       /* compute type: LT_F32 or LT_F64 */
    bool lbr;          /* GRU linear_before_reset */
    bool couple;       /* LSTM input_forget */
    /* inputs in the compute type, NULL when omitted */
    const void *X, *W, *R, *Bias, *h0, *c0, *P, *dY, *dYh, *dYc;
    /* results in the compute type, NULL when not wanted */
    void *dX, *dW, *dR, *dB, *dh0, *dc0, *dP;
    /* what the forward recorded (lt_grnn_forward), NULL: re-run it */
    const void *ws;
} lt_grnn;

/* An LSTM with the default activations (sigmoid, tanh, tanh) and no clip
 * records activated gates and h(C'), whose derivatives follow from the
 * values, so that its backward evaluates no activation. */
static inline bool lt_grnn_lstm_fast(const lt_rnn *r)
{
    if (r->gates != 4 || r->clip_on)
        return false;
    for (int d = 0; d < r->D; d++)
        if (r->act[d][0].fn != RNN_SIGMOID || r->act[d][1].fn != RNN_TANH || r->act[d][2].fn != RNN_TANH)
            return false;
    return true;
}

/* Elements per direction of the workspace a recording forward leaves for
 * the gradient: gate inputs [rows, G] (the fast LSTM: activated gates),
 * then one [rows, H] block per state (RNN: h read; GRU: also r*h or
 * h R_h^T + Rb_h; LSTM: h, cell read, cell written, and for the fast one
 * h(cell written)). */
static inline int64_t lt_grnn_ws_per_dir(const lt_rnn *r)
{
    int64_t nst = r->gates == 1 ? 1 : r->gates == 3 ? 2 : lt_grnn_lstm_fast(r) ? 4 : 3;
    return r->S * r->B * (r->gates + nst) * r->H;
}

/* Products with a recurrent weight packed once (rnn_gemm.c):
 * lt_rgemm_have says whether the CPU runs them (AVX-512 or AVX2 with FMA,
 * unless LANTERN_GEMM=blas); op(B) [K, N]
 * (B^T when tb) packs into lt_rgemm_packed_len(N, K) floats; then C [M, N]
 * = A [M, K] op(B) + beta C (beta 0: C is not read) as often as wanted. */
bool lt_rgemm_have(void);
int64_t lt_rgemm_packed_len(int64_t N, int64_t K);
void lt_rgemm_pack(bool tb, int64_t N, int64_t K, const float *B, int64_t ldb, float *packed);
void lt_rgemm_run(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *packed, float beta,
                  float *C, int64_t ldc);
/* The same with op(B) = [op(B1); op(B2)] (K1 then K2 rows: an LSTM's W and
 * R, packed into lt_rgemm_packed_len(N, K1 + K2) floats) and A = [A1 | A2]
 * (x_t and h, each row of A1 and of A2 with its own leading dimension):
 * C = A1 op(B1) + A2 op(B2) + beta C, one sum per output over k in order. */
void lt_rgemm_pack2(bool tb, int64_t N, int64_t K1, const float *B1, int64_t ldb1, int64_t K2, const float *B2,
                    int64_t ldb2, float *packed);
void lt_rgemm_run2(int64_t M, int64_t N, int64_t K1, const float *A1, int64_t lda1, int64_t K2, const float *A2,
                   int64_t lda2, const float *packed, float beta, float *C, int64_t ldc);

/* Back-propagates through time (re-running the forward pass of every
 * direction first unless g->ws holds it) and fills the wanted results. */
lt_status lt_grnn_run_f32(lt_kctx *k, const lt_grnn *g);
lt_status lt_grnn_run_f64(lt_kctx *k, const lt_grnn *g);
/* The forward pass writing Y, Y_h, Y_c (g->r's outputs) and the workspace
 * ws (lt_grnn_ws_per_dir elements per direction, compute type). */
lt_status lt_grnn_forward_f32(lt_kctx *k, const lt_grnn *g, void *ws);
lt_status lt_grnn_forward_f64(lt_kctx *k, const lt_grnn *g, void *ws);
/* RNN/GRU/LSTM kernel (gates 1, 3, 4) for a node with the workspace output
 * the AD adds (index lt_grnn_ws_out): the recording forward. */
lt_status lt_grnn_forward(lt_kctx *k, int gates);
static inline int lt_grnn_ws_out(int gates) { return gates == 4 ? 3 : 2; }

#endif
