// lantern's own CUDA kernels: elementwise ops with broadcasting, sums over
// axes, softmax and its gradient, the softmax cross-entropy and NLL losses,
// 2-D pooling, strided copies, bias adds and gathers. Each launcher takes
// the backend's stream and returns cudaGetLastError(); float32 and float64
// share one template each. Grid-stride loops throughout, so any element
// count fits the grid.
#include "kernels.h"
#include "launch.cuh"
#include <math.h>
#include <string.h>

namespace {

using lt_cu::THREADS;
using lt_cu::blocks_for;

// The input offsets of output element i (row-major walk of sh->dims).
__device__ inline void offsets(const lt_cu_shape &sh, int64_t i, int nin, int64_t *off)
{
    for (int k = 0; k < nin; k++)
        off[k] = 0;
    for (int d = sh.rank - 1; d >= 0; d--) {
        int64_t q = i % sh.dims[d];
        i /= sh.dims[d];
        for (int k = 0; k < nin; k++)
            off[k] += q * sh.st[k][d];
    }
}

template <typename T> __device__ inline T bin(int op, T a, T b)
{
    switch (op) {
    case LT_CU_ADD: return a + b;
    case LT_CU_SUB: return a - b;
    case LT_CU_MUL: return a * b;
    case LT_CU_DIV: return a / b;
    case LT_CU_POW: return pow(a, b);
    case LT_CU_MAX: return a != a || a > b ? a : b;
    case LT_CU_MIN: return a != a || a < b ? a : b;
    case LT_CU_RELU_GRAD: return b > T(0) ? a : T(0); /* a = dy, b = Relu's output */
    default: return a;
    }
}

template <typename T> __device__ inline bool cmp(int op, T a, T b)
{
    switch (op) {
    case LT_CU_GREATER: return a > b;
    case LT_CU_LESS: return a < b;
    case LT_CU_EQUAL: return a == b;
    case LT_CU_GREATER_EQ: return a >= b;
    default: return a <= b;
    }
}

template <typename T> __global__ void k_binary(int op, const T *a, const T *b, T *y, lt_cu_shape sh)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < sh.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[2];
        offsets(sh, i, 2, o);
        y[i] = bin<T>(op, a[o[0]], b ? b[o[1]] : T(0));
    }
}

template <typename T> __global__ void k_compare(int op, const T *a, const T *b, bool *y, lt_cu_shape sh)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < sh.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[2];
        offsets(sh, i, 2, o);
        y[i] = cmp<T>(op, a[o[0]], b[o[1]]);
    }
}

template <typename T> __global__ void k_where(const bool *c, const T *a, const T *b, T *y, lt_cu_shape sh)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < sh.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[3];
        offsets(sh, i, 3, o);
        y[i] = c[o[0]] ? a[o[1]] : b[o[2]];
    }
}

template <typename T> __device__ inline T un(int op, T x, T alpha)
{
    switch (op) {
    case LT_CU_RELU: return x < T(0) ? T(0) : x; /* keeps NaN, as the CPU */
    case LT_CU_SIGMOID: return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
    case LT_CU_TANH: return tanh(x);
    case LT_CU_EXP: return exp(x);
    case LT_CU_LOG: return log(x);
    case LT_CU_NEG: return -x;
    case LT_CU_SQRT: return sqrt(x);
    case LT_CU_ERF: return erf(x);
    case LT_CU_ABS: return x < T(0) ? -x : x;
    case LT_CU_RECIPROCAL: return T(1) / x;
    case LT_CU_LEAKY_RELU: return x >= T(0) ? x : alpha * x;
    /* the CPU's forms: expm1 keeps precision near 0 where exp(x) - 1
     * cancels; softplus as max(x, 0) + log1p(exp(-|x|)), exact for float64
     * past any cutoff; 1 + erf(t) as erfc(-t), which does not cancel for
     * x << 0 */
    case LT_CU_ELU: return x < T(0) ? alpha * expm1(x) : x;
    case LT_CU_SOFTPLUS: return x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
    case LT_CU_GELU: return T(0.5) * x * erfc(x * T(-0.70710678118654752440));
    case LT_CU_GELU_TANH:
        return T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
    case LT_CU_SIN: return sin(x);
    case LT_CU_COS: return cos(x);
    case LT_CU_FLOOR: return floor(x);
    case LT_CU_CEIL: return ceil(x);
    default: return x;
    }
}

template <typename T> __global__ void k_unary(int op, const T *x, T *y, int64_t n, T alpha)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = un<T>(op, x[i], alpha);
}

