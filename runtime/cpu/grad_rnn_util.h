/* Private to the grad_rnn family: the validated state RNNGrad, GRUGrad and
 * LSTMGrad hand to the per-type BPTT code (grad_rnn_tmpl.h, instantiated
 * for float in grad_rnn_f32.c and for double in grad_rnn_f64.c). */
#ifndef LT_CPU_GRAD_RNN_UTIL_H
#define LT_CPU_GRAD_RNN_UTIL_H

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
} lt_grnn;

/* Re-runs the forward pass of every direction keeping the gate inputs, then
 * back-propagates through time and fills the wanted results. */
lt_status lt_grnn_run_f32(lt_kctx *k, const lt_grnn *g);
lt_status lt_grnn_run_f64(lt_kctx *k, const lt_grnn *g);

#endif
