/* float32 sigmoid, tanh, erf and exp over arrays with elementwise_vmath.h's formulas,
 * run with AVX2 and FMA where the CPU has them (the build targets baseline
 * x86-64, whose 4-wide SSE leaves half the machine idle). Used where
 * activations dominate: the recurrent kernels and their gradients. */
#ifndef LT_CPU_VACT_H
#define LT_CPU_VACT_H

#include <stdint.h>

/* y[i] = sigmoid(x[i]), y[i] = tanh(x[i]); y may be x */
void lt_vsigmoidf(const float *x, float *y, int64_t n);
void lt_vtanhf(const float *x, float *y, int64_t n);
/* y[i] = softplus(x[i]) = log(1 + e^x) (Softplus, and Mish spelled out) */
void lt_vsoftplusf(const float *x, float *y, int64_t n);
/* y[i] = erf(x[i]), y[i] = exp(x[i]) (Gelu's and softmax-like chains) */
void lt_verff(const float *x, float *y, int64_t n);
void lt_vexpf(const float *x, float *y, int64_t n);
/* y[i] = Gelu(x[i]) = x (1 + erf(x / sqrt 2)) / 2, the 1 + erf without its
 * cancellation for x << 0 (the Gelu op's float rows) */
void lt_vgeluf(const float *x, float *y, int64_t n);
/* the same in double (the gradient checker's models), plain libm; the
 * sigmoid in the form whose exponential cannot overflow */
void lt_vsigmoid_f64(const double *x, double *y, int64_t n);
void lt_vtanh_f64(const double *x, double *y, int64_t n);

#endif