// One block per output element: its threads sum the reduced positions in
// double, then a shared-memory tree.
template <typename T>
__global__ void k_reduce_sum(const T *x, T *y, lt_cu_shape sh, lt_cu_shape red, double scale)
{
    __shared__ double part[THREADS];
    for (int64_t o = blockIdx.x; o < sh.n; o += gridDim.x) {
        int64_t base;
        offsets(sh, o, 1, &base);
        double acc = 0;
        for (int64_t r = threadIdx.x; r < red.n; r += blockDim.x) {
            int64_t off;
            offsets(red, r, 1, &off);
            acc += (double)x[base + off];
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
            if (threadIdx.x < w)
                part[threadIdx.x] += part[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            y[o] = (T)(part[0] * scale);
        __syncthreads();
    }
}

// One thread per (outer, inner) row of c values.
template <typename T> __global__ void k_softmax(const T *x, T *y, int64_t outer, int64_t c, int64_t inner, int mode)
{
    int64_t rows = outer * inner;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = r / inner, in = r % inner;
        const T *xr = x + o * c * inner + in;
        T *yr = y + o * c * inner + in;
        T m = xr[0];
        for (int64_t j = 1; j < c; j++)
            m = xr[j * inner] > m ? xr[j * inner] : m;
        double s = 0;
        for (int64_t j = 0; j < c; j++)
            s += exp((double)(xr[j * inner] - m));
        if (mode == 1) {
            T ls = (T)log(s);
            for (int64_t j = 0; j < c; j++)
                yr[j * inner] = xr[j * inner] - m - ls;
        } else {
            for (int64_t j = 0; j < c; j++)
                yr[j * inner] = (T)(exp((double)(xr[j * inner] - m)) / s);
        }
    }
}

template <typename T>
__global__ void k_softmax_grad(const T *dy, const T *y, T *dx, int64_t outer, int64_t c, int64_t inner, int mode)
{
    int64_t rows = outer * inner;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        int64_t at = (r / inner) * c * inner + r % inner;
        double s = 0;
        for (int64_t j = 0; j < c; j++)
            s += mode == 1 ? (double)dy[at + j * inner] : (double)dy[at + j * inner] * (double)y[at + j * inner];
        for (int64_t j = 0; j < c; j++) {
            int64_t q = at + j * inner;
            dx[q] = mode == 1 ? (T)((double)dy[q] - exp((double)y[q]) * s) : (T)((double)y[q] * ((double)dy[q] - s));
        }
    }
}

template <typename T>
__global__ void k_nll(const T *lp, const int64_t *cls, const double *coef, T *y, int64_t n, int64_t c, int64_t d,
                      bool none, double div)
{
    __shared__ double part[THREADS];
    double acc = 0;
    for (int64_t p = threadIdx.x; p < n * d; p += blockDim.x) {
        int64_t i = p / d, j = p % d;
        double v = cls[p] < 0 ? 0.0 : -(double)lp[(i * c + cls[p]) * d + j] * coef[p];
        if (none)
            y[p] = (T)v;
        acc += v;
    }
    if (none)
        return;
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[0] = (T)(part[0] / div);
}

template <typename T>
__global__ void k_sce_grad(T *p, const int64_t *cls, const double *coef, int64_t n, int64_t c, int64_t d, bool sce)
{
    int64_t total = n * c * d;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = q % d, k = (q / d) % c, i = q / (c * d), pos = i * d + j;
        double hot = cls[pos] == k ? 1.0 : 0.0;
        double v = sce ? (double)p[q] - hot : -hot;
        p[q] = (T)(cls[pos] < 0 ? 0.0 : v * coef[pos]);
    }
}

template <typename T> __global__ void k_maxpool(const T *x, T *y, lt_cu_pool p)
{
    int64_t total = p.planes * p.oh * p.ow;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = q % p.ow, oy = (q / p.ow) % p.oh, pl = q / (p.ow * p.oh);
        const T *xp = x + pl * p.h * p.w;
        bool any = false;
        T m = 0;
        for (int a = 0; a < p.kh; a++) {
            int64_t iy = oy * p.sh - p.ph + (int64_t)a * p.dh;
            if (iy < 0 || iy >= p.h)
                continue;
            for (int b = 0; b < p.kw; b++) {
                int64_t ix = ox * p.sw - p.pw + (int64_t)b * p.dw;
                if (ix < 0 || ix >= p.w)
                    continue;
                T v = xp[iy * p.w + ix];
                /* the first maximum in scan order, by v > m alone as the CPU's
                 * forward and k_maxpool_grad: a NaN wins only as the first tap */
                if (!any || v > m) {
                    m = v;
                    any = true;
                }
            }
        }
        y[q] = m;
    }
}

