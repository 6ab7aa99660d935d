/* The RNN/GRU/LSTM gradients in double. */
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include <math.h>
#include <string.h>

#define T double
#define CT LT_F64
#define SFX(name) name##_f64
#define TANH tanh
#define VTANH vtanh_f64
#define VSIGMOID vsigmoid_f64

static void vtanh_f64(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanh(x[i]);
}

/* the form whose exponential cannot overflow */
static void vsigmoid_f64(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] >= 0 ? 1 / (1 + exp(-x[i])) : exp(x[i]) / (1 + exp(x[i]));
}

#define EXP exp
#define LOG1P log1p
#define FABS fabs
#include "grad_rnn_tmpl.h"
