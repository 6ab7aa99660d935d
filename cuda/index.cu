// The cuda backend's index kernels: GatherElements and its gradient, the
// slice gathers and scatters behind GatherND and ScatterND, and Pad and its
// gradient through per-axis index maps made on the host (the CPU's maps, so
// every mode and negative pad means what it means there). Offsets and
// indices come already checked and normalized from the host (cuda/index.c).
#include "kernels.h"
#include "launch.cuh"

namespace {

using lt_cu::THREADS;
using lt_cu::blocks_for;

#define GRID_LOOP(i, n)                                                                                        \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// The data offset of element i of a walk over sh.dims with strides st[0].
__device__ inline int64_t walk_offset(const lt_cu_shape &sh, int64_t i)
{
    int64_t off = 0;
    for (int d = sh.rank - 1; d >= 0; d--) {
        off += (i % sh.dims[d]) * sh.st[0][d];
        i /= sh.dims[d];
    }
    return off;
}

template <typename T>
__global__ void k_gather_elements(const T *x, const int64_t *idx, T *y, lt_cu_shape sh, int64_t axstride)
{
    GRID_LOOP(i, sh.n)
    y[i] = x[walk_offset(sh, i) + idx[i] * axstride];
}

template <typename T>
__global__ void k_gather_elements_grad(const T *dy, const int64_t *idx, T *dx, lt_cu_shape sh, int64_t axstride)
{
    GRID_LOOP(i, sh.n)
    atomicAdd(dx + walk_offset(sh, i) + idx[i] * axstride, dy[i]);
}

template <typename T> __global__ void k_gather_slices(const T *x, const int64_t *off, T *y, int64_t nt, int64_t slice)
{
    GRID_LOOP(i, nt * slice)
    y[i] = x[off[i / slice] + i % slice];
}

// Atomic y = f(y, v) by compare-and-swap on the value's bits.
__device__ inline float as_value(unsigned int b, float) { return __uint_as_float(b); }
__device__ inline double as_value(unsigned long long b, double) { return __longlong_as_double((long long)b); }
__device__ inline unsigned int as_bits(float v) { return __float_as_uint(v); }
__device__ inline unsigned long long as_bits(double v) { return (unsigned long long)__double_as_longlong(v); }

template <typename T> __device__ inline T combine(int red, T a, T b)
{
    switch (red) {
    case LT_CU_RED_MUL: return a * b;
    case LT_CU_RED_MAX: return b > a ? b : a; // the CPU's: a NaN already there stays
    case LT_CU_RED_MIN: return b < a ? b : a;
    default: return a + b;
    }
}

template <typename T> __device__ inline void atomic_combine(T *p, T v, int red)
{
    typedef decltype(as_bits(v)) B;
    B *bp = (B *)p, old = *bp, seen;
    do {
        seen = old;
        old = atomicCAS(bp, seen, as_bits(combine(red, as_value(seen, v), v)));
    } while (old != seen);
}

// ScatterND: slices of updates onto y at offsets; none: the host kept one
// tuple per offset (the last, as the CPU's in-order loop leaves it), src[j]
// naming its slice of updates.
template <typename T>
__global__ void k_scatter_slices(T *y, const int64_t *off, const int64_t *src, const T *u, int64_t nt, int64_t slice,
                                 int red)
{
    GRID_LOOP(i, nt * slice)
    {
        int64_t j = i / slice, e = i % slice;
        T v = u[src[j] * slice + e];
        T *p = y + off[j] + e;
        if (red == LT_CU_RED_NONE)
            *p = v;
        else if (red == LT_CU_RED_ADD)
            atomicAdd(p, v);
        else
            atomic_combine(p, v, red);
    }
}

// Pad: map holds, for each axis a, the input index of each output index
// along it (-1: the constant), at map + moff[a]; sh walks the output with
// the input's strides in st[0].
template <typename T>
__global__ void k_pad(const T *x, T *y, const int64_t *map, lt_cu_shape sh, lt_cu_pad_maps mp, T cval)
{
    GRID_LOOP(i, sh.n)
    {
        int64_t rem = i, off = 0;
        bool inside = true;
        for (int d = sh.rank - 1; d >= 0; d--) {
            int64_t m = map[mp.off[d] + rem % sh.dims[d]];
            rem /= sh.dims[d];
            inside = inside && m >= 0;
            off += m * sh.st[0][d];
        }
        y[i] = inside ? x[off] : cval;
    }
}

template <typename T> __global__ void k_pad_grad(const T *dy, T *dx, const int64_t *map, lt_cu_shape sh, lt_cu_pad_maps mp)
{
    GRID_LOOP(i, sh.n)
    {
        int64_t rem = i, off = 0;
        bool inside = true;
        for (int d = sh.rank - 1; d >= 0; d--) {
            int64_t m = map[mp.off[d] + rem % sh.dims[d]];
            rem /= sh.dims[d];
            inside = inside && m >= 0;
            off += m * sh.st[0][d];
        }
        if (inside)
            atomicAdd(dx + off, dy[i]);
    }
}

} // namespace

