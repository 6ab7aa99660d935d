// The LSTM's and the RNN's own kernels (rnn.c drives them): the bias added to every
// row's input projection, the states moved between a direction's slice of
// initial_h / Y_h (either layout) and a contiguous [B, H] block, one time
// step forward and one backward over B x H threads, and column sums. The
// formulas are the CPU's fast LSTM ones (runtime/cpu/grad_rnn_tmpl.h):
// sigmoid, tanh, tanh, no clip, no peepholes, no coupled gates, and the
// same workspace: activated gates [rows, 4H] (i, o, f, c), then the hidden
// state each step read, the cell state it read, the one it wrote and
// tanh of that, [rows, H] each.
#include "kernels.h"
#include "launch.cuh"

using lt_cu::THREADS;
using lt_cu::blocks_for;

namespace {

__device__ inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ inline float th(float x) { return tanhf(x); }
__device__ inline double th(double x) { return tanh(x); }

__device__ inline int64_t xrow(const lt_cu_rnn_step &p, int64_t b)
{
    return p.layout ? b * p.S + p.t : p.t * p.B + b;
}

__device__ inline int64_t yoff(const lt_cu_rnn_step &p, int64_t b)
{
    return (p.layout ? (b * p.S + p.t) * p.D + p.d : (p.t * p.D + p.d) * p.B + b) * p.H;
}

template <typename T> __global__ void k_bias(T *buf, const T *bias, int64_t rows, int64_t G, int64_t rb_cols)
{
    int64_t n = rows * G;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % G;
        buf[i] += bias[j] + (j < rb_cols ? bias[G + j] : (T)0);
    }
}

template <typename T>
__global__ void k_state(T *dst, const T *src, bool to_slice, int layout, int64_t B, int64_t D, int d, int64_t H)
{
    int64_t n = B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, o = (layout ? b * D + d : d * B + b) * H + j;
        if (to_slice)
            dst[o] = src[i];
        else
            dst[i] = src ? src[o] : (T)0;
    }
}

template <typename T> __global__ void k_fwd(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 4 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T *a = (T *)p.pre + row * G;
        const T *hp = (const T *)p.hp + b * G;
        T *h = (T *)p.h + i, *c = (T *)p.c + i;
        T hprev = *h, cprev = *c;
        T gi = hp[j] + a[j], go = hp[H + j] + a[H + j], gf = hp[2 * H + j] + a[2 * H + j],
          gc = hp[3 * H + j] + a[3 * H + j];
        T iv = sigm(gi), fv = sigm(gf), cv = th(gc);
        T cn = fv * cprev + iv * cv;
        T ov = sigm(go), hv = th(cn);
        T hn = ov * hv;
        *c = cn;
        *h = hn;
        a[j] = iv;
        a[H + j] = ov;
        a[2 * H + j] = fv;
        a[3 * H + j] = cv;
        if (p.hx) {
            ((T *)p.hx)[row * H + j] = hprev;
            ((T *)p.cr)[row * H + j] = cprev;
            ((T *)p.cw)[row * H + j] = cn;
            ((T *)p.hc)[row * H + j] = hv;
        }
        if (p.Y)
            ((T *)p.Y)[yoff(p, b) + j] = hn;
    }
}

template <typename T> __global__ void k_bwd(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 4 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        const T *pa = (const T *)p.pre + row * G;
        T ivj = pa[j], ovj = pa[H + j], fvj = pa[2 * H + j], cvj = pa[3 * H + j];
        T hvj = ((const T *)p.hc)[row * H + j], cprev = ((const T *)p.cr)[row * H + j];
        T dhj = ((const T *)p.dh)[i];
        if (p.dY)
            dhj += ((const T *)p.dY)[yoff(p, b) + j];
        T dcj = ((T *)p.dc)[i] + dhj * ovj * (1 - hvj * hvj);
        T dao = dhj * hvj * (ovj * (1 - ovj));
        T dfv = dcj * cprev;
        T di = dcj * cvj, dac = dcj * ivj * (1 - cvj * cvj);
        T daf = dfv * (fvj * (1 - fvj)), dai = di * (ivj * (1 - ivj));
        T *g = (T *)p.g + row * G;
        g[j] = dai;
        g[H + j] = dao;
        g[2 * H + j] = daf;
        g[3 * H + j] = dac;
        ((T *)p.dc)[i] = dcj * fvj;
    }
}

// the plain RNN: h = act(x W^T + h R^T + Wb + Rb); the workspace keeps
// the gate inputs (before the activation) and the h each step read
template <typename T> __device__ inline T rnn_act(int act, T x)
{
    return act == LT_CU_RNN_RELU ? (x > 0 ? x : (T)0) : act == LT_CU_RNN_SIGMOID ? sigm(x) : th(x);
}

