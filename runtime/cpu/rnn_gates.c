/* GRU and LSTM kernels: inputs and attributes through lt_rnn_setup (rnn.c),
 * then the recurrence in the compute type (rnn_gates_tmpl.h); a node the
 * AD gave a workspace output records for its gradient instead
 * (lt_grnn_forward). */
#include "grad_rnn_util.h"

static lt_status gru(lt_kctx *k)
{
    if (lt_k_want(k, lt_grnn_ws_out(3)))
        return lt_grnn_forward(k, 3);
    lt_rnn r;
    const rnn_fn def[2] = {RNN_SIGMOID, RNN_TANH};
    lt_status s = lt_rnn_setup(k, 3, 2, def, &r);
    if (s != LT_OK)
        return s;
    bool lbr = lt_attr_int(k->node, "linear_before_reset", 0) != 0;
    s = r.ct == LT_F64 ? lt_rnn_gru_f64(k, &r, lbr) : lt_rnn_gru_f32(k, &r, lbr);
    if (s == LT_OK)
        lt_rnn_finish(&r);
    return s;
}

static lt_status lstm(lt_kctx *k)
{
    if (lt_k_want(k, lt_grnn_ws_out(4)))
        return lt_grnn_forward(k, 4);
    lt_rnn r;
    const rnn_fn def[3] = {RNN_SIGMOID, RNN_TANH, RNN_TANH};
    lt_status s = lt_rnn_setup(k, 4, 3, def, &r);
    if (s != LT_OK)
        return s;
    bool couple = lt_attr_int(k->node, "input_forget", 0) != 0;
    s = r.ct == LT_F64 ? lt_rnn_lstm_f64(k, &r, couple) : lt_rnn_lstm_f32(k, &r, couple);
    if (s == LT_OK)
        lt_rnn_finish(&r);
    return s;
}

void lt_rnn_register_gates(lt_kernel_fn *tab)
{
    tab[LT_OP_GRU] = gru;
    tab[LT_OP_LSTM] = lstm;
}
