/* Template: x = a(clip(x)) for the recurrent activations in one compute
 * type (T, SFX, TANH, EXP, LOG1P, FABS, VTANH, VSIGMOID defined by the
 * includer). The forward kernels (rnn_tmpl.h) and their gradients
 * (grad_rnn_act_tmpl.h) include this one definition, so a gradient that
 * re-runs the forward computes the forward's values exactly. Alpha, beta
 * and clip are float attributes, exact in T. */

static void SFX(act)(const rnn_act *a, bool clip_on, T clip, T *x, int64_t n)
{
    if (clip_on)
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < -clip ? -clip : x[i] > clip ? clip : x[i];
    T al = (T)a->alpha, be = (T)a->beta;
    switch (a->fn) {
    case RNN_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case RNN_TANH:
        VTANH(x, x, n);
        break;
    case RNN_SIGMOID:
        VSIGMOID(x, x, n);
        break;
    case RNN_AFFINE:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * x[i] + be;
        break;
    case RNN_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : al * x[i];
        break;
    case RNN_THRESHOLDED_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > al ? x[i] : 0;
        break;
    case RNN_SCALED_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * TANH(be * x[i]);
        break;
    case RNN_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            T v = al * x[i] + be;
            x[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
        break;
    case RNN_ELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : al * (EXP(x[i]) - 1);
        break;
    case RNN_SOFTSIGN:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] / (1 + FABS(x[i]));
        break;
    case RNN_SOFTPLUS:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0 ? x[i] + LOG1P(EXP(-x[i])) : LOG1P(EXP(x[i]));
        break;
    }
}
