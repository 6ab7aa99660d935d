/* Private to the rnn family: what RNN, GRU and LSTM share (attributes,
 * activations, validated inputs in the compute type, output placement by
 * layout). The recurrences themselves are templates (rnn_tmpl.h,
 * rnn_gates_tmpl.h) instantiated for float (rnn_f32.c) and double
 * (rnn_f64.c). */
#ifndef LT_CPU_RNN_UTIL_H
#define LT_CPU_RNN_UTIL_H

#include "../runtime.h"

typedef enum rnn_fn {
    RNN_RELU, RNN_TANH, RNN_SIGMOID, RNN_AFFINE, RNN_LEAKY_RELU, RNN_THRESHOLDED_RELU,
    RNN_SCALED_TANH, RNN_HARD_SIGMOID, RNN_ELU, RNN_SOFTSIGN, RNN_SOFTPLUS
} rnn_fn;

typedef struct rnn_act {
    rnn_fn fn;
    float alpha, beta;          /* float attributes: exact in either compute type */
} rnn_act;

typedef struct lt_rnn {
    int gates;                  /* 1 RNN, 3 GRU, 4 LSTM */
    int64_t S, B, I, H, D;      /* steps, batch, input size, hidden size, directions */
    int layout;                 /* 0: [S,B,..], 1: [B,S,..] */
    bool reverse_only;          /* direction == "reverse" */
    bool clip_on;
    float clip;
    rnn_act act[2][3];          /* per direction: f, g, h */
    lt_dtype ct;                /* compute type: LT_F64 for double inputs, LT_F32 otherwise */
    /* inputs in the compute type (float * or double *); Bias, h0, c0, P may be NULL */
    const void *X, *W, *R, *Bias, *h0, *c0, *P;
    int64_t *len;               /* [B] valid steps per batch entry */
    int64_t maxlen;
    void *Y, *Yh, *Yc;          /* results in the compute type, NULL when not wanted */
    lt_tensor *oY, *oYh, *oYc;  /* the output tensors */
} lt_rnn;

/* Reads and checks inputs and attributes for an op with `gates` gates and
 * `nact` activations per direction (defaults given), allocates outputs
 * (Y zeroed). */
lt_status lt_rnn_setup(lt_kctx *k, int gates, int nact, const rnn_fn *defaults, lt_rnn *r);
/* Converts the results into the outputs when their type is not the compute type. */
void lt_rnn_finish(lt_rnn *r);

/* The recurrences of every direction, writing r->Y, r->Yh (and r->Yc). */
lt_status lt_rnn_plain_f32(lt_kctx *k, const lt_rnn *r);
lt_status lt_rnn_plain_f64(lt_kctx *k, const lt_rnn *r);
lt_status lt_rnn_gru_f32(lt_kctx *k, const lt_rnn *r, bool linear_before_reset);
lt_status lt_rnn_gru_f64(lt_kctx *k, const lt_rnn *r, bool linear_before_reset);
lt_status lt_rnn_lstm_f32(lt_kctx *k, const lt_rnn *r, bool input_forget);
lt_status lt_rnn_lstm_f64(lt_kctx *k, const lt_rnn *r, bool input_forget);

static inline bool lt_rnn_reverse(const lt_rnn *r, int d) { return r->reverse_only || d == 1; }
/* row of X / xp for time t, batch b */
static inline int64_t lt_rnn_xrow(const lt_rnn *r, int64_t t, int64_t b)
{
    return r->layout ? b * r->S + t : t * r->B + b;
}
/* element offset of Y[t, d, b, :] (or its layout-1 form) */
static inline int64_t lt_rnn_yoff(const lt_rnn *r, int64_t t, int d, int64_t b)
{
    return (r->layout ? (b * r->S + t) * r->D + d : (t * r->D + d) * r->B + b) * r->H;
}
/* element offset of Y_h[d, b, :] (also initial_h, initial_c, Y_c) */
static inline int64_t lt_rnn_hoff(const lt_rnn *r, int d, int64_t b)
{
    return (r->layout ? b * r->D + d : d * r->B + b) * r->H;
}
/* time step of batch entry b at iteration s, or -1 when it is past its length */
static inline int64_t lt_rnn_time(const lt_rnn *r, int d, int64_t s, int64_t b)
{
    if (s >= r->len[b])
        return -1;
    return lt_rnn_reverse(r, d) ? r->len[b] - 1 - s : s;
}

void lt_rnn_register_gates(lt_kernel_fn *tab);
void lt_rnn_register_signal(lt_kernel_fn *tab);

#endif
