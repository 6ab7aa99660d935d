// FusedElementwise on the GPU (fused.c checks the node and fills the
// description): one thread an element, the chain's registers in the
// thread, each step the float32 operation its unfused kernel would do.
#include "kernels.h"
#include "launch.cuh"

using lt_cu::THREADS;
using lt_cu::blocks_for;

namespace {

__device__ inline float fe_step(int code, float a, float b)
{
    switch (code) {
    case LT_CU_FE_ADD: return a + b;
    case LT_CU_FE_SUB: return a - b;
    case LT_CU_FE_MUL: return a * b;
    case LT_CU_FE_DIV: return a / b;
    case LT_CU_FE_NEG: return -a;
    case LT_CU_FE_EXP: return expf(a);
    case LT_CU_FE_ERF: return erff(a);
    case LT_CU_FE_TANH: return tanhf(a);
    case LT_CU_FE_SIGMOID: return a >= 0.0f ? 1.0f / (1.0f + expf(-a)) : expf(a) / (1.0f + expf(a));
    case LT_CU_FE_SQRT: return sqrtf(a);
    case LT_CU_FE_SOFTPLUS: return a > 0.0f ? a + log1pf(expf(-a)) : log1pf(expf(a)); // as the Softplus kernel
    default: return 1.0f / a; // LT_CU_FE_RECIPROCAL
    }
}

__global__ void k_fused(lt_cu_fused f)
{
    float reg[LT_CU_FE_MAX_IN + LT_CU_FE_MAX_STEPS];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < f.n; i += (int64_t)gridDim.x * blockDim.x) {
        for (int e = 0; e < f.nin; e++)
            reg[e] = f.kind[e] == LT_CU_FE_FULL ? f.in[e][i] : f.kind[e] == LT_CU_FE_SCALAR ? f.in[e][0]
                                                                                           : f.in[e][i % f.last];
        for (int s = 0; s < f.nsteps; s++) {
            float a = reg[f.prog[s][1]], b = f.prog[s][2] >= 0 ? reg[f.prog[s][2]] : 0.0f;
            float y = fe_step(f.prog[s][0], a, b);
            reg[f.nin + s] = y;
            if (f.out_of[s])
                f.out_of[s][i] = y;
        }
    }
}

} // namespace

extern "C" cudaError_t lt_cu_fused_run(cudaStream_t s, const lt_cu_fused *f)
{
    if (f->n == 0)
        return cudaSuccess;
    k_fused<<<blocks_for(f->n), THREADS, 0, s>>>(*f);
    return cudaGetLastError();
}