template <typename T> __global__ void k_maxpool_grad(const T *dy, const T *x, T *dx, lt_cu_pool p)
{
    int64_t total = p.planes * p.oh * p.ow;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = q % p.ow, oy = (q / p.ow) % p.oh, pl = q / (p.ow * p.oh);
        const T *xp = x + pl * p.h * p.w;
        int64_t best = -1;
        T m = 0;
        for (int a = 0; a < p.kh; a++) {
            int64_t iy = oy * p.sh - p.ph + (int64_t)a * p.dh;
            if (iy < 0 || iy >= p.h)
                continue;
            for (int b = 0; b < p.kw; b++) {
                int64_t ix = ox * p.sw - p.pw + (int64_t)b * p.dw;
                if (ix < 0 || ix >= p.w)
                    continue;
                T v = xp[iy * p.w + ix];
                if (best < 0 || v > m) {
                    m = v;
                    best = iy * p.w + ix;
                }
            }
        }
        if (best >= 0)
            atomicAdd(dx + pl * p.h * p.w + best, dy[q]);
    }
}

template <typename T> __device__ inline int64_t avg_count(const lt_cu_pool &p, int64_t oy, int64_t ox)
{
    int64_t n = 0;
    for (int a = 0; a < p.kh; a++) {
        int64_t iy = oy * p.sh - p.ph + (int64_t)a * p.dh;
        bool yin = iy >= 0 && iy < p.h;
        for (int b = 0; b < p.kw; b++) {
            int64_t ix = ox * p.sw - p.pw + (int64_t)b * p.dw;
            bool xin = ix >= 0 && ix < p.w;
            if (p.count_pad ? (iy < p.h + p.peh && ix < p.w + p.pew) : (yin && xin))
                n++;
        }
    }
    return n > 0 ? n : 1;
}

template <typename T> __global__ void k_avgpool(const T *x, T *y, lt_cu_pool p)
{
    int64_t total = p.planes * p.oh * p.ow;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = q % p.ow, oy = (q / p.ow) % p.oh, pl = q / (p.ow * p.oh);
        const T *xp = x + pl * p.h * p.w;
        double s = 0;
        for (int a = 0; a < p.kh; a++) {
            int64_t iy = oy * p.sh - p.ph + (int64_t)a * p.dh;
            if (iy < 0 || iy >= p.h)
                continue;
            for (int b = 0; b < p.kw; b++) {
                int64_t ix = ox * p.sw - p.pw + (int64_t)b * p.dw;
                if (ix >= 0 && ix < p.w)
                    s += (double)xp[iy * p.w + ix];
            }
        }
        y[q] = (T)(s / (double)avg_count<T>(p, oy, ox));
    }
}

template <typename T> __global__ void k_avgpool_grad(const T *dy, T *dx, lt_cu_pool p)
{
    int64_t total = p.planes * p.oh * p.ow;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = q % p.ow, oy = (q / p.ow) % p.oh, pl = q / (p.ow * p.oh);
        T g = (T)((double)dy[q] / (double)avg_count<T>(p, oy, ox));
        for (int a = 0; a < p.kh; a++) {
            int64_t iy = oy * p.sh - p.ph + (int64_t)a * p.dh;
            if (iy < 0 || iy >= p.h)
                continue;
            for (int b = 0; b < p.kw; b++) {
                int64_t ix = ox * p.sw - p.pw + (int64_t)b * p.dw;
                if (ix >= 0 && ix < p.w)
                    atomicAdd(dx + pl * p.h * p.w + iy * p.w + ix, g);
            }
        }
    }
}

template <typename U> __global__ void k_gather_strided(const U *x, U *y, lt_cu_shape sh, int64_t off)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < sh.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o;
        offsets(sh, i, 1, &o);
        y[i] = x[off + o];
    }
}

template <typename U> __global__ void k_scatter_strided(const U *x, U *y, lt_cu_shape sh, int64_t off)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < sh.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o;
        offsets(sh, i, 1, &o);
        y[off + o] = x[i];
    }
}

template <typename T> __global__ void k_add_bias(T *y, const T *bias, int64_t n, int64_t c, int64_t inner)
{
    int64_t total = n * c * inner;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x)
        y[q] += bias[(q / inner) % c];
}

template <typename U>
__global__ void k_gather(const U *x, const int64_t *idx, U *y, int64_t outer, int64_t ax, int64_t inner, int64_t m)
{
    int64_t total = outer * m * inner;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t in = q % inner, j = (q / inner) % m, o = q / (inner * m);
        y[q] = x[(o * ax + idx[j]) * inner + in];
    }
}

// Block reduction of one double per thread into part[0].
__device__ inline double block_sum(double v, double *part)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double r = part[0];
    __syncthreads();
    return r;
}