template <typename T> __global__ void k_rnn_fwd(lt_cu_rnn_step p)
{
    const int64_t H = p.H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T *a = (T *)p.pre + row * H;
        T *h = (T *)p.h + i;
        T x = ((const T *)p.hp)[b * H + j] + a[j];
        a[j] = x;
        if (p.hx)
            ((T *)p.hx)[row * H + j] = *h;
        T v = rnn_act(p.act, x);
        *h = v;
        if (p.Y)
            ((T *)p.Y)[yoff(p, b) + j] = v;
    }
}

template <typename T> __global__ void k_rnn_bwd(lt_cu_rnn_step p)
{
    const int64_t H = p.H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T x = ((const T *)p.pre)[row * H + j], v = rnn_act(p.act, x);
        T dv = p.act == LT_CU_RNN_RELU ? (x > 0 ? (T)1 : (T)0) : p.act == LT_CU_RNN_SIGMOID ? v * (1 - v) : 1 - v * v;
        T dhj = ((const T *)p.dh)[i];
        if (p.dY)
            dhj += ((const T *)p.dY)[yoff(p, b) + j];
        ((T *)p.g)[row * H + j] = dhj * dv;
    }
}

// the GRU (grad_rnn_tmpl.h's gru_fwd and gru_bwd, sigmoid and tanh)
template <typename T> __global__ void k_gru_fwd_a(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 3 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T *a = (T *)p.pre + row * G;
        const T *hp = (const T *)p.hp + b * G;
        T hprev = ((const T *)p.h)[i];
        if (p.hx)
            ((T *)p.hx)[row * H + j] = hprev;
        a[j] = hp[j] + a[j];
        a[H + j] = hp[H + j] + a[H + j];
        T rv = sigm(a[H + j]), axv;
        if (p.lbr) {
            axv = hp[2 * H + j] + (p.rbh ? ((const T *)p.rbh)[j] : (T)0);
            a[2 * H + j] = a[2 * H + j] + rv * axv;
        } else {
            axv = rv * hprev;
            ((T *)p.tmp)[i] = axv;
        }
        if (p.ax)
            ((T *)p.ax)[row * H + j] = axv;
    }
}

template <typename T> __global__ void k_gru_fwd_b(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 3 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T *a = (T *)p.pre + row * G;
        if (!p.lbr)
            a[2 * H + j] = ((const T *)p.hph)[i] + a[2 * H + j];
        T zv = sigm(a[j]), hv = th(a[2 * H + j]);
        T *h = (T *)p.h + i;
        T hn = (1 - zv) * hv + zv * *h;
        *h = hn;
        if (p.Y)
            ((T *)p.Y)[yoff(p, b) + j] = hn;
    }
}

template <typename T> __global__ void k_gru_bwd_a(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 3 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        const T *pa = (const T *)p.pre + row * G;
        T hprev = ((const T *)p.hx)[row * H + j];
        T zv = sigm(pa[j]), rv = sigm(pa[H + j]), hv = th(pa[2 * H + j]);
        T zd = zv * (1 - zv), rd = rv * (1 - rv), hd = 1 - hv * hv;
        T dhj = ((const T *)p.dh)[i];
        if (p.dY)
            dhj += ((const T *)p.dY)[yoff(p, b) + j];
        T daz = dhj * (hprev - hv) * zd;
        T dah = dhj * (1 - zv) * hd;
        ((T *)p.tmp)[i] = dhj * zv;
        T *g = (T *)p.g + row * G, *ds = (T *)p.ds + b * G;
        g[j] = ds[j] = daz;
        g[2 * H + j] = dah;
        if (p.lbr) {
            T dar = dah * ((const T *)p.ax)[row * H + j] * rd;
            g[H + j] = ds[H + j] = dar;
            T ghv = dah * rv;
            ds[2 * H + j] = ghv;
            ((T *)p.gh)[row * H + j] = ghv;
        } else {
            ds[2 * H + j] = dah;
            ((T *)p.gh)[row * H + j] = dah;
        }
    }
}

template <typename T> __global__ void k_gru_bwd_b(lt_cu_rnn_step p)
{
    const int64_t H = p.H, G = 3 * H, n = p.B * H;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / H, j = i % H, row = xrow(p, b);
        T rv = sigm(((const T *)p.pre)[row * G + H + j]), rd = rv * (1 - rv);
        T drh = ((const T *)p.drh)[i];
        T dar = drh * ((const T *)p.hx)[row * H + j] * rd;
        ((T *)p.ds)[b * G + H + j] = dar;
        ((T *)p.g)[row * G + H + j] = dar;
        ((T *)p.tmp)[i] += drh * rv;
    }
}

