// The training kernels of the cuda backend: one fused optimizer step per
// tensor (the formulas of runtime/cpu/optim_update.c, in the parameter's
// own type, one pass over p, g and the state), the sum of squares of a
// tensor in double (gradient clipping), and dst += src (gradient
// accumulation). Grid-stride loops; float32 and float64 share a template.
#include "kernels.h"
#include "launch.cuh"
#include <math.h>

namespace {

using lt_cu::THREADS;
using lt_cu::blocks_for;

template <typename T> __device__ inline T root(T v);
template <> __device__ inline float root<float>(float v) { return sqrtf(v); }
template <> __device__ inline double root<double>(double v) { return sqrt(v); }

template <typename T> struct consts {
    T lr, scale, wd, mu, b1, b2, eps, step, ibc2, decay, ob1, ob2;
};

template <typename T>
__global__ void k_optim(int kind, int64_t n, T *__restrict__ p, const T *__restrict__ g, T *__restrict__ s1,
                        T *__restrict__ s2, consts<T> c)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        switch (kind) {
        case LT_CU_OPT_SGD: p[i] -= c.lr * (g[i] * c.scale + (c.wd != 0 ? c.wd * p[i] : (T)0)); break;
        case LT_CU_OPT_MOMENTUM: {
            T gi = g[i] * c.scale + (c.wd != 0 ? c.wd * p[i] : (T)0);
            s1[i] = c.mu * s1[i] + gi;
            p[i] -= c.lr * s1[i];
            break;
        }
        case LT_CU_OPT_NESTEROV: {
            T gi = g[i] * c.scale + (c.wd != 0 ? c.wd * p[i] : (T)0);
            s1[i] = c.mu * s1[i] + gi;
            p[i] -= c.lr * (gi + c.mu * s1[i]);
            break;
        }
        case LT_CU_OPT_ADAGRAD: {
            T gi = g[i] * c.scale + (c.wd != 0 ? c.wd * p[i] : (T)0);
            s1[i] += gi * gi;
            p[i] -= c.lr * gi / (root(s1[i]) + c.eps);
            break;
        }
        default: { // Adam, AdamW (wd 0 and decay 1 - lr wd for AdamW)
            T pi = p[i] * c.decay;
            T gi = g[i] * c.scale + (c.wd != 0 ? c.wd * pi : (T)0);
            T m = c.b1 * s1[i] + c.ob1 * gi;
            T v = c.b2 * s2[i] + c.ob2 * gi * gi;
            s1[i] = m;
            s2[i] = v;
            p[i] = pi - c.step * m / (root(v) * c.ibc2 + c.eps);
            break;
        }
        }
    }
}

// One double per block summed into out[0] (atomics on double: sm_60 on).
template <typename T> __global__ void k_sum_squares(const T *x, int64_t n, double *out)
{
    __shared__ double part[THREADS];
    double s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        s += (double)x[i] * (double)x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, part[0]);
}

template <typename T> __global__ void k_add_into(T *dst, const T *src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

template <typename T> cudaError_t optim_launch(cudaStream_t s, const lt_cu_optim *o)
{
    consts<T> c = {(T)o->lr, (T)o->scale, (T)o->wd, (T)o->mu, (T)o->b1, (T)o->b2, (T)o->eps,
                   (T)o->adam_step, (T)o->inv_sqrt_bc2, (T)o->decay, (T)o->one_b1, (T)o->one_b2};
    if (o->n > 0)
        k_optim<T><<<blocks_for(o->n), THREADS, 0, s>>>(o->kind, o->n, (T *)o->p, (const T *)o->g, (T *)o->s1,
                                                         (T *)o->s2, c);
    return cudaGetLastError();
}

} // namespace

extern "C" {

cudaError_t lt_cu_optim_step(cudaStream_t s, const lt_cu_optim *o)
{
    return o->f64 ? optim_launch<double>(s, o) : optim_launch<float>(s, o);
}

cudaError_t lt_cu_sum_squares(cudaStream_t s, bool f64, const void *x, int64_t n, double *out)
{
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof(double), s);
    if (e != cudaSuccess || n <= 0)
        return e;
    unsigned g = blocks_for(n);
    if (g > 4096) // enough blocks to fill the GPU; fewer atomics
        g = 4096;
    if (f64)
        k_sum_squares<double><<<g, THREADS, 0, s>>>((const double *)x, n, out);
    else
        k_sum_squares<float><<<g, THREADS, 0, s>>>((const float *)x, n, out);
    return cudaGetLastError();
}

cudaError_t lt_cu_add_into(cudaStream_t s, bool f64, void *dst, const void *src, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    if (f64)
        k_add_into<double><<<blocks_for(n), THREADS, 0, s>>>((double *)dst, (const double *)src, n);
    else
        k_add_into<float><<<blocks_for(n), THREADS, 0, s>>>((float *)dst, (const float *)src, n);
    return cudaGetLastError();
}

} // extern "C"