// One block per channel.
template <typename T>
__global__ void k_chan_stats(const T *x, int64_t n, int64_t c, int64_t sp, double *mean, double *var)
{
    __shared__ double part[THREADS];
    for (int64_t j = blockIdx.x; j < c; j += gridDim.x) {
        int64_t m = n * sp;
        double acc = 0;
        for (int64_t q = threadIdx.x; q < m; q += blockDim.x)
            acc += (double)x[((q / sp) * c + j) * sp + q % sp];
        double mu = block_sum(acc, part) / (double)(m ? m : 1);
        acc = 0;
        for (int64_t q = threadIdx.x; q < m; q += blockDim.x) {
            double d = (double)x[((q / sp) * c + j) * sp + q % sp] - mu;
            acc += d * d;
        }
        double v = block_sum(acc, part) / (double)(m ? m : 1);
        if (threadIdx.x == 0) {
            mean[j] = mu;
            var[j] = v;
        }
    }
}

template <typename T>
__global__ void k_chan_sums(const T *x, const T *dy, const double *mu, int64_t n, int64_t c, int64_t sp, double *sdy,
                            double *sdyx)
{
    __shared__ double part[THREADS];
    for (int64_t j = blockIdx.x; j < c; j += gridDim.x) {
        int64_t m = n * sp;
        double a = 0, b = 0;
        for (int64_t q = threadIdx.x; q < m; q += blockDim.x) {
            int64_t at = ((q / sp) * c + j) * sp + q % sp;
            double g = (double)dy[at];
            a += g;
            b += g * ((double)x[at] - mu[j]);
        }
        double ra = block_sum(a, part), rb = block_sum(b, part);
        if (threadIdx.x == 0) {
            sdy[j] = ra;
            sdyx[j] = rb;
        }
    }
}

template <typename T>
__global__ void k_chan_affine(const T *x, T *y, int64_t n, int64_t c, int64_t sp, const double *a, const double *off)
{
    int64_t total = n * c * sp;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = (q / sp) % c;
        y[q] = (T)((double)x[q] * a[j] + off[j]);
    }
}

template <typename T>
__global__ void k_bn_dx(const T *dy, const T *x, T *dx, int64_t n, int64_t c, int64_t sp, const double *mu,
                        const double *A, const double *B, const double *C)
{
    int64_t total = n * c * sp;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = (q / sp) % c;
        dx[q] = (T)(A[j] * (double)dy[q] + B[j] * ((double)x[q] - mu[j]) + C[j]);
    }
}

template <typename T>
__global__ void k_scatter_add(const T *dy, const int64_t *idx, T *dx, int64_t outer, int64_t ax, int64_t inner,
                              int64_t m)
{
    int64_t total = outer * m * inner;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t in = q % inner, j = (q / inner) % m, o = q / (inner * m);
        atomicAdd(dx + (o * ax + idx[j]) * inner + in, dy[q]);
    }
}

template <typename T> __global__ void k_dropout(const T *x, const uint8_t *keep, T *y, int64_t n, T sc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = keep[i] ? x[i] * sc : T(0);
}

template <typename T> __global__ void k_fill(T *y, int64_t n, T v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = v;
}

// The element's bytes as an unsigned integer of its size (little-endian
// host and device: the low bytes of bits are the element's).
template <typename U> cudaError_t fill_bits(cudaStream_t s, void *y, int64_t n, uint64_t bits)
{
    k_fill<U><<<blocks_for(n), THREADS, 0, s>>>((U *)y, n, (U)bits);
    return cudaGetLastError();
}

} // namespace

