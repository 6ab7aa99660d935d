/* The RNN/GRU/LSTM gradients in double. */
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include "par_spread.h"
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
/* lt_vsigmoid_f64's form, for one value */
static inline double sigmoid_f64(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
#define SIGMOID sigmoid_f64
#include "grad_rnn_tmpl.h"
