/* The RNN, GRU and LSTM recurrences in double, so that finite differences
 * through a double model (the gradient checker) see double rounding. */
#include "rnn_util.h"
#include "linalg_util.h"
#include "vact.h"
#include <math.h>
#include <string.h>

#define T double
#define CT LT_F64
#define SFX(name) name##_f64
#define TANH tanh
#define VTANH lt_vtanh_f64
#define VSIGMOID lt_vsigmoid_f64

#define EXP exp
#define LOG1P log1p
#define FABS fabs
#include "rnn_tmpl.h"
#include "rnn_gates_tmpl.h"