extern "C" {

cudaError_t lt_cu_gather_elements(cudaStream_t s, size_t es, const void *x, const int64_t *idx, void *y,
                                  const lt_cu_shape *sh, int64_t axstride)
{
    if (sh->n <= 0)
        return cudaSuccess;
    unsigned g = blocks_for(sh->n);
    switch (es) {
    case 1: k_gather_elements<uint8_t><<<g, THREADS, 0, s>>>((const uint8_t *)x, idx, (uint8_t *)y, *sh, axstride); break;
    case 2: k_gather_elements<uint16_t><<<g, THREADS, 0, s>>>((const uint16_t *)x, idx, (uint16_t *)y, *sh, axstride); break;
    case 4: k_gather_elements<uint32_t><<<g, THREADS, 0, s>>>((const uint32_t *)x, idx, (uint32_t *)y, *sh, axstride); break;
    case 8: k_gather_elements<uint64_t><<<g, THREADS, 0, s>>>((const uint64_t *)x, idx, (uint64_t *)y, *sh, axstride); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_gather_elements_grad(cudaStream_t s, bool f64, const void *dy, const int64_t *idx, void *dx,
                                       const lt_cu_shape *sh, int64_t axstride)
{
    if (sh->n <= 0)
        return cudaSuccess;
    if (f64)
        k_gather_elements_grad<double><<<blocks_for(sh->n), THREADS, 0, s>>>((const double *)dy, idx, (double *)dx, *sh,
                                                                            axstride);
    else
        k_gather_elements_grad<float><<<blocks_for(sh->n), THREADS, 0, s>>>((const float *)dy, idx, (float *)dx, *sh,
                                                                           axstride);
    return cudaGetLastError();
}

cudaError_t lt_cu_gather_slices(cudaStream_t s, size_t es, const void *x, const int64_t *off, void *y, int64_t nt,
                                int64_t slice)
{
    if (nt <= 0 || slice <= 0)
        return cudaSuccess;
    unsigned g = blocks_for(nt * slice);
    switch (es) {
    case 1: k_gather_slices<uint8_t><<<g, THREADS, 0, s>>>((const uint8_t *)x, off, (uint8_t *)y, nt, slice); break;
    case 2: k_gather_slices<uint16_t><<<g, THREADS, 0, s>>>((const uint16_t *)x, off, (uint16_t *)y, nt, slice); break;
    case 4: k_gather_slices<uint32_t><<<g, THREADS, 0, s>>>((const uint32_t *)x, off, (uint32_t *)y, nt, slice); break;
    case 8: k_gather_slices<uint64_t><<<g, THREADS, 0, s>>>((const uint64_t *)x, off, (uint64_t *)y, nt, slice); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_scatter_slices(cudaStream_t s, bool f64, void *y, const int64_t *off, const int64_t *src,
                                 const void *u, int64_t nt, int64_t slice, int red)
{
    if (nt <= 0 || slice <= 0)
        return cudaSuccess;
    unsigned g = blocks_for(nt * slice);
    if (f64)
        k_scatter_slices<double><<<g, THREADS, 0, s>>>((double *)y, off, src, (const double *)u, nt, slice, red);
    else
        k_scatter_slices<float><<<g, THREADS, 0, s>>>((float *)y, off, src, (const float *)u, nt, slice, red);
    return cudaGetLastError();
}

cudaError_t lt_cu_pad(cudaStream_t s, bool f64, const void *x, void *y, const int64_t *map, const lt_cu_shape *sh,
                      const lt_cu_pad_maps *mp, double cval)
{
    if (sh->n <= 0)
        return cudaSuccess;
    if (f64)
        k_pad<double><<<blocks_for(sh->n), THREADS, 0, s>>>((const double *)x, (double *)y, map, *sh, *mp, cval);
    else
        k_pad<float><<<blocks_for(sh->n), THREADS, 0, s>>>((const float *)x, (float *)y, map, *sh, *mp, (float)cval);
    return cudaGetLastError();
}

cudaError_t lt_cu_pad_grad(cudaStream_t s, bool f64, const void *dy, void *dx, const int64_t *map,
                           const lt_cu_shape *sh, const lt_cu_pad_maps *mp)
{
    if (sh->n <= 0)
        return cudaSuccess;
    if (f64)
        k_pad_grad<double><<<blocks_for(sh->n), THREADS, 0, s>>>((const double *)dy, (double *)dx, map, *sh, *mp);
    else
        k_pad_grad<float><<<blocks_for(sh->n), THREADS, 0, s>>>((const float *)dy, (float *)dx, map, *sh, *mp);
    return cudaGetLastError();
}

} // extern "C"
