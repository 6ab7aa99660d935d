/* The RNN, GRU and LSTM recurrences in float (float and half inputs). */
#include "rnn_util.h"
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
#include "rnn_tmpl.h"
#include "rnn_gates_tmpl.h"