extern "C" {

cudaError_t lt_cu_binary(cudaStream_t s, int op, bool f64, const void *a, const void *b, void *y,
                         const lt_cu_shape *sh)
{
    if (sh->n == 0)
        return cudaSuccess;
    if (op >= LT_CU_GREATER) {
        if (f64)
            k_compare<double><<<blocks_for(sh->n), THREADS, 0, s>>>(op, (const double *)a, (const double *)b,
                                                                    (bool *)y, *sh);
        else
            k_compare<float><<<blocks_for(sh->n), THREADS, 0, s>>>(op, (const float *)a, (const float *)b, (bool *)y,
                                                                   *sh);
    } else if (f64) {
        k_binary<double><<<blocks_for(sh->n), THREADS, 0, s>>>(op, (const double *)a, (const double *)b, (double *)y,
                                                               *sh);
    } else {
        k_binary<float><<<blocks_for(sh->n), THREADS, 0, s>>>(op, (const float *)a, (const float *)b, (float *)y, *sh);
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_where(cudaStream_t s, bool f64, const void *c, const void *a, const void *b, void *y,
                        const lt_cu_shape *sh)
{
    if (sh->n == 0)
        return cudaSuccess;
    if (f64)
        k_where<double><<<blocks_for(sh->n), THREADS, 0, s>>>((const bool *)c, (const double *)a, (const double *)b,
                                                              (double *)y, *sh);
    else
        k_where<float><<<blocks_for(sh->n), THREADS, 0, s>>>((const bool *)c, (const float *)a, (const float *)b,
                                                             (float *)y, *sh);
    return cudaGetLastError();
}

cudaError_t lt_cu_unary(cudaStream_t s, int op, bool f64, const void *x, void *y, int64_t n, double alpha)
{
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_unary<double><<<blocks_for(n), THREADS, 0, s>>>(op, (const double *)x, (double *)y, n, alpha);
    else
        k_unary<float><<<blocks_for(n), THREADS, 0, s>>>(op, (const float *)x, (float *)y, n, (float)alpha);
    return cudaGetLastError();
}

cudaError_t lt_cu_reduce_sum(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_shape *sh,
                             const lt_cu_shape *red, double scale)
{
    if (sh->n == 0)
        return cudaSuccess;
    unsigned g = (unsigned)(sh->n > 65535 * 16 ? 65535 * 16 : sh->n);
    if (f64)
        k_reduce_sum<double><<<g, THREADS, 0, s>>>((const double *)x, (double *)y, *sh, *red, scale);
    else
        k_reduce_sum<float><<<g, THREADS, 0, s>>>((const float *)x, (float *)y, *sh, *red, scale);
    return cudaGetLastError();
}

cudaError_t lt_cu_softmax(cudaStream_t s, bool f64, const void *x, void *y, int64_t outer, int64_t c,
                          int64_t inner, int mode)
{
    int64_t rows = outer * inner;
    if (rows == 0 || c == 0)
        return cudaSuccess;
    if (f64)
        k_softmax<double><<<blocks_for(rows), THREADS, 0, s>>>((const double *)x, (double *)y, outer, c, inner, mode);
    else
        k_softmax<float><<<blocks_for(rows), THREADS, 0, s>>>((const float *)x, (float *)y, outer, c, inner, mode);
    return cudaGetLastError();
}

cudaError_t lt_cu_softmax_grad(cudaStream_t s, bool f64, const void *dy, const void *y, void *dx, int64_t outer,
                               int64_t c, int64_t inner, int mode)
{
    int64_t rows = outer * inner;
    if (rows == 0 || c == 0)
        return cudaSuccess;
    if (f64)
        k_softmax_grad<double><<<blocks_for(rows), THREADS, 0, s>>>((const double *)dy, (const double *)y,
                                                                    (double *)dx, outer, c, inner, mode);
    else
        k_softmax_grad<float><<<blocks_for(rows), THREADS, 0, s>>>((const float *)dy, (const float *)y, (float *)dx,
                                                                   outer, c, inner, mode);
    return cudaGetLastError();
}

cudaError_t lt_cu_nll(cudaStream_t s, bool f64, const void *lp, const int64_t *cls, const double *coef, void *y,
                      int64_t n, int64_t c, int64_t d, bool none, double div)
{
    if (f64)
        k_nll<double><<<1, THREADS, 0, s>>>((const double *)lp, cls, coef, (double *)y, n, c, d, none, div);
    else
        k_nll<float><<<1, THREADS, 0, s>>>((const float *)lp, cls, coef, (float *)y, n, c, d, none, div);
    return cudaGetLastError();
}

cudaError_t lt_cu_sce_grad(cudaStream_t s, bool f64, void *p, const int64_t *cls, const double *coef, int64_t n,
                           int64_t c, int64_t d, bool sce)
{
    int64_t total = n * c * d;
    if (total == 0)
        return cudaSuccess;
    if (f64)
        k_sce_grad<double><<<blocks_for(total), THREADS, 0, s>>>((double *)p, cls, coef, n, c, d, sce);
    else
        k_sce_grad<float><<<blocks_for(total), THREADS, 0, s>>>((float *)p, cls, coef, n, c, d, sce);
    return cudaGetLastError();
}

#define LT_POOL_LAUNCH(kern, T, ...)                                                                             \
    do {                                                                                                         \
        int64_t total_ = p->planes * p->oh * p->ow;                                                              \
        if (total_ > 0)                                                                                          \
            kern<T><<<blocks_for(total_), THREADS, 0, s>>>(__VA_ARGS__);                                         \
        return cudaGetLastError();                                                                               \
    } while (0)

cudaError_t lt_cu_maxpool(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_pool *p)
{
    if (f64)
        LT_POOL_LAUNCH(k_maxpool, double, (const double *)x, (double *)y, *p);
    LT_POOL_LAUNCH(k_maxpool, float, (const float *)x, (float *)y, *p);
}

cudaError_t lt_cu_avgpool(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_pool *p)
{
    if (f64)
        LT_POOL_LAUNCH(k_avgpool, double, (const double *)x, (double *)y, *p);
    LT_POOL_LAUNCH(k_avgpool, float, (const float *)x, (float *)y, *p);
}

cudaError_t lt_cu_maxpool_grad(cudaStream_t s, bool f64, const void *dy, const void *x, void *dx,
                               const lt_cu_pool *p)
{
    if (f64)
        LT_POOL_LAUNCH(k_maxpool_grad, double, (const double *)dy, (const double *)x, (double *)dx, *p);
    LT_POOL_LAUNCH(k_maxpool_grad, float, (const float *)dy, (const float *)x, (float *)dx, *p);
}

cudaError_t lt_cu_avgpool_grad(cudaStream_t s, bool f64, const void *dy, void *dx, const lt_cu_pool *p)
{
    if (f64)
        LT_POOL_LAUNCH(k_avgpool_grad, double, (const double *)dy, (double *)dx, *p);
    LT_POOL_LAUNCH(k_avgpool_grad, float, (const float *)dy, (float *)dx, *p);
}

cudaError_t lt_cu_gather_strided(cudaStream_t s, size_t es, const void *x, void *y, const lt_cu_shape *sh,
                                 int64_t off)
{
    if (sh->n == 0)
        return cudaSuccess;
    unsigned g = blocks_for(sh->n);
    switch (es) {
    case 1: k_gather_strided<uint8_t><<<g, THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, *sh, off); break;
    case 2: k_gather_strided<uint16_t><<<g, THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, *sh, off); break;
    case 4: k_gather_strided<uint32_t><<<g, THREADS, 0, s>>>((const uint32_t *)x, (uint32_t *)y, *sh, off); break;
    case 8: k_gather_strided<uint64_t><<<g, THREADS, 0, s>>>((const uint64_t *)x, (uint64_t *)y, *sh, off); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_scatter_strided(cudaStream_t s, size_t es, const void *x, void *y, const lt_cu_shape *sh,
                                  int64_t off)
{
    if (sh->n == 0)
        return cudaSuccess;
    unsigned g = blocks_for(sh->n);
    switch (es) {
    case 1: k_scatter_strided<uint8_t><<<g, THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, *sh, off); break;
    case 2: k_scatter_strided<uint16_t><<<g, THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, *sh, off); break;
    case 4: k_scatter_strided<uint32_t><<<g, THREADS, 0, s>>>((const uint32_t *)x, (uint32_t *)y, *sh, off); break;
    case 8: k_scatter_strided<uint64_t><<<g, THREADS, 0, s>>>((const uint64_t *)x, (uint64_t *)y, *sh, off); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_add_bias(cudaStream_t s, bool f64, void *y, const void *bias, int64_t n, int64_t c,
                           int64_t inner)
{
    int64_t total = n * c * inner;
    if (total == 0)
        return cudaSuccess;
    if (f64)
        k_add_bias<double><<<blocks_for(total), THREADS, 0, s>>>((double *)y, (const double *)bias, n, c, inner);
    else
        k_add_bias<float><<<blocks_for(total), THREADS, 0, s>>>((float *)y, (const float *)bias, n, c, inner);
    return cudaGetLastError();
}

cudaError_t lt_cu_gather(cudaStream_t s, size_t es, const void *x, const int64_t *idx, void *y, int64_t outer,
                         int64_t ax, int64_t inner, int64_t m)
{
    int64_t total = outer * m * inner;
    if (total == 0)
        return cudaSuccess;
    unsigned g = blocks_for(total);
    switch (es) {
    case 1: k_gather<uint8_t><<<g, THREADS, 0, s>>>((const uint8_t *)x, idx, (uint8_t *)y, outer, ax, inner, m); break;
    case 2:
        k_gather<uint16_t><<<g, THREADS, 0, s>>>((const uint16_t *)x, idx, (uint16_t *)y, outer, ax, inner, m);
        break;
    case 4:
        k_gather<uint32_t><<<g, THREADS, 0, s>>>((const uint32_t *)x, idx, (uint32_t *)y, outer, ax, inner, m);
        break;
    case 8:
        k_gather<uint64_t><<<g, THREADS, 0, s>>>((const uint64_t *)x, idx, (uint64_t *)y, outer, ax, inner, m);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

static unsigned chan_blocks(int64_t c) { return (unsigned)(c < 1 ? 1 : c > 65535 * 16 ? 65535 * 16 : c); }

cudaError_t lt_cu_chan_stats(cudaStream_t s, bool f64, const void *x, int64_t n, int64_t c, int64_t sp, double *mean,
                             double *var)
{
    if (c == 0)
        return cudaSuccess;
    if (f64)
        k_chan_stats<double><<<chan_blocks(c), THREADS, 0, s>>>((const double *)x, n, c, sp, mean, var);
    else
        k_chan_stats<float><<<chan_blocks(c), THREADS, 0, s>>>((const float *)x, n, c, sp, mean, var);
    return cudaGetLastError();
}

cudaError_t lt_cu_chan_sums(cudaStream_t s, bool f64, const void *x, const void *dy, const double *mu, int64_t n,
                            int64_t c, int64_t sp, double *sdy, double *sdyx)
{
    if (c == 0)
        return cudaSuccess;
    if (f64)
        k_chan_sums<double><<<chan_blocks(c), THREADS, 0, s>>>((const double *)x, (const double *)dy, mu, n, c, sp,
                                                                sdy, sdyx);
    else
        k_chan_sums<float><<<chan_blocks(c), THREADS, 0, s>>>((const float *)x, (const float *)dy, mu, n, c, sp, sdy,
                                                               sdyx);
    return cudaGetLastError();
}

cudaError_t lt_cu_chan_affine(cudaStream_t s, bool f64, const void *x, void *y, int64_t n, int64_t c, int64_t sp,
                              const double *a, const double *off)
{
    int64_t total = n * c * sp;
    if (total == 0)
        return cudaSuccess;
    if (f64)
        k_chan_affine<double><<<blocks_for(total), THREADS, 0, s>>>((const double *)x, (double *)y, n, c, sp, a, off);
    else
        k_chan_affine<float><<<blocks_for(total), THREADS, 0, s>>>((const float *)x, (float *)y, n, c, sp, a, off);
    return cudaGetLastError();
}

cudaError_t lt_cu_bn_dx(cudaStream_t s, bool f64, const void *dy, const void *x, void *dx, int64_t n, int64_t c,
                        int64_t sp, const double *mu, const double *A, const double *B, const double *C)
{
    int64_t total = n * c * sp;
    if (total == 0)
        return cudaSuccess;
    if (f64)
        k_bn_dx<double><<<blocks_for(total), THREADS, 0, s>>>((const double *)dy, (const double *)x, (double *)dx, n,
                                                              c, sp, mu, A, B, C);
    else
        k_bn_dx<float><<<blocks_for(total), THREADS, 0, s>>>((const float *)dy, (const float *)x, (float *)dx, n, c,
                                                             sp, mu, A, B, C);
    return cudaGetLastError();
}

__device__ inline double vec_at(lt_cu_vec v, int64_t j)
{
    return v.f64 ? ((const double *)v.p)[j] : (double)((const float *)v.p)[j];
}

__device__ inline void out_at(lt_cu_out o, int64_t j, double x)
{
    if (!o.p)
        return;
    if (o.f64)
        ((double *)o.p)[j] = x;
    else
        ((float *)o.p)[j] = (float)x;
}

__global__ void k_vec_f64(lt_cu_vec v, double *out, int64_t c)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < c; j += (int64_t)gridDim.x * blockDim.x)
        out[j] = vec_at(v, j);
}

__global__ void k_bn_coeffs(int64_t c, bool training, double eps, double mom, double vs, lt_cu_vec g, lt_cu_vec b,
                            lt_cu_vec m,
                            lt_cu_vec v, const double *bm, const double *bv, double *a, double *off, lt_cu_out rm,
                            lt_cu_out rv, lt_cu_out om, lt_cu_out ov)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < c; j += (int64_t)gridDim.x * blockDim.x) {
        double mj = vec_at(m, j), vj = vec_at(v, j);
        double aj = __ddiv_rn(vec_at(g, j), __dsqrt_rn(__dadd_rn(bv[j], eps)));
        a[j] = aj;
        off[j] = __dsub_rn(vec_at(b, j), __dmul_rn(bm[j], aj));
        out_at(rm, j, training ? __dadd_rn(__dmul_rn(mj, mom), __dmul_rn(bm[j], __dsub_rn(1.0, mom))) : mj);
        out_at(rv, j, training ? __dadd_rn(__dmul_rn(vj, mom), __dmul_rn(__dmul_rn(bv[j], vs), __dsub_rn(1.0, mom))) : vj);
        out_at(om, j, training ? bm[j] : mj);
        out_at(ov, j, training ? bv[j] : vj);
    }
}

__global__ void k_bn_grad_coeffs(int64_t c, bool training, double eps, double cnt, lt_cu_vec g, const double *var,
                                 const double *sdy, const double *sdyx, double *A, double *B, double *C, lt_cu_out ds,
                                 lt_cu_out db)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < c; j += (int64_t)gridDim.x * blockDim.x) {
        double gj = vec_at(g, j);
        double istd = __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(var[j], eps)));
        out_at(ds, j, __dmul_rn(sdyx[j], istd));
        out_at(db, j, sdy[j]);
        A[j] = __dmul_rn(gj, istd);
        B[j] = training ? __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(__dmul_rn(-gj, istd), istd), istd), sdyx[j]), cnt)
                        : 0.0;
        C[j] = training ? __ddiv_rn(__dmul_rn(__dmul_rn(-gj, istd), sdy[j]), cnt) : 0.0;
    }
}

