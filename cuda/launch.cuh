// Launch geometry shared by the CUDA kernel files: THREADS threads a block,
// and enough blocks for n elements, capped (the kernels loop over the grid
// stride, so a capped grid still covers every element).
#ifndef LT_CUDA_LAUNCH_CUH
#define LT_CUDA_LAUNCH_CUH

#include <stdint.h>

namespace lt_cu {

const int THREADS = 256;

inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1)
        b = 1;
    return (unsigned)(b > 65535 * 16 ? 65535 * 16 : b);
}

} // namespace lt_cu

#endif