// out[j] (and out2[j], when given) = sum over rows of x[r, j]: one thread
// a column, rows in order
template <typename T> __global__ void k_colsum(const T *x, int64_t rows, int64_t n, T *out, T *out2)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x) {
        T s = 0;
        for (int64_t r = 0; r < rows; r++)
            s += x[r * n + j];
        out[j] = s;
        if (out2)
            out2[j] = s;
    }
}

} // namespace

extern "C" {

cudaError_t lt_cu_rnn_bias(cudaStream_t s, bool f64, void *buf, const void *bias, int64_t rows, int64_t G,
                           int64_t rb_cols)
{
    int64_t n = rows * G;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_bias<double><<<blocks_for(n), THREADS, 0, s>>>((double *)buf, (const double *)bias, rows, G, rb_cols);
    else
        k_bias<float><<<blocks_for(n), THREADS, 0, s>>>((float *)buf, (const float *)bias, rows, G, rb_cols);
    return cudaGetLastError();
}

cudaError_t lt_cu_gru_step(cudaStream_t s, bool f64, bool backward, int part, const lt_cu_rnn_step *p)
{
    int64_t n = p->B * p->H;
    if (n == 0)
        return cudaSuccess;
    unsigned g = blocks_for(n);
    if (f64) {
        if (!backward)
            part ? k_gru_fwd_b<double><<<g, THREADS, 0, s>>>(*p) : k_gru_fwd_a<double><<<g, THREADS, 0, s>>>(*p);
        else
            part ? k_gru_bwd_b<double><<<g, THREADS, 0, s>>>(*p) : k_gru_bwd_a<double><<<g, THREADS, 0, s>>>(*p);
    } else {
        if (!backward)
            part ? k_gru_fwd_b<float><<<g, THREADS, 0, s>>>(*p) : k_gru_fwd_a<float><<<g, THREADS, 0, s>>>(*p);
        else
            part ? k_gru_bwd_b<float><<<g, THREADS, 0, s>>>(*p) : k_gru_bwd_a<float><<<g, THREADS, 0, s>>>(*p);
    }
    return cudaGetLastError();
}

cudaError_t lt_cu_rnn_state(cudaStream_t s, bool f64, void *dst, const void *src, bool to_slice, int layout,
                            int64_t B, int64_t D, int d, int64_t H)
{
    int64_t n = B * H;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_state<double><<<blocks_for(n), THREADS, 0, s>>>((double *)dst, (const double *)src, to_slice, layout, B, D, d,
                                                          H);
    else
        k_state<float><<<blocks_for(n), THREADS, 0, s>>>((float *)dst, (const float *)src, to_slice, layout, B, D, d, H);
    return cudaGetLastError();
}

cudaError_t lt_cu_lstm_fwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p)
{
    int64_t n = p->B * p->H;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_fwd<double><<<blocks_for(n), THREADS, 0, s>>>(*p);
    else
        k_fwd<float><<<blocks_for(n), THREADS, 0, s>>>(*p);
    return cudaGetLastError();
}

cudaError_t lt_cu_lstm_bwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p)
{
    int64_t n = p->B * p->H;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_bwd<double><<<blocks_for(n), THREADS, 0, s>>>(*p);
    else
        k_bwd<float><<<blocks_for(n), THREADS, 0, s>>>(*p);
    return cudaGetLastError();
}

cudaError_t lt_cu_rnn_fwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p)
{
    int64_t n = p->B * p->H;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_rnn_fwd<double><<<blocks_for(n), THREADS, 0, s>>>(*p);
    else
        k_rnn_fwd<float><<<blocks_for(n), THREADS, 0, s>>>(*p);
    return cudaGetLastError();
}

cudaError_t lt_cu_rnn_bwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p)
{
    int64_t n = p->B * p->H;
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_rnn_bwd<double><<<blocks_for(n), THREADS, 0, s>>>(*p);
    else
        k_rnn_bwd<float><<<blocks_for(n), THREADS, 0, s>>>(*p);
    return cudaGetLastError();
}

cudaError_t lt_cu_colsum(cudaStream_t s, bool f64, const void *x, int64_t rows, int64_t n, void *out, void *out2)
{
    if (n == 0)
        return cudaSuccess;
    if (f64)
        k_colsum<double><<<blocks_for(n), THREADS, 0, s>>>((const double *)x, rows, n, (double *)out, (double *)out2);
    else
        k_colsum<float><<<blocks_for(n), THREADS, 0, s>>>((const float *)x, rows, n, (float *)out, (float *)out2);
    return cudaGetLastError();
}

} // extern "C"