cudaError_t lt_cu_vec_f64(cudaStream_t s, lt_cu_vec v, double *out, int64_t c)
{
    if (c == 0)
        return cudaSuccess;
    k_vec_f64<<<blocks_for(c), THREADS, 0, s>>>(v, out, c);
    return cudaGetLastError();
}

cudaError_t lt_cu_bn_coeffs(cudaStream_t s, int64_t c, bool training, double eps, double mom, double vs, lt_cu_vec g,
                            lt_cu_vec b,
                            lt_cu_vec m, lt_cu_vec v, const double *bm, const double *bv, double *a, double *off,
                            lt_cu_out rm, lt_cu_out rv, lt_cu_out om, lt_cu_out ov)
{
    if (c == 0)
        return cudaSuccess;
    k_bn_coeffs<<<blocks_for(c), THREADS, 0, s>>>(c, training, eps, mom, vs, g, b, m, v, bm, bv, a, off, rm, rv, om,
                                                  ov);
    return cudaGetLastError();
}

cudaError_t lt_cu_bn_grad_coeffs(cudaStream_t s, int64_t c, bool training, double eps, double cnt, lt_cu_vec g,
                                 const double *var, const double *sdy, const double *sdyx, double *A, double *B,
                                 double *C, lt_cu_out ds, lt_cu_out db)
{
    if (c == 0)
        return cudaSuccess;
    k_bn_grad_coeffs<<<blocks_for(c), THREADS, 0, s>>>(c, training, eps, cnt, g, var, sdy, sdyx, A, B, C, ds, db);
    return cudaGetLastError();
}

