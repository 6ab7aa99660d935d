/* The RNN/GRU/LSTM gradients in float (float and half inputs). */
/* no FP-exception reads here: lets GCC if-convert and vectorize the
 * clamps inside the branch-free exp/tanh/sigmoid */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "grad_rnn_util.h"
#include "linalg_util.h"
#include "par_spread.h"
#include "elementwise_vmath.h"
#include "vact.h"
#include <math.h>
#include <string.h>

#define T float
#define CT LT_F32
#define SFX(name) name##_f32
#define TANH lt_ew_tanhf /* vectorizable (about 2 ulp) */
#define VTANH lt_vtanhf
#define VSIGMOID lt_vsigmoidf
#define EXP expf
#define LOG1P log1pf
#define FABS fabsf
#define SIGMOID lt_ew_sigmoidf
#if defined(__x86_64__) && defined(__GNUC__)
#define GRNN_WIDE __attribute__((target("avx512f")))
#define GRNN_AVX2 __attribute__((target("avx2,fma")))
#endif
#include "grad_rnn_tmpl.h"
