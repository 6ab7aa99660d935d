/* The RNN/GRU/LSTM gradients in float (float and half inputs). */
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include <math.h>
#include <string.h>

#define T float
#define CT LT_F32
#define SFX(name) name##_f32
#define TANH tanhf
#define EXP expf
#define LOG1P log1pf
#define FABS fabsf
#include "grad_rnn_tmpl.h"
