/* Template: the recurrent activation functions and their derivatives in
 * one compute type, for grad_rnn_tmpl.h (same parameters: T, SFX, TANH,
 * EXP, LOG1P, FABS, VTANH, VSIGMOID). The values come from the forward
 * kernels' own act (rnn_act_tmpl.h), so a re-run reproduces the forward. */

#include "rnn_act_tmpl.h"

/* v = a(clip(x)) and dv = dv/dx, which is 0 where the clip holds x */
static void SFX(act_d)(const rnn_act *a, bool clip_on, T clip, const T *x, T *v, T *dv, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        v[i] = x[i];
        dv[i] = 1;
    }
    if (clip_on)
        for (int64_t i = 0; i < n; i++)
            if (v[i] < -clip || v[i] > clip) {
                v[i] = v[i] < 0 ? -clip : clip;
                dv[i] = 0;
            }
    T al = (T)a->alpha, be = (T)a->beta;
    switch (a->fn) {
    case RNN_RELU:
        for (int64_t i = 0; i < n; i++) {
            dv[i] *= v[i] > 0 ? 1 : 0;
            v[i] = v[i] > 0 ? v[i] : 0;
        }
        break;
    case RNN_TANH:
        VTANH(v, v, n);
        for (int64_t i = 0; i < n; i++)
            dv[i] *= 1 - v[i] * v[i];
        break;
    case RNN_SIGMOID:
        VSIGMOID(v, v, n);
        for (int64_t i = 0; i < n; i++)
            dv[i] *= v[i] * (1 - v[i]);
        break;
    case RNN_AFFINE:
        for (int64_t i = 0; i < n; i++) {
            v[i] = al * v[i] + be;
            dv[i] *= al;
        }
        break;
    case RNN_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) {
            dv[i] *= v[i] >= 0 ? 1 : al;
            v[i] = v[i] >= 0 ? v[i] : al * v[i];
        }
        break;
    case RNN_THRESHOLDED_RELU:
        for (int64_t i = 0; i < n; i++) {
            dv[i] *= v[i] > al ? 1 : 0;
            v[i] = v[i] > al ? v[i] : 0;
        }
        break;
    case RNN_SCALED_TANH:
        for (int64_t i = 0; i < n; i++) {
            T th = TANH(be * v[i]);
            v[i] = al * th;
            dv[i] *= al * be * (1 - th * th);
        }
        break;
    case RNN_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            T y = al * v[i] + be;
            dv[i] *= y > 0 && y < 1 ? al : 0;
            v[i] = y < 0 ? 0 : y > 1 ? 1 : y;
        }
        break;
    case RNN_ELU:
        for (int64_t i = 0; i < n; i++) {
            if (v[i] >= 0)
                continue;
            T e = EXP(v[i]);
            v[i] = al * (e - 1);
            dv[i] *= al * e;
        }
        break;
    case RNN_SOFTSIGN:
        for (int64_t i = 0; i < n; i++) {
            T q = 1 + FABS(v[i]);
            v[i] = v[i] / q;
            dv[i] *= 1 / (q * q);
        }
        break;
    case RNN_SOFTPLUS:
        for (int64_t i = 0; i < n; i++) {
            T y = v[i];
            v[i] = y > 0 ? y + LOG1P(EXP(-y)) : LOG1P(EXP(y));
            dv[i] *= y >= 0 ? 1 / (1 + EXP(-y)) : EXP(y) / (1 + EXP(y));
        }
        break;
    }
}