cudaError_t lt_cu_scatter_add(cudaStream_t s, bool f64, const void *dy, const int64_t *idx, void *dx, int64_t outer,
                              int64_t ax, int64_t inner, int64_t m)
{
    int64_t total = outer * m * inner;
    if (total == 0)
        return cudaSuccess;
    if (f64)
        k_scatter_add<double><<<blocks_for(total), THREADS, 0, s>>>((const double *)dy, idx, (double *)dx, outer, ax,
                                                                    inner, m);
    else
        k_scatter_add<float><<<blocks_for(total), THREADS, 0, s>>>((const float *)dy, idx, (float *)dx, outer, ax,
                                                                   inner, m);
    return cudaGetLastError();
}

cudaError_t lt_cu_dropout(cudaStream_t s, bool f64, const void *x, const uint8_t *keep, void *y, int64_t n, double sc)
{
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_dropout<double><<<blocks_for(n), THREADS, 0, s>>>((const double *)x, keep, (double *)y, n, sc);
    else
        k_dropout<float><<<blocks_for(n), THREADS, 0, s>>>((const float *)x, keep, (float *)y, n, (float)sc);
    return cudaGetLastError();
}

cudaError_t lt_cu_fill(cudaStream_t s, bool f64, void *y, int64_t n, double v)
{
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_fill<double><<<blocks_for(n), THREADS, 0, s>>>((double *)y, n, v);
    else
        k_fill<float><<<blocks_for(n), THREADS, 0, s>>>((float *)y, n, (float)v);
    return cudaGetLastError();
}

cudaError_t lt_cu_fill_elem(cudaStream_t s, size_t es, void *y, int64_t n, const void *elem)
{
    if (n == 0)
        return cudaSuccess;
    uint64_t bits = 0;
    if (es > sizeof bits)
        return cudaErrorInvalidValue;
    memcpy(&bits, elem, es);
    switch (es) {
    case 1: return fill_bits<uint8_t>(s, y, n, bits);
    case 2: return fill_bits<uint16_t>(s, y, n, bits);
    case 4: return fill_bits<uint32_t>(s, y, n, bits);
    case 8: return fill_bits<uint64_t>(s, y, n, bits);
    default: return cudaErrorInvalidValue;
    }
}

} // extern "C"
